#include "tests/e2e/slurm_cluster.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/e2e/local_cluster.h"

namespace orch::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string Tail(const fs::path& file) {
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return "---- " + file.string() + "\n" + text.substr(text.size() > 3000 ? text.size() - 3000 : 0);
}

}  // namespace

SlurmCluster::SlurmCluster(fs::path dir, std::string extra_conf)
    : dir_(std::move(dir)), extra_conf_(std::move(extra_conf)) {}

SlurmCluster::~SlurmCluster() { Stop(); }

void SlurmCluster::Start() {
  for (const char* sub : {"munge", "state", "spool"}) fs::create_directories(dir_ / sub);
  fs::permissions(dir_ / "munge", fs::perms::owner_all);
  ProcessResult key =
      RunProcess({"/usr/sbin/mungekey", "-c", "-k", (dir_ / "munge" / "munge.key").string()});
  ASSERT_EQ(key.exit_code, 0) << key.err;
  fs::path socket = dir_ / "munge" / "munge.sock";
  Result<cli::ChildProcess> munged = cli::ChildProcess::Start(
      {"/usr/sbin/munged", "-F", "-f", "--key-file=" + (dir_ / "munge" / "munge.key").string(),
       "--socket=" + socket.string(), "--pid-file=" + (dir_ / "munge" / "munged.pid").string(),
       "--log-file=" + (dir_ / "munge" / "munged.log").string(),
       "--seed-file=" + (dir_ / "munge" / "seed").string()},
      (dir_ / "munged.out").string());
  ASSERT_TRUE(munged.ok()) << munged.status().ToString();
  munged_ = std::make_unique<cli::ChildProcess>(std::move(munged).value());
  ASSERT_TRUE(LocalCluster::WaitUntil([&] { return fs::exists(socket); }, 10s)) << Logs();

  for (int i = 0; i < 2; ++i) std::ofstream(dir_ / ("fake-gpu" + std::to_string(i)));
  std::ofstream(dir_ / "gres.conf")
      << "NodeName=orchnode Name=gpu File=" << (dir_ / "fake-gpu").string() << "[0-1]\n";
  std::ofstream(dir_ / "slurm.conf")
      << "ClusterName=orchtest\nSlurmctldHost=localhost(127.0.0.1)\n"
      << "SlurmctldPort=" << LocalCluster::FreePort() << "\n"
      << "SlurmdPort=" << LocalCluster::FreePort() << "\n"
      << "AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=" << socket.string() << "\n"
      << "SlurmUser=root\nSlurmdUser=root\n"
      << "StateSaveLocation=" << (dir_ / "state").string() << "\n"
      << "SlurmdSpoolDir=" << (dir_ / "spool").string() << "\n"
      << "SlurmctldPidFile=" << (dir_ / "slurmctld.pid").string() << "\n"
      << "SlurmdPidFile=" << (dir_ / "slurmd.pid").string() << "\n"
      << "SlurmctldLogFile=" << (dir_ / "slurmctld.log").string() << "\n"
      << "SlurmdLogFile=" << (dir_ / "slurmd.log").string() << "\n"
      << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
      << "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nGresTypes=gpu\n"
      << "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
      << "MpiDefault=none\nReturnToService=2\nKillWait=5\n"
      << "NodeName=orchnode NodeAddr=127.0.0.1 NodeHostname=" <<
      [] {
        char name[256] = {};
        ::gethostname(name, sizeof name - 1);
        return std::string(name);
      }()
      << " CPUs=2 RealMemory=2000 Gres=gpu:2 State=UNKNOWN\n"
      << "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n"
      << extra_conf_;
  ::setenv("SLURM_CONF", (dir_ / "slurm.conf").c_str(), 1);

  Result<cli::ChildProcess> ctld = cli::ChildProcess::Start({"/usr/sbin/slurmctld", "-D", "-i"},
                                                            (dir_ / "slurmctld.out").string());
  ASSERT_TRUE(ctld.ok()) << ctld.status().ToString();
  slurmctld_ = std::make_unique<cli::ChildProcess>(std::move(ctld).value());
  Result<cli::ChildProcess> d = cli::ChildProcess::Start(
      {"/usr/sbin/slurmd", "-D", "-N", "orchnode"}, (dir_ / "slurmd.out").string());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  slurmd_ = std::make_unique<cli::ChildProcess>(std::move(d).value());
  bool idle = LocalCluster::WaitUntil(
      [&] {
        return Run({"sinfo", "-h", "-o", "%t"}).out.find("idle") != std::string::npos;
      },
      60s);
  ASSERT_TRUE(idle) << Run({"sinfo"}).out << Logs();
}

void SlurmCluster::Stop() {
  if (slurmctld_ && slurmctld_->running()) {
    Run({"scancel", "--partition=debug"});
    LocalCluster::WaitUntil([&] { return Run({"squeue", "-h"}).out.empty(); }, 30s);
  }
  for (std::unique_ptr<cli::ChildProcess>* daemon : {&slurmd_, &slurmctld_, &munged_}) {
    if (*daemon) (*daemon)->Stop(5s);
    daemon->reset();
  }
}

ProcessResult SlurmCluster::Run(const std::vector<std::string>& argv) {
  return RunProcess(argv, 30s);
}

std::string SlurmCluster::Logs() const {
  std::string out;
  for (const char* log :
       {"slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out", "munged.out"}) {
    out += Tail(dir_ / log) + "\n";
  }
  return out;
}

}  // namespace orch::testing
