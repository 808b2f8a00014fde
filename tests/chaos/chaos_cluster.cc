#include "tests/chaos/chaos_cluster.h"

#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "base/strings.h"
#include "tests/e2e/local_cluster.h"

namespace orch::testing {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

std::string SlurpChaosFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string ChaosTailBytes(const std::string& text, std::size_t bytes) {
  return text.size() <= bytes ? text : text.substr(text.size() - bytes);
}

// The parent pid in /proc/PID/stat: the 2nd field after the ")" closing the command.
std::optional<pid_t> ParentOf(const fs::path& stat_file) {
  std::string stat = SlurpChaosFile(stat_file);
  std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(stat.substr(close + 1));
  std::string state;
  long ppid = 0;
  if (!(rest >> state >> ppid)) return std::nullopt;
  return static_cast<pid_t>(ppid);
}

}  // namespace

std::vector<pid_t> ChildPids(pid_t parent) {
  std::vector<pid_t> children;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    if (ParentOf(entry.path() / "stat") == parent) children.push_back(std::stoi(name));
  }
  return children;
}

ChaosCluster::ChaosCluster(const std::string& name, const ChaosClusterOptions& options)
    : name_(name), options_(options) {
  dir_ = fs::temp_directory_path() / ("orch-chaos-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir_);
  fs::create_directories(data_dir());
  if (options_.data_dir_tmpfs_bytes > 0) {
    std::string why;
    mount_ = TmpfsMount::Mount(data_dir(), options_.data_dir_tmpfs_bytes, &why);
    EXPECT_NE(mount_, nullptr) << why;
  }
  port_ = LocalCluster::FreePort();
  endpoint_ = "tcp://" + options_.host + ":" + std::to_string(port_);
}

ChaosCluster::~ChaosCluster() {
  StopAll();
  std::error_code ec;
  if (mount_ && (::testing::Test::HasFailure() || std::getenv("ORCH_CHAOS_KEEP") != nullptr)) {
    fs::copy(data_dir(), dir_ / "orch-data.kept", fs::copy_options::recursive, ec);
  }
  mount_.reset();
  const char* keep = std::getenv("ORCH_CHAOS_KEEP");
  bool kept = ::testing::Test::HasFailure() || (keep != nullptr && std::string(keep) == "1");
  if (!kept) fs::remove_all(dir_, ec);
}

std::string ChaosCluster::CoordinatorConfig() const {
  std::ostringstream out;
  out << "[coordinator]\nid = \"coord-chaos\"\nlisten = \"" << endpoint_
      << "\"\ndata_dir = \"orch-data\"\nheartbeat_interval_ms = " << options_.heartbeat.count()
      << "\nagent_timeout_ms = " << options_.agent_timeout.count()
      << "\nlease_ms = " << options_.lease.count() << "\nretry_budget = " << options_.retry_budget
      << "\n";
  if (options_.insecure) out << "insecure = true\n";
  return out.str();
}

void ChaosCluster::StartCoordinator() {
  std::ofstream(dir_ / "coordinator.toml") << CoordinatorConfig();
  fs::path endpoint_file = data_dir() / "coordinator.endpoint";
  fs::remove(endpoint_file);
  Result<cli::ChildProcess> child = cli::ChildProcess::Start(
      {OrchBinary(), "coordinator", "--config", (dir_ / "coordinator.toml").string()},
      (dir_ / "coordinator.log").string());
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  coordinator_ = std::make_unique<cli::ChildProcess>(std::move(child).value());
  bool up = LocalCluster::WaitUntil(
      [&] { return !TrimEnd(SlurpChaosFile(endpoint_file)).empty() || !coordinator_->running(); },
      20s);
  ASSERT_TRUE(up && coordinator_->running()) << "coordinator did not bind\n" << Logs();
  ASSERT_EQ(TrimEnd(SlurpChaosFile(endpoint_file)), endpoint_);
}

void ChaosCluster::KillCoordinator() {
  coordinator_->Signal(SIGKILL);
  ASSERT_TRUE(coordinator_->WaitFor(10s).has_value());
}

std::string ChaosCluster::AgentConfig(const std::string& id) const {
  std::ostringstream out;
  out << "[agent]\nid = \"" << id << "\"\ncoordinator = \"" << endpoint_
      << "\"\nslots = " << options_.agent_slots
      << "\nhardware = \"cpu\"\ngpus = 0\nspool_dir = \"spool-" << id
      << "\"\nmodel_dirs = []\nmodel_cache = \"model-cache\"\nrun_timeout_ms = 60000\n"
      << "\n[[drivers]]\nname = \"test\"\nexecutable = \"" << TestDriverBinary()
      << "\"\nengine = \"test-engine@1\"\n";
  return out.str();
}

void ChaosCluster::StartAgent(const std::string& id, const std::vector<std::string>& wrapper) {
  fs::path config = dir_ / ("agent-" + id + ".toml");
  std::ofstream(config) << AgentConfig(id);
  std::vector<std::string> argv = wrapper;
  for (std::string arg :
       {OrchBinary(), std::string("agent"), std::string("--config"), config.string()}) {
    argv.push_back(std::move(arg));
  }
  if (auto old = agents_.find(id); old != agents_.end()) old->second->Stop(0ms);
  Result<cli::ChildProcess> child =
      cli::ChildProcess::Start(argv, (dir_ / ("agent-" + id + ".log")).string());
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  agents_[id] = std::make_unique<cli::ChildProcess>(std::move(child).value());
}

void ChaosCluster::KillAgent(const std::string& id) {
  cli::ChildProcess& agent = *agents_.at(id);
  agent.Signal(SIGKILL);
  ASSERT_TRUE(agent.WaitFor(10s).has_value());
}

void ChaosCluster::SignalAgent(const std::string& id, int signal) {
  cli::ChildProcess& agent = *agents_.at(id);
  if (agent.running()) ::kill(agent.pid(), signal);
}

pid_t ChaosCluster::AgentPid(const std::string& id) const { return agents_.at(id)->pid(); }

std::vector<std::string> ChaosCluster::AgentIds() const {
  std::vector<std::string> ids;
  for (const auto& [id, agent] : agents_) ids.push_back(id);
  return ids;
}

std::vector<pid_t> ChaosCluster::DriverPids(const std::string& id) const {
  const cli::ChildProcess& agent = *agents_.at(id);
  return agent.running() ? ChildPids(agent.pid()) : std::vector<pid_t>{};
}

void ChaosCluster::Submit(const std::string& experiment, int jobs, int positions, int delay_ms) {
  SubmitSpec(experiment, TestEngineSpec(experiment, jobs, positions, delay_ms));
}

void ChaosCluster::SubmitSpec(const std::string& experiment, const std::string& text) {
  fs::path spec = dir_ / (experiment + ".toml");
  std::ofstream(spec) << text;
  ProcessResult r = RunProcess({OrchBinary(), "submit", spec.string(), "--coordinator", endpoint_},
                               30s, dir_.string());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << Logs();
}

std::optional<nlohmann::json> ChaosCluster::Status() {
  ProcessResult r = RunProcess(
      {OrchBinary(), "status", "--json", "--jobs", "--timeout", "2", "--coordinator", endpoint_},
      10s, dir_.string());
  if (r.exit_code != 0) return std::nullopt;
  nlohmann::json status = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  if (status.is_discarded()) return std::nullopt;
  return status;
}

void ChaosCluster::StopAll() {
  for (auto& [id, agent] : agents_) {
    if (agent->running()) ::kill(agent->pid(), SIGCONT);
  }
  for (auto& [id, agent] : agents_) agent->Stop(5s);
  if (coordinator_) coordinator_->Stop(5s);
}

std::string ChaosCluster::CoordinatorLog() const {
  return SlurpChaosFile(dir_ / "coordinator.log");
}

std::string ChaosCluster::Logs() const {
  std::string out;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir_, ec)) {
    if (entry.path().extension() != ".log") continue;
    out += "---- " + entry.path().filename().string() + "\n" +
           ChaosTailBytes(SlurpChaosFile(entry.path()), 4000);
  }
  return out;
}

}  // namespace orch::testing
