// `orch run` end to end: the command starts its own coordinator and agents as child
// processes, runs a plan with the test driver, stops them, and `orch report` reads the
// result from the store they left.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/sha256.h"
#include "cli/child_process.h"
#include "store/rocksdb_store.h"
#include "tests/e2e/local_cluster.h"

namespace orch::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(OrchRunTest, RunsAPlanOnThisMachineAndReportsIt) {
  fs::path dir = fs::temp_directory_path() / ("orch-run-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "spec.toml") << TestEngineSpec("e2e-run", 6, 12, 0);
  std::string data = (dir / "data").string();

  ProcessResult run =
      RunProcess({OrchBinary(), "run", (dir / "spec.toml").string(), "--agents", "2", "--data-dir",
                  data, "--timeout", "120", "--driver", "test-engine@1=" + TestDriverBinary()},
                 std::chrono::seconds(150));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("[6/6] succeeded 6, running 0, pending 0, failed 0"));

  ProcessResult report = RunProcess({OrchBinary(), "report", "e2e-run", "--data-dir", data,
                                     "--html", (dir / "report.html").string()});
  ASSERT_EQ(report.exit_code, 0) << report.out << report.err;
  // The baseline repeats ran one exact coordinate: bit-identical, like a real engine.
  EXPECT_THAT(report.out, HasSubstr("bit-identical"));
  EXPECT_THAT(report.out, HasSubstr("knob.variant=4"));
  std::ifstream html(dir / "report.html");
  std::string page((std::istreambuf_iterator<char>(html)), std::istreambuf_iterator<char>());
  EXPECT_THAT(page, HasSubstr("<svg"));

  // The agents' host fingerprint is stored once; `fingerprint diff` finds it by id.
  std::string id;
  {
    Result<std::unique_ptr<store::Store>> db =
        store::OpenRocksDbStore(store::RocksDbPathInDataDir(data), store::RocksDbOptions{});
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    Result<store::StoreState> state = (*db)->LoadState();
    ASSERT_TRUE(state.ok() && !state->runs.empty());
    id = state->runs.front().host_fingerprint_id;
  }
  ProcessResult same =
      RunProcess({OrchBinary(), "fingerprint", "diff", id, id, "--data-dir", data});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_THAT(same.out, HasSubstr("identical"));
  ProcessResult unknown =
      RunProcess({OrchBinary(), "fingerprint", "diff", id, "fp-nope", "--data-dir", data});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("fp-nope is neither a file nor a fingerprint stored in"));

  ProcessResult missing_driver =
      RunProcess({OrchBinary(), "run", (dir / "spec.toml").string(), "--data-dir", data});
  EXPECT_EQ(missing_driver.exit_code, 2);
  EXPECT_THAT(missing_driver.err, HasSubstr("no driver for engine test-engine@1: pass --driver "
                                            "test-engine@1=EXECUTABLE"));
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

TEST(OrchRunTest, ALlamaCppEngineWithoutADriverNamesWhereItLookedAndTheFlag) {
  fs::path dir = fs::temp_directory_path() / ("orch-run-nodriver-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string spec = TestEngineSpec("e2e-no-driver", 3, 4, 0);
  spec.replace(spec.find("test-engine@1"), 13, "llama.cpp@no-such-release");
  std::ofstream(dir / "spec.toml") << spec;
  ProcessResult run = RunProcess(
      {OrchBinary(), "run", (dir / "spec.toml").string(), "--data-dir", (dir / "data").string()});
  EXPECT_EQ(run.exit_code, 2) << run.out << run.err;
  std::string exe_dir = fs::path(OrchBinary()).parent_path().string();
  EXPECT_THAT(run.err, HasSubstr("no driver for engine llama.cpp@no-such-release: looked for " +
                                 exe_dir + "/orch-driver-llamacpp-no-such-release, "));
  EXPECT_THAT(run.err, HasSubstr("/lib/orch/drivers/orch-driver-llamacpp-no-such-release and "));
  EXPECT_THAT(run.err, HasSubstr("/drivers/llamacpp/orch-driver-llamacpp-no-such-release"));
  EXPECT_THAT(run.err, HasSubstr("pass --driver llama.cpp@no-such-release=EXECUTABLE"));
  EXPECT_FALSE(fs::exists(dir / "data")) << "nothing is started without every driver";
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

std::string SlurpRunFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A fresh folder for one test, named after it.
fs::path TestDir() {
  fs::path dir =
      fs::temp_directory_path() / ("orch-run-" + std::to_string(::getpid()) + "-" +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Processes whose command line mentions `text` (the daemons `orch run` started
// name their configs under its data dir).
std::vector<pid_t> ProcessesMentioning(const std::string& text) {
  std::vector<pid_t> found;
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc")) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = SlurpRunFile(entry.path() / "cmdline");
    if (cmdline.find(text) != std::string::npos) found.push_back(std::stoi(name));
  }
  return found;
}

std::vector<std::string> RunArgs(const fs::path& dir, const std::string& spec_file) {
  return {OrchBinary(),
          "run",
          (dir / spec_file).string(),
          "--agents",
          "2",
          "--data-dir",
          (dir / "data").string(),
          "--timeout",
          "120",
          "--driver",
          "test-engine@1=" + TestDriverBinary()};
}

// Polls `log` (at most 60 s) until it contains `text`.
bool WaitForLog(const fs::path& log, const std::string& text) {
  for (int i = 0; i < 600; ++i) {
    if (SlurpRunFile(log).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

TEST(OrchRunTest, SigintStopsEveryProcessItStartedAndASecondRunResumes) {
  fs::path dir = TestDir();
  std::ofstream(dir / "spec.toml") << TestEngineSpec("e2e-stop", 12, 20, 60);
  fs::path log = dir / "run.log";
  Result<cli::ChildProcess> run = cli::ChildProcess::Start(RunArgs(dir, "spec.toml"), log.string());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_TRUE(WaitForLog(log, "succeeded 2,")) << SlurpRunFile(log);
  ASSERT_FALSE(ProcessesMentioning((dir / "data").string()).empty());

  // The report reads the store while the coordinator holds it.
  ProcessResult partial =
      RunProcess({OrchBinary(), "report", "e2e-stop", "--data-dir", (dir / "data").string()});
  EXPECT_EQ(partial.exit_code, 0) << partial.err;
  EXPECT_THAT(partial.out, HasSubstr("PARTIAL REPORT"));

  run->Signal(SIGINT);
  std::optional<int> code = run->WaitFor(std::chrono::seconds(40));
  ASSERT_TRUE(code.has_value()) << SlurpRunFile(log);
  EXPECT_EQ(*code, 128 + SIGINT) << SlurpRunFile(log);
  EXPECT_THAT(SlurpRunFile(log), HasSubstr("Resume with: orch run"));
  EXPECT_TRUE(ProcessesMentioning((dir / "data").string()).empty())
      << "no coordinator, agent or driver outlives orch run";

  ProcessResult again = RunProcess(RunArgs(dir, "spec.toml"), std::chrono::seconds(150));
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_THAT(again.out, HasSubstr("already submitted"));
  EXPECT_THAT(again.out, ::testing::Not(HasSubstr("[0/12]"))) << "finished jobs are not redone";
  EXPECT_THAT(again.out, HasSubstr("[12/12] succeeded 12"));
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// `scripts/demo | tee log`, then Ctrl-C: tee goes first, and orch run's next line of
// progress goes to a pipe nobody reads. It must still stop what it started.
TEST(OrchRunTest, AClosedOutputPipeDoesNotKillItBeforeItStopsWhatItStarted) {
  fs::path dir = TestDir();
  std::ofstream(dir / "spec.toml") << TestEngineSpec("e2e-pipe", 12, 20, 60);
  fs::path fifo = dir / "out.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string first;
  std::thread reader([&] {  // reads the first line, then closes its end
    std::ifstream in(fifo);
    std::getline(in, first);
  });
  Result<cli::ChildProcess> run =
      cli::ChildProcess::Start(RunArgs(dir, "spec.toml"), fifo.string());
  reader.join();
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_THAT(first, HasSubstr("orch run"));
  bool started = false;
  for (int i = 0; i < 300 && !started; ++i) {  // up to 30 s for its agents' drivers
    started = ProcessesMentioning((dir / "data").string()).size() >= 3;
    if (!started) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(started) << "orch run started no cluster";
  std::this_thread::sleep_for(std::chrono::seconds(2));  // a few lines of progress, unread
  ASSERT_FALSE(run->WaitFor(std::chrono::milliseconds(0)).has_value())
      << "orch run died writing to the closed pipe";

  run->Signal(SIGINT);
  std::optional<int> code = run->WaitFor(std::chrono::seconds(40));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 128 + SIGINT);
  std::vector<pid_t> left = ProcessesMentioning((dir / "data").string());
  EXPECT_TRUE(left.empty()) << "no coordinator, agent or driver outlives orch run";
  for (pid_t pid : left) ::kill(pid, SIGKILL);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

TEST(OrchRunTest, JobsNoLocalAgentCanRunAreListedAtOnceWithTheReason) {
  fs::path dir = TestDir();
  std::string spec = TestEngineSpec("e2e-gpu", 3, 4, 0);
  spec.replace(spec.find("hardware = \"cpu\""), 16, "hardware = \"gpu\"");
  std::ofstream(dir / "spec.toml") << spec;
  auto started = std::chrono::steady_clock::now();
  ProcessResult run = RunProcess(RunArgs(dir, "spec.toml"), std::chrono::seconds(60));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr("these jobs can run on none of this machine's agents"));
  EXPECT_THAT(run.err,
              HasSubstr("no agent with engine test-engine@1 has hardware gpu (they have: cpu)"));
  EXPECT_TRUE(ProcessesMentioning((dir / "data").string()).empty());
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// Regression: when the agents quarantined the only driver of the jobs' engine, the jobs
// stayed pending and `orch run` waited for its whole --timeout, then said only "gave up".
TEST(OrchRunTest, WhenTheLastCapableDriverIsQuarantinedRunStopsWaitingAndSaysWhy) {
  fs::path dir = TestDir();
  std::ofstream(dir / "spec.toml") << TestEngineSpec("e2e-stuck", 8, 4, 0);
  // Answers `version` like the test driver, then dies at once on every job.
  fs::path broken = dir / "broken-driver.sh";
  std::ofstream(broken) << "#!/bin/sh\n"
                           "if [ \"$1\" = version ]; then\n"
                           "  echo '{\"engine\": \"test-engine\", \"version\": \"1\"}'\n"
                           "  exit 0\nfi\n"
                           "echo 'libengine.so: cannot open shared object file' >&2\n"
                           "exit 1\n";
  fs::permissions(broken, fs::perms::owner_all);
  std::vector<std::string> args = RunArgs(dir, "spec.toml");
  args.back() = "test-engine@1=" + broken.string();  // --driver's value
  ProcessResult run = RunProcess(args, std::chrono::seconds(150));
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.err, ::testing::Not(HasSubstr("gave up after"))) << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr("pending jobs can run on none of this machine's agents any more"));
  EXPECT_THAT(run.err, HasSubstr("no connected agent offers engine test-engine@1"));
  EXPECT_THAT(run.err, HasSubstr("quarantined driver0 (test-engine@1): 3 runs in a row failed"));
  EXPECT_TRUE(ProcessesMentioning((dir / "data").string()).empty());
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

TEST(OrchRunTest, ATypedDriverRefusalFailsOnceAndRunSaysWhy) {
  fs::path dir = TestDir();
  std::string spec = TestEngineSpec("e2e-invalid", 3, 4, 0);
  spec.replace(spec.find("knob.variant = 0"), 16,
               "knob.variant = 0\nknob.behaviour = \"error\"\nknob.error_code = \"invalid_job\"");
  std::ofstream(dir / "spec.toml") << spec;
  ProcessResult run = RunProcess(RunArgs(dir, "spec.toml"), std::chrono::seconds(60));
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr("3 jobs did not succeed"));
  EXPECT_THAT(run.err, HasSubstr("invalid_job: the test driver was told to fail"));
  EXPECT_THAT(run.err, HasSubstr("not retried"));
  EXPECT_THAT(run.err, HasSubstr("driver log: "));
  EXPECT_THAT(run.err, ::testing::Not(HasSubstr("orch-test-driver: job")))
      << "the driver's log stays in its file";
  // Each job ran once: no retries of a deterministic failure.
  Result<std::unique_ptr<store::Store>> db = store::OpenRocksDbStoreForReading(
      store::RocksDbPathInDataDir((dir / "data").string()), (dir / "scratch").string());
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  Result<std::vector<store::JobRecord>> jobs = (*db)->ListJobs("e2e-invalid");
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 3u);
  for (const store::JobRecord& job : *jobs) EXPECT_EQ(job.attempts, 1) << job.id;
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

TEST(OrchRunTest, ASpecTextFileOutsideTheSpecsFolderIsRefusedUnlessAllowed) {
  fs::path dir = TestDir();
  std::string spec = TestEngineSpec("e2e-outside", 3, 4, 0);
  spec.replace(spec.find("text = \"hello\""), 14, "text_file = \"/etc/hostname\"");
  std::ofstream(dir / "spec.toml") << spec;
  ProcessResult run = RunProcess(RunArgs(dir, "spec.toml"));
  EXPECT_EQ(run.exit_code, 2) << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr("--allow-outside-spec-dir"));
  EXPECT_FALSE(fs::exists(dir / "data")) << "nothing is started";
  ProcessResult submit =
      RunProcess({OrchBinary(), "submit", (dir / "spec.toml").string(), "--timeout", "1"});
  EXPECT_EQ(submit.exit_code, 2) << submit.err;
  std::vector<std::string> allowed = RunArgs(dir, "spec.toml");
  allowed.push_back("--allow-outside-spec-dir");
  ProcessResult open = RunProcess(allowed, std::chrono::seconds(120));
  EXPECT_EQ(open.exit_code, 0) << open.out << open.err;
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

TEST(OrchRunTest, ASpecModelFileOutsideTheSpecsFolderIsRefusedBeforeAnythingStarts) {
  fs::path dir = TestDir();
  fs::create_directories(dir / "elsewhere");
  std::ofstream(dir / "elsewhere" / "secret.gguf") << "not for agents";
  fs::create_directories(dir / "exp");
  fs::create_symlink(dir / "elsewhere" / "secret.gguf", dir / "exp" / "model.gguf");
  std::string spec = TestEngineSpec("e2e-model-outside", 3, 4, 0);
  std::string synth = "synth = \"llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128\"";
  for (const std::string& file :
       {std::string("model.gguf"), (dir / "elsewhere" / "secret.gguf").string(),
        std::string("../elsewhere/secret.gguf")}) {
    std::string with_file = spec;
    with_file.replace(
        with_file.find(synth), synth.size(),
        "name = \"m\"\nfile = \"" + file + "\"\nsha256 = \"" + std::string(64, 'a') + "\"");
    std::ofstream(dir / "exp" / "spec.toml") << with_file;
    ProcessResult run = RunProcess(RunArgs(dir, "exp/spec.toml"));
    EXPECT_EQ(run.exit_code, 2) << file << run.out << run.err;
    EXPECT_THAT(run.err, HasSubstr("[model] file: "));
    EXPECT_THAT(run.err, HasSubstr("--allow-outside-spec-dir")) << file;
    EXPECT_FALSE(fs::exists(dir / "data")) << "nothing is started";
  }
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// Regression: a spec whose model file is not the declared SHA-256 ended in "no agent ...
// holds model sha256:..." and nothing else, though orch had the file at hand. The run
// now says the file's own hash beside the declared one.
TEST(OrchRunTest, AModelFileWhoseHashIsNotTheSpecsSaysBothHashes) {
  fs::path dir = TestDir();
  std::string content = "these bytes are not the model the spec declares";
  std::ofstream(dir / "model.gguf") << content;
  std::string spec = TestEngineSpec("e2e-model-hash", 3, 4, 0);
  std::string synth = "synth = \"llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128\"";
  spec.replace(spec.find(synth), synth.size(),
               "name = \"m\"\nfile = \"model.gguf\"\nsha256 = \"" + std::string(64, 'a') + "\"");
  std::ofstream(dir / "spec.toml") << spec;
  ProcessResult run = RunProcess(RunArgs(dir, "spec.toml"), std::chrono::seconds(60));
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr("holds model sha256:" + std::string(64, 'a')));
  EXPECT_THAT(run.err,
              HasSubstr("orch run: the spec's model file model.gguf has SHA-256 " +
                        Sha256Hex(content) + ", but model.sha256 is " + std::string(64, 'a')))
      << run.err;
  EXPECT_TRUE(ProcessesMentioning((dir / "data").string()).empty());
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// Another terminal watches `orch run` by its --data-dir alone (no port, no key paths),
// and the watch ends with the run; afterwards the client commands say the run has
// ended, and `orch experiments` and `orch report` read the store it left.
TEST(OrchRunTest, AnotherTerminalWatchesTheRunByItsDataDirAndSeesItEnd) {
  fs::path dir = TestDir();
  std::string data = (dir / "data").string();
  std::ofstream(dir / "spec.toml") << TestEngineSpec("e2e-watch", 8, 20, 40);
  fs::path log = dir / "run.log";
  Result<cli::ChildProcess> run = cli::ChildProcess::Start(RunArgs(dir, "spec.toml"), log.string());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_TRUE(WaitForLog(log, "to watch it from another terminal: orch status --data-dir"))
      << SlurpRunFile(log);
  fs::path watch_log = dir / "watch.log";
  Result<cli::ChildProcess> watch = cli::ChildProcess::Start(
      {OrchBinary(), "status", "--data-dir", data, "--watch", "--interval", "200"},
      watch_log.string());
  ASSERT_TRUE(watch.ok()) << watch.status().ToString();
  std::optional<int> ran = run->WaitFor(std::chrono::seconds(150));
  ASSERT_EQ(ran, std::optional<int>(0)) << SlurpRunFile(log);
  std::optional<int> watched = watch->WaitFor(std::chrono::seconds(40));
  ASSERT_TRUE(watched.has_value()) << "the watch froze after the run ended:\n"
                                   << SlurpRunFile(watch_log);
  EXPECT_EQ(*watched, 0) << SlurpRunFile(watch_log);
  EXPECT_THAT(SlurpRunFile(watch_log),
              ::testing::ContainsRegex("every experiment is done|has ended"));

  // Once the run has ended: the final counts from the store, and where it is.
  ProcessResult ended = RunProcess(
      {OrchBinary(), "status", "e2e-watch", "--data-dir", data, "--watch", "--interval", "200"});
  EXPECT_EQ(ended.exit_code, 0) << ended.err;
  EXPECT_THAT(ended.out, ::testing::ContainsRegex("e2e-watch +8 +8 +0 +0 +0 +0"));
  EXPECT_THAT(ended.err, HasSubstr("the run in " + data +
                                   " has ended; its store is there: "
                                   "orch report e2e-watch --data-dir " +
                                   data));
  ProcessResult cancel = RunProcess({OrchBinary(), "cancel", "e2e-watch", "--data-dir", data});
  EXPECT_EQ(cancel.exit_code, 1);
  EXPECT_THAT(cancel.err, HasSubstr("the run in " + data + " has ended"));
  EXPECT_THAT(cancel.err, ::testing::Not(HasSubstr("--key")));

  ProcessResult listed = RunProcess({OrchBinary(), "experiments", "--data-dir", data});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_THAT(listed.out, ::testing::ContainsRegex("e2e-watch +8 +8 +0 +0 +0 +0"));

  ProcessResult typo = RunProcess({OrchBinary(), "report", "e2e-wach", "--data-dir", data});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_THAT(typo.err, HasSubstr("\"e2e-wach\" not found"));
  EXPECT_THAT(typo.err, HasSubstr("did you mean e2e-watch?"));
  EXPECT_THAT(typo.err, ::testing::ContainsRegex("e2e-watch +8 +8"));
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// A coordinator that goes away mid-watch: the watch says so, naming it, and fails.
TEST(OrchRunTest, AWatchWhoseCoordinatorGoesAwaySaysSoAndFails) {
  LocalCluster cluster("watch-lost");
  ASSERT_NO_FATAL_FAILURE(cluster.StartCoordinator("tcp://127.0.0.1:*"));
  std::ofstream(cluster.dir() / "spec.toml") << TestEngineSpec("e2e-lost", 4, 8, 0);
  ProcessResult submitted = cluster.Client({"submit", (cluster.dir() / "spec.toml").string()});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;  // no agent: its jobs wait
  fs::path watch_log = cluster.dir() / "watch.log";
  Result<cli::ChildProcess> watch =
      cli::ChildProcess::Start({OrchBinary(), "status", "--coordinator", cluster.endpoint(),
                                "--watch", "--interval", "200", "--timeout", "2"},
                               watch_log.string());
  ASSERT_TRUE(watch.ok()) << watch.status().ToString();
  ASSERT_TRUE(WaitForLog(watch_log, "e2e-lost")) << SlurpRunFile(watch_log);
  cluster.coordinator().Signal(SIGKILL);
  std::optional<int> watched = watch->WaitFor(std::chrono::seconds(40));
  ASSERT_TRUE(watched.has_value()) << SlurpRunFile(watch_log);
  EXPECT_EQ(*watched, 1);
  EXPECT_THAT(SlurpRunFile(watch_log),
              HasSubstr("the coordinator stopped answering at " + cluster.endpoint()));
}

}  // namespace
}  // namespace orch::testing
