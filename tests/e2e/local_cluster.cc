#include "tests/e2e/local_cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

namespace orch::testing {
namespace fs = std::filesystem;

namespace {

std::string SlurpClusterFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string TailBytes(const std::string& text, std::size_t bytes) {
  return text.size() <= bytes ? text : text.substr(text.size() - bytes);
}

}  // namespace

LocalCluster::LocalCluster(const std::string& name) {
  dir_ = fs::temp_directory_path() / ("orch-e2e-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir_);
  fs::create_directories(dir_);
}

LocalCluster::~LocalCluster() {
  for (auto& [id, agent] : agents_) agent->Stop(std::chrono::seconds(5));
  if (coordinator_) coordinator_->Stop(std::chrono::seconds(5));
  if (!::testing::Test::HasFailure()) fs::remove_all(dir_);
}

void LocalCluster::StartCoordinator(const std::string& listen, const std::string& extra,
                                    const std::string& timings) {
  std::ofstream(dir_ / "coordinator.toml") << "[coordinator]\nid = \"coord-e2e\"\nlisten = \""
                                           << listen << "\"\ndata_dir = \"orch-data\"\n"
                                           << timings << "retry_budget = 5\n"
                                           << extra;
  fs::remove(data_dir() / "coordinator.endpoint");
  Result<cli::ChildProcess> child = cli::ChildProcess::Start(
      {OrchBinary(), "coordinator", "--config", (dir_ / "coordinator.toml").string()},
      (dir_ / "coordinator.log").string());
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  coordinator_ = std::make_unique<cli::ChildProcess>(std::move(child).value());
  fs::path endpoint_file = data_dir() / "coordinator.endpoint";
  bool up = WaitUntil(
      [&] { return fs::exists(endpoint_file) && !SlurpClusterFile(endpoint_file).empty(); },
      std::chrono::seconds(20));
  ASSERT_TRUE(up) << "coordinator did not write its endpoint\n" << Logs();
  endpoint_ = SlurpClusterFile(endpoint_file);
  while (!endpoint_.empty() && std::isspace(static_cast<unsigned char>(endpoint_.back()))) {
    endpoint_.pop_back();
  }
}

void LocalCluster::StartAgent(const std::string& id) {
  StartAgent(id, {{"test", "test-engine@1", TestDriverBinary()}});
}

void LocalCluster::StartAgent(const std::string& id, const std::vector<Driver>& drivers,
                              const std::string& extra) {
  StartAgent(id, drivers, extra, {}, "");
}

void LocalCluster::StartAgent(const std::string& id, const std::vector<Driver>& drivers,
                              const std::string& extra, const std::vector<std::string>& model_dirs,
                              const std::string& tables) {
  fs::path config = dir_ / ("agent-" + id + ".toml");
  std::ofstream out(config);
  out << "[agent]\nid = \"" << id << "\"\ncoordinator = \"" << endpoint_
      << "\"\nslots = 1\nhardware = \"cpu\"\ngpus = 0\nspool_dir = \"spool-" << id
      << "\"\nmodel_dirs = [";
  for (std::size_t i = 0; i < model_dirs.size(); ++i) {
    out << (i ? ", " : "") << nlohmann::json(model_dirs[i]).dump();
  }
  out << "]\nmodel_cache = \"model-cache\"\nrun_timeout_ms = 60000\n" << extra;
  for (const Driver& d : drivers) {
    out << "\n[[drivers]]\nname = \"" << d.name << "\"\nexecutable = \"" << d.executable
        << "\"\nengine = \"" << d.engine << "\"\n";
  }
  out << tables;
  out.close();
  Result<cli::ChildProcess> child =
      cli::ChildProcess::Start({OrchBinary(), "agent", "--config", config.string()},
                               (dir_ / ("agent-" + id + ".log")).string());
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  agents_[id] = std::make_unique<cli::ChildProcess>(std::move(child).value());
}

ProcessResult LocalCluster::Client(std::vector<std::string> args, std::chrono::seconds limit) {
  args.insert(args.begin(), OrchBinary());
  args.push_back("--coordinator");
  args.push_back(endpoint_);
  return RunProcess(args, limit, dir_.string());
}

void LocalCluster::Keygen(const std::string& name, const std::string& role, bool allow) {
  std::filesystem::path keys = dir_ / "keys";
  ProcessResult made =
      RunProcess({OrchBinary(), "keygen", name, "--role", role, "--dir", keys.string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  std::filesystem::create_directories(keys / "allowed");
  if (allow) {
    std::filesystem::copy_file(keys / (name + ".key"), keys / "allowed" / (name + ".key"));
  }
}

ProcessResult LocalCluster::As(const std::string& user, std::vector<std::string> args) {
  std::filesystem::path keys = dir_ / "keys";
  args.insert(args.end(), {"--key", (keys / (user + ".key_secret")).string(), "--coordinator-key",
                           (keys / "coordinator.key").string(), "--timeout", "3"});
  return Client(args);
}

std::optional<nlohmann::json> LocalCluster::Status() {
  ProcessResult r = Client({"status", "--json"});
  if (r.exit_code != 0) return std::nullopt;
  nlohmann::json status = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  if (status.is_discarded()) return std::nullopt;
  return status;
}

std::optional<nlohmann::json> LocalCluster::Progress(const std::string& experiment) {
  std::optional<nlohmann::json> status = Status();
  if (!status || !status->contains("experiments")) return std::nullopt;
  for (const nlohmann::json& e : (*status)["experiments"]) {
    if (e.value("experiment", "") == experiment) return e;
  }
  return std::nullopt;
}

bool LocalCluster::WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return done();
}

std::string LocalCluster::Logs() const {
  std::string out;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    if (entry.path().extension() != ".log") continue;
    out += "---- " + entry.path().filename().string() + "\n" +
           TailBytes(SlurpClusterFile(entry.path()), 3000);
  }
  return out;
}

int LocalCluster::FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string LlamaCppDriverBinary(const std::string& release) {
  return std::string(ORCH_BINARY_DIR) + "/drivers/llamacpp/orch-driver-llamacpp-" + release;
}

std::vector<LocalCluster::Driver> LlamaCppDrivers() {
  return {{"llamacpp-v0.4.0", "llama.cpp@v0.4.0", LlamaCppDriverBinary("v0.4.0")},
          {"llamacpp-b8390", "llama.cpp@b8390", LlamaCppDriverBinary("b8390")}};
}

std::string TestEngineSpec(const std::string& name, int jobs, int positions, int delay_ms) {
  std::string variants;
  for (int v = 1; v <= jobs - 2; ++v) variants += (v > 1 ? ", " : "") + std::to_string(v);
  // The test engine makes `positions` positions of any text, but the planner refuses a
  // text too short for them with any real tokenizer (one token per byte at most).
  std::string text = "hello";
  while (text.size() + 2 < static_cast<std::size_t>(positions)) text += " hello";
  std::ostringstream spec;
  spec << "[experiment]\nname = \"" << name << "\"\n\n"
       << "[model]\nsynth = \"llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128\"\n\n"
       << "[[workloads]]\nname = \"w\"\nkind = \"teacher_forced\"\ntext = \"" << text << "\"\n"
       << "positions = " << positions << "\n\n"
       << "[baseline]\nengine = \"test-engine@1\"\nquant = \"f32\"\nkv = \"f16\"\n"
       << "attention = \"off\"\ntp = 1\nhardware = \"cpu\"\nknob.positions = " << positions
       << "\nknob.delay_ms = " << delay_ms << "\nknob.variant = 0\n\n"
       << "[alternatives]\nknob.variant = [" << variants << "]\n\n"
       << "[repeats]\nbaseline = 2\ncells = 1\n";
  return spec.str();
}

}  // namespace orch::testing
