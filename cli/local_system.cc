#include "cli/local_system.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/errno_status.h"
#include "base/strings.h"
#include "base/unique_fd.h"
#include "cli/client_file.h"
#include "cli/files.h"
#include "protocol/identity_key.h"

namespace orch::cli {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string Quoted(const std::string& text) { return nlohmann::json(text).dump(); }

void WriteCoordinatorConfig(const fs::path& path, const std::string& data_dir,
                            const std::string& keys_dir, const std::string& endpoint) {
  std::ofstream out(path);
  out << "[coordinator]\nid = \"local\"\nlisten = " << Quoted(endpoint) << "\n"
      << "data_dir = " << Quoted(data_dir) << "\n";
  if (!keys_dir.empty()) {
    out << "key = " << Quoted(keys_dir + "/coordinator.key_secret") << "\n"
        << "allowed_keys = " << Quoted(keys_dir + "/allowed") << "\n";
  }
}

// Writes a fresh key NAME with ROLE into `dir`; with `allowed`, its public half too.
Status NewKey(const std::string& name, const std::string& role, const std::string& dir,
              const std::string& allowed) {
  ORCH_ASSIGN_OR_RETURN(protocol::SecretIdentity key, protocol::GenerateIdentity(name, role));
  ORCH_ASSIGN_OR_RETURN(auto files, protocol::WriteIdentity(key, dir, /*overwrite=*/true));
  if (allowed.empty()) return Status::Ok();
  std::error_code error;
  fs::copy_file(files.first, fs::path(allowed) / fs::path(files.first).filename(),
                fs::copy_options::overwrite_existing, error);
  if (error) return IoError("copy " + files.first + ": " + error.message());
  return Status::Ok();
}

void WriteAgentConfig(const fs::path& path, const std::string& id, const std::string& endpoint,
                      const LocalAgentSpec& spec, const std::string& keys_dir) {
  std::ofstream out(path);
  if (!keys_dir.empty()) {
    out << "# CurveZMQ with orch run's throwaway keys\n";
  }
  out << "[agent]\nid = \"" << id << "\"\ncoordinator = " << Quoted(endpoint)
      << "\nslots = 1\nhardware = " << Quoted(spec.hardware) << "\ngpus = 0\n"
      << "spool_dir = " << Quoted((path.parent_path() / ("spool-" + id)).string()) << "\n";
  if (spec.driver_threads > 0) out << "driver_threads = " << spec.driver_threads << "\n";
  if (!keys_dir.empty()) {
    out << "key = " << Quoted(keys_dir + "/" + id + ".key_secret") << "\n"
        << "coordinator_key = " << Quoted(keys_dir + "/coordinator.key") << "\n";
  }
  out << "model_dirs = [";
  for (std::size_t i = 0; i < spec.model_dirs.size(); ++i)
    out << (i ? ", " : "") << Quoted(spec.model_dirs[i]);
  out << "]\n";
  int n = 0;
  for (const auto& [engine, exe] : spec.drivers) {
    out << "\n[[drivers]]\nname = \"driver" << n++ << "\"\nexecutable = " << Quoted(exe)
        << "\nengine = " << Quoted(engine) << "\n";
  }
  for (const LocalServer& server : spec.servers) {
    out << "\n[[servers]]\nengine = " << Quoted(server.engine) << "\n";
    if (!server.url.empty()) {
      out << "url = " << Quoted(server.url) << "\n";
      continue;
    }
    out << "launch = [" << Quoted(server.program)
        << ", \"-m\", \"{model}\", \"--host\", \"{host}\", \"--port\", \"{port}\"]\n"
        << "preset = \"llama-server\"\n";
  }
}

// Whether the coordinator's log says its port was taken.
bool PortTaken(const std::string& log_path) {
  Result<std::string> log = ReadFile(log_path);
  return log.ok() && log->find("Address already in use") != std::string::npos;
}

// What the coordinator's log says when it could not open its store.
std::string WhyNotStarted(const std::string& log_path, const std::string& data_dir) {
  Result<std::string> log = ReadFile(log_path);
  if (log.ok() && log->find("lock") != std::string::npos) {
    return "the store in " + data_dir +
           " is locked: another orch run or orch coordinator uses this data dir; "
           "stop it, or pass another --data-dir (log: " +
           log_path + ")";
  }
  return "the coordinator did not start; see its log " + log_path;
}

}  // namespace

Status LocalSystem::MakeKeys(int agents) {
  std::string dir = (fs::path(run_dir_) / "keys").string();
  std::string allowed = dir + "/allowed";
  std::error_code error;
  fs::remove_all(allowed, error);  // only this run's keys are admitted
  fs::create_directories(allowed, error);
  if (error) return IoError("create " + allowed + ": " + error.message());
  ORCH_RETURN_IF_ERROR(NewKey("coordinator", "coordinator", dir, ""));
  for (int i = 1; i <= agents; ++i) {
    ORCH_RETURN_IF_ERROR(NewKey("local-" + std::to_string(i), "agent", dir, allowed));
  }
  ORCH_RETURN_IF_ERROR(NewKey("orch-run", "admin", dir, allowed));
  keys_dir_ = dir;
  admin_key_ = dir + "/orch-run.key_secret";
  coordinator_public_ = dir + "/coordinator.key";
  return Status::Ok();
}

Result<int> FreeLocalPort() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoError("socket", errno);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    return ErrnoError("bind 127.0.0.1:0", errno);
  }
  socklen_t length = sizeof address;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return ErrnoError("getsockname of 127.0.0.1:0", errno);
  }
  return static_cast<int>(ntohs(address.sin_port));
}

Result<std::string> LocalSystem::Start(const std::string& orch, int agents,
                                       const LocalAgentSpec& spec) {
  for (int attempt = 1;; ++attempt) {
    ORCH_ASSIGN_OR_RETURN(int port, choose_port_ ? choose_port_(attempt) : FreeLocalPort());
    std::string endpoint = "tcp://127.0.0.1:" + std::to_string(port);
    ORCH_RETURN_IF_ERROR(LaunchCoordinator(orch, endpoint));
    ORCH_RETURN_IF_ERROR(StartAgents(orch, endpoint, agents, spec));
    Result<std::string> up = WaitForCoordinator();
    if (up.ok()) {
      ORCH_RETURN_IF_ERROR(
          WriteClientFile(data_dir_, {endpoint_, admin_key_, coordinator_public_, false}));
      return up;
    }
    std::string log = (fs::path(run_dir_) / "coordinator.log").string();
    if (!PortTaken(log)) return up.status();
    if (attempt == 3) {
      return Status(StatusCode::kUnavailable,
                    "the coordinator could not listen: the 3 ports of 127.0.0.1 chosen for it "
                    "were taken before it bound them (last " +
                        endpoint + "); see its log " + log);
    }
    Stop();
  }
}

Status LocalSystem::LaunchCoordinator(const std::string& orch, const std::string& endpoint) {
  fs::create_directories(run_dir_);
  fs::remove(fs::path(data_dir_) / "coordinator.endpoint");
  fs::path config = fs::path(run_dir_) / "coordinator.toml";
  WriteCoordinatorConfig(config, data_dir_, keys_dir_, endpoint);
  std::string log = (fs::path(run_dir_) / "coordinator.log").string();
  ORCH_ASSIGN_OR_RETURN(ChildProcess child,
                        ChildProcess::Start({orch, "coordinator", "--config", config}, log));
  coordinator_ = std::make_unique<ChildProcess>(std::move(child));
  return Status::Ok();
}

Result<std::string> LocalSystem::WaitForCoordinator() {
  fs::path endpoint_file = fs::path(data_dir_) / "coordinator.endpoint";
  std::string log = (fs::path(run_dir_) / "coordinator.log").string();
  for (int i = 0; i < 3000; ++i) {
    Result<std::string> text = ReadFile(endpoint_file.string());
    if (text.ok() && !TrimEnd(*text).empty()) {
      endpoint_ = TrimEnd(*text);
      return endpoint_;
    }
    if (coordinator_->WaitFor(10ms)) break;
  }
  return Status(StatusCode::kUnavailable, WhyNotStarted(log, data_dir_));
}

Status LocalSystem::StartAgents(const std::string& orch, const std::string& endpoint, int count,
                                const LocalAgentSpec& spec) {
  for (int i = 1; i <= count; ++i) {
    std::string id = "local-" + std::to_string(i);
    fs::path config = fs::path(run_dir_) / ("agent-" + id + ".toml");
    WriteAgentConfig(config, id, endpoint, spec, keys_dir_);
    std::string log = (fs::path(run_dir_) / (id + ".log")).string();
    ORCH_ASSIGN_OR_RETURN(ChildProcess agent,
                          ChildProcess::Start({orch, "agent", "--config", config}, log));
    agents_.push_back(std::move(agent));
    agent_logs_.push_back(log);
  }
  return Status::Ok();
}

std::string LocalSystem::ExitedDaemon() {
  std::string log = (fs::path(run_dir_) / "coordinator.log").string();
  if (coordinator_) {
    if (std::optional<int> code = coordinator_->WaitFor(0ms)) {
      return "the coordinator exited (status " + std::to_string(*code) + "); see " + log;
    }
  }
  for (std::size_t i = 0; i < agents_.size(); ++i) {
    if (std::optional<int> code = agents_[i].WaitFor(0ms)) {
      return "agent local-" + std::to_string(i + 1) + " exited (status " + std::to_string(*code) +
             "); see " + agent_logs_[i];
    }
  }
  return "";
}

void LocalSystem::Stop() {
  // Agents first, all at once: each cancels its drivers and flushes its spool
  // to the coordinator, which must still be up to acknowledge it.
  for (ChildProcess& agent : agents_) agent.Signal(SIGTERM);
  // While they stop: watchers in other terminals stop asking and read the store
  // instead (marked before the coordinator stops).
  if (!endpoint_.empty()) {
    Status marked = WriteClientFile(data_dir_, {endpoint_, admin_key_, coordinator_public_, true});
    if (!marked.ok()) std::cerr << "orch run: " << marked.message() << "\n";
    endpoint_.clear();
  }
  for (ChildProcess& agent : agents_) agent.AwaitStop(10s);
  agents_.clear();
  agent_logs_.clear();
  if (coordinator_) coordinator_->Stop(10s);
  coordinator_.reset();
}

}  // namespace orch::cli
