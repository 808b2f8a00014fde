#include "agent/server_keeper.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>  // before Boost.Asio under C++20 (Debian 12)

#include "base/spawn.h"
#include "base/unique_fd.h"

namespace orch::agent {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

sockaddr_in Loopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

// Waits for `events` on `fd` until `deadline`; false when it did not come.
bool WaitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd one{fd, events, 0};
    int ready = ::poll(&one, 1, static_cast<int>(left.count()));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return false;
  }
}

// A port on 127.0.0.1 that nothing listens on now (the kernel's pick).
Result<int> FreeLoopbackPort() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return IoError(std::string("socket: ") + std::strerror(errno));
  sockaddr_in address = Loopback(0);
  socklen_t size = sizeof address;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    return IoError(std::string("picking a free port on 127.0.0.1: ") + std::strerror(errno));
  }
  return static_cast<int>(ntohs(address.sin_port));
}

// The last `count` non-empty lines of the file at `path`, each on its own
// indented line.
std::string LogTail(const std::string& path, std::size_t count) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  in.seekg(std::max<std::streamoff>(0, size - 4096));
  std::ostringstream text;
  text << in.rdbuf();
  std::vector<std::string> lines;
  std::istringstream split(text.str());
  for (std::string line; std::getline(split, line);) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
  }
  std::string out;
  for (std::size_t i = lines.size() > count ? lines.size() - count : 0; i < lines.size(); ++i) {
    out += "\n  " + lines[i];
  }
  return out;
}

// "exit status 3" / "killed by signal 9" for a waitpid status.
std::string DescribeWait(int status) {
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "exit status " + std::to_string(WEXITSTATUS(status));
}

// SIGKILL to the group of `pid` (its leader), then reaps it.
void KillAndReap(int pid) {
  ::kill(-pid, SIGKILL);
  (void)WaitForExit(pid);
}

}  // namespace

std::optional<int> HttpGetStatus(int port, const std::string& path,
                                 std::chrono::milliseconds timeout) {
  Clock::time_point deadline = Clock::now() + timeout;
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return std::nullopt;
  sockaddr_in address = Loopback(port);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    if (errno != EINPROGRESS || !WaitFor(fd.get(), POLLOUT, deadline)) return std::nullopt;
    int error = 0;
    socklen_t size = sizeof error;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &size) != 0 || error != 0) {
      return std::nullopt;
    }
  }
  std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                        "\r\nConnection: close\r\n\r\n";
  if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return std::nullopt;
  }
  std::string answer;
  while (answer.find("\r\n") == std::string::npos && answer.size() < 1024) {
    if (!WaitFor(fd.get(), POLLIN, deadline)) return std::nullopt;
    char buffer[512];
    ssize_t got = ::recv(fd.get(), buffer, sizeof buffer, 0);
    if (got <= 0) break;
    answer.append(buffer, static_cast<std::size_t>(got));
  }
  // "HTTP/1.1 200 OK"
  if (answer.rfind("HTTP/", 0) != 0) return std::nullopt;
  std::size_t space = answer.find(' ');
  if (space == std::string::npos || answer.size() < space + 4) return std::nullopt;
  int code = std::atoi(answer.substr(space + 1, 3).c_str());
  return code > 0 ? std::optional<int>(code) : std::nullopt;
}

struct ServerKeeper::Impl {
  // A launch in progress: stopping the server it replaces, then waiting for health.
  struct Start {
    explicit Start(asio::io_context& io) : timer(io) {}
    std::string run_id;
    std::size_t entry = 0;
    ServerKey key;
    std::optional<int> stop_pid;
    Clock::time_point stop_deadline;
    int pid = -1;
    int port = 0;
    std::string log_path;
    Clock::time_point deadline;
    std::optional<int> last_answer;
    std::function<void(ServerOutcome)> done;
    asio::steady_timer timer;
  };

  Impl(asio::io_context& io, std::vector<ServerConfig> servers, std::string log_dir,
       spdlog::logger& log)
      : io(io), pool(std::move(servers)), log_dir(std::move(log_dir)), log(log) {}

  asio::io_context& io;
  ServerPool pool;
  std::string log_dir;
  spdlog::logger& log;
  std::map<int, std::chrono::milliseconds> children;     // not yet reaped -> stop timeout
  std::map<std::size_t, std::unique_ptr<Start>> starts;  // by entry
  int launches = 0;

  // Reaps `pid` when it has ended; true while it runs.
  bool Alive(int pid) {
    if (!children.contains(pid)) return false;
    int status = 0;
    pid_t reaped = ::waitpid(pid, &status, WNOHANG);
    if (reaped == 0) return true;
    children.erase(pid);
    ::kill(-pid, SIGKILL);  // what it left in its group
    if (reaped == pid) {
      log.warn(fmt::runtime("server pid {} ended between jobs ({}); launching it again"), pid,
               DescribeWait(status));
    }
    return false;
  }

  void Acquire(const std::string& run_id, const std::string& engine, const std::string& model,
               const AxisValues& coordinate, std::function<void(ServerOutcome)> done) {
    ServerDecision decision =
        pool.Choose(run_id, engine, model, coordinate, [this](int pid) { return Alive(pid); });
    switch (decision.kind) {
      case ServerDecision::Kind::kNone:
        return done({});
      case ServerDecision::Kind::kAttached:
      case ServerDecision::Kind::kReused:
        return done({decision.server, "", ""});
      case ServerDecision::Kind::kRefused:
        return done({std::nullopt, decision.code, decision.message});
      case ServerDecision::Kind::kLaunch:
        break;
    }
    auto start = std::make_unique<Start>(io);
    start->run_id = run_id;
    start->entry = decision.entry;
    start->key = decision.key;
    start->done = std::move(done);
    if (decision.stop_pid) {
      log.info(fmt::runtime("stopping the {} server (pid {}) for another coordinate"), engine,
               *decision.stop_pid);
      start->stop_pid = decision.stop_pid;
      start->stop_deadline = Clock::now() + pool.entry(decision.entry).stop_timeout;
      ::kill(-*decision.stop_pid, SIGTERM);
    }
    Start& started = *start;
    starts[decision.entry] = std::move(start);
    Poll(started);
  }

  void Later(Start& start, std::chrono::milliseconds after) {
    start.timer.expires_after(after);
    std::size_t entry = start.entry;
    start.timer.async_wait([this, entry](const boost::system::error_code& error) {
      // Aborted: the Start, and maybe the keeper, is gone.
      if (error) return;
      auto it = starts.find(entry);
      if (it != starts.end()) Poll(*it->second);
    });
  }

  void Poll(Start& start) {
    if (start.stop_pid && !StopDone(start)) return Later(start, std::chrono::milliseconds(20));
    if (start.pid < 0) {
      Status spawned = Spawn(start);
      if (!spawned.ok()) return Fail(start, spawned.message());
    }
    const ServerConfig& server = pool.entry(start.entry);
    int status = 0;
    if (::waitpid(start.pid, &status, WNOHANG) == start.pid) {
      children.erase(start.pid);
      ::kill(-start.pid, SIGKILL);
      return Fail(start, "the " + server.engine + " server exited (" + DescribeWait(status) +
                             ") before it answered GET " + server.health);
    }
    start.last_answer = HttpGetStatus(start.port, server.health, std::chrono::milliseconds(500));
    if (start.last_answer == 200) return Ready(start);
    if (Clock::now() >= start.deadline) {
      children.erase(start.pid);
      KillAndReap(start.pid);
      std::string answer =
          start.last_answer ? "HTTP " + std::to_string(*start.last_answer) : "no answer";
      return Fail(start, "the " + server.engine + " server did not answer GET " + server.health +
                             " with 200 within start_timeout_ms = " +
                             std::to_string(server.start_timeout.count()) + " (last: " + answer +
                             "); it was killed");
    }
    Later(start, kHealthPoll);
  }

  // Whether the server being replaced has ended (SIGKILL once its time is up).
  bool StopDone(Start& start) {
    int pid = *start.stop_pid;
    bool ended = ::waitpid(pid, nullptr, WNOHANG) != 0;
    if (!ended && Clock::now() < start.stop_deadline) return false;
    if (!ended) {
      log.warn(fmt::runtime("server pid {} did not stop on SIGTERM in time; killing it"), pid);
    }
    KillAndReap(pid);  // what is left of its group; reaps the leader when it still runs
    children.erase(pid);
    start.stop_pid.reset();
    return true;
  }

  Status Spawn(Start& start) {
    const ServerConfig& server = pool.entry(start.entry);
    ORCH_ASSIGN_OR_RETURN(start.port, FreeLoopbackPort());
    std::error_code error;
    std::filesystem::create_directories(log_dir, error);
    std::string name = server.engine;
    for (char& c : name) c = c == '/' ? '_' : c;
    start.log_path = log_dir + "/" + name + "-" + std::to_string(::getpid()) + "-" +
                     std::to_string(++launches) + ".log";
    ServerLaunch launch = ExpandLaunch(server, start.key, start.port);
    {
      std::ofstream header(start.log_path, std::ios::binary | std::ios::trunc);
      header << "# orch agent: launching";
      for (const std::string& arg : launch.argv) header << " " << arg;
      header << "\n";
    }
    SpawnOptions options{.argv = launch.argv,
                         .search_path = launch.argv[0].find('/') == std::string::npos,
                         .environment = launch.env,
                         .stdin_stream = Stdio::Null(),
                         .stdout_stream = Stdio::File(start.log_path),
                         .stderr_stream = Stdio::Stdout(),
                         .new_process_group = true,
                         .die_with_parent = true,
                         .reset_signals = true};
    Result<SpawnedChild> child = SpawnChild(options);
    if (!child.ok()) {
      return child.status().WithContext("cannot start the " + server.engine + " server");
    }
    start.pid = child->pid;
    start.deadline = Clock::now() + server.start_timeout;
    children[start.pid] = server.stop_timeout;
    pool.Spawned(start.entry, start.pid, start.port, start.log_path);
    log.info(fmt::runtime("run {}: launched the {} server, pid {}, port {}, log {}"), start.run_id,
             server.engine, start.pid, start.port, start.log_path);
    return Status::Ok();
  }

  void Ready(Start& start) {
    JobServer server = pool.Ready(start.entry, start.run_id);
    log.info(fmt::runtime("run {}: the {} server at {} is ready"), start.run_id,
             pool.entry(start.entry).engine, server.url);
    Finish(start, {server, "", ""});
  }

  void Fail(Start& start, const std::string& why) {
    std::string message = why;
    if (!start.log_path.empty())
      message += "; server log " + start.log_path + LogTail(start.log_path, 5);
    pool.Failed(start.entry);
    Finish(start, {std::nullopt, "engine_error", message});
  }

  // Ends `start` and calls its `done` (start is gone by then).
  void Finish(Start& start, ServerOutcome outcome) {
    std::function<void(ServerOutcome)> done = std::move(start.done);
    starts.erase(start.entry);
    done(std::move(outcome));
  }

  void AbortStarts() {
    while (!starts.empty()) {
      Start& start = *starts.begin()->second;
      for (std::optional<int> pid : {start.stop_pid, std::optional<int>(start.pid)}) {
        if (!pid || *pid <= 0) continue;
        children.erase(*pid);
        KillAndReap(*pid);
      }
      pool.Failed(start.entry);
      Finish(start, {std::nullopt, "agent_draining", "the agent is stopping"});
    }
  }

  // SIGTERM to every server's group, then up to its stop_timeout for each to end.
  void StopAll() {
    for (const auto& [pid, timeout] : children) ::kill(-pid, SIGTERM);
    for (const auto& [pid, timeout] : children) {
      Result<std::optional<ChildExit>> ended = WaitForExit(pid, timeout);
      if (ended.ok() && *ended) {
        ::kill(-pid, SIGKILL);  // what it left in its group
        continue;
      }
      log.warn(fmt::runtime("server pid {} did not stop on SIGTERM in time; killing it"), pid);
      KillAndReap(pid);
    }
    children.clear();
  }
};

ServerKeeper::ServerKeeper(asio::io_context& io, std::vector<ServerConfig> servers,
                           std::string log_dir, spdlog::logger& log)
    : impl_(std::make_unique<Impl>(io, std::move(servers), std::move(log_dir), log)) {}

ServerKeeper::~ServerKeeper() {
  impl_->starts.clear();  // their callbacks are not called
  impl_->StopAll();
}

void ServerKeeper::Acquire(const std::string& run_id, const std::string& engine,
                           const std::string& model, const AxisValues& coordinate,
                           std::function<void(ServerOutcome)> done) {
  impl_->Acquire(run_id, engine, model, coordinate, std::move(done));
}

void ServerKeeper::Release(const std::string& run_id) { impl_->pool.Release(run_id); }

void ServerKeeper::AbortStarts() { impl_->AbortStarts(); }

}  // namespace orch::agent
