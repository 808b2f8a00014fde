#include "agent/spool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "protocol/codec.h"
#include "tests/protocol/version_1_frames.h"

namespace orch::agent {
namespace {

using ::testing::HasSubstr;

class SpoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("orch-spool-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Spool> Open() {
    Result<std::unique_ptr<Spool>> spool = Spool::Open(dir_);
    EXPECT_TRUE(spool.ok()) << spool.status().ToString();
    return spool.ok() ? std::move(spool).value() : nullptr;
  }

  std::string dir_;
};

TEST_F(SpoolTest, KeepsUnackedMessagesAcrossReopen) {
  {
    auto spool = Open();
    ASSERT_TRUE(spool->BeginRun("run/1").ok());
    ASSERT_TRUE(spool->AddChunk({"run/1", 0, {{0, "a"}}}).ok());
    ASSERT_TRUE(spool->AddChunk({"run/1", 1, {{0, "b"}}}).ok());
    ASSERT_TRUE(spool->AddFinished({"run/1", protocol::RunStatus::kSucceeded, "{}", "", 2}).ok());
  }
  auto spool = Open();
  std::vector<std::string> frames = spool->UnackedFrames();
  ASSERT_EQ(frames.size(), 3u);
  Result<protocol::Message> first = protocol::Decode(frames[0]);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(std::get<protocol::DigestChunk>(*first),
            (protocol::DigestChunk{"run/1", 0, {{0, "a"}}}));
  EXPECT_TRUE(std::holds_alternative<protocol::RunFinished>(*protocol::Decode(frames[2])));
  EXPECT_EQ(spool->ChunkCount("run/1"), 2u);
}

TEST_F(SpoolTest, AckRemovesMessagesDurablyAndKeepsTheChunkCount) {
  {
    auto spool = Open();
    ASSERT_TRUE(spool->AddChunk({"r", 0, {{0, "a"}}}).ok());
    ASSERT_TRUE(spool->AddChunk({"r", 1, {{0, "b"}}}).ok());
    ASSERT_TRUE(spool->Ack("r", 0).ok());
    ASSERT_TRUE(spool->Ack("r", 0).ok());      // duplicate ack
    ASSERT_TRUE(spool->Ack("other", 3).ok());  // unknown run
  }
  auto spool = Open();
  EXPECT_EQ(spool->unacked(), 1u);
  EXPECT_EQ(spool->ChunkCount("r"), 2u);
  EXPECT_EQ(spool->UnfinishedRuns(), std::vector<std::string>{"r"});
}

TEST_F(SpoolTest, AckOfRunFinishedRemovesTheRun) {
  {
    auto spool = Open();
    ASSERT_TRUE(spool->AddChunk({"r", 0, {{0, "a"}}}).ok());
    ASSERT_TRUE(spool->AddFinished({"r", protocol::RunStatus::kSucceeded, "{}", "", 1}).ok());
    ASSERT_TRUE(spool->Ack("r", 0).ok());
    ASSERT_TRUE(spool->Ack("r", protocol::kRunFinishedSeq).ok());
    EXPECT_EQ(spool->unacked(), 0u);
  }
  auto spool = Open();
  EXPECT_EQ(spool->unacked(), 0u);
  EXPECT_TRUE(spool->UnfinishedRuns().empty());
}

// The coordinator may store RunFinished while it failed to store a chunk (a full
// disk): that chunk must stay and be sent again, or the run is never complete.
TEST_F(SpoolTest, AckOfRunFinishedKeepsAChunkNotYetAcknowledged) {
  {
    auto spool = Open();
    ASSERT_TRUE(spool->AddChunk({"r", 0, {{0, "a"}}}).ok());
    ASSERT_TRUE(spool->AddChunk({"r", 1, {{0, "b"}}}).ok());
    ASSERT_TRUE(spool->AddFinished({"r", protocol::RunStatus::kSucceeded, "{}", "", 2}).ok());
    ASSERT_TRUE(spool->Ack("r", 1).ok());
    ASSERT_TRUE(spool->Ack("r", protocol::kRunFinishedSeq).ok());
    EXPECT_EQ(spool->unacked(), 1u);
    std::vector<std::string> frames = spool->UnackedFrames();
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(std::get<protocol::DigestChunk>(*protocol::Decode(frames[0])),
              (protocol::DigestChunk{"r", 0, {{0, "a"}}}));
    EXPECT_EQ(spool->FinishedUnacked(), std::vector<std::string>{"r"});
  }
  auto spool = Open();  // after a restart: chunk 0, and RunFinished once more
  EXPECT_EQ(spool->unacked(), 2u);
  EXPECT_TRUE(spool->UnfinishedRuns().empty());
  ASSERT_TRUE(spool->Ack("r", protocol::kRunFinishedSeq).ok());
  ASSERT_TRUE(spool->Ack("r", 0).ok());
  EXPECT_EQ(spool->unacked(), 0u);
  EXPECT_TRUE(spool->FinishedUnacked().empty());
  spool.reset();  // one Spool per folder at a time
  EXPECT_TRUE(Open()->FinishedUnacked().empty());
}

TEST_F(SpoolTest, BegunRunWithoutMessagesIsUnfinishedAfterReopen) {
  { ASSERT_TRUE(Open()->BeginRun("r").ok()); }
  EXPECT_EQ(Open()->UnfinishedRuns(), std::vector<std::string>{"r"});
}

// Regression: an agent killed while it removed an acknowledged run left the run's
// directory empty, and every later start refused the spool ("cannot read .../run-id").
// Such a directory holds nothing to send: it is removed, and the spool's other runs are
// kept.
TEST_F(SpoolTest, ARunDirectoryWithoutItsRunIdIsRemovedAndTheOthersKept) {
  std::string cut_short;
  {
    auto spool = Open();
    ASSERT_TRUE(spool->AddChunk({"acked", 0, {{0, "a"}}}).ok());
    ASSERT_TRUE(spool->AddChunk({"kept", 0, {{0, "b"}}}).ok());
    for (const auto& run : std::filesystem::directory_iterator(dir_)) {
      if (!run.is_directory()) continue;
      std::ifstream id(run.path() / "run-id");
      std::string text((std::istreambuf_iterator<char>(id)), std::istreambuf_iterator<char>());
      if (text == "acked") cut_short = run.path().string();
    }
  }
  ASSERT_FALSE(cut_short.empty());
  for (const auto& file : std::filesystem::directory_iterator(cut_short)) {
    std::filesystem::remove(file.path());  // as a removal cut short leaves it
  }
  auto spool = Open();
  ASSERT_NE(spool, nullptr);
  EXPECT_FALSE(std::filesystem::exists(cut_short));
  std::vector<std::string> frames = spool->UnackedFrames();
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(std::get<protocol::DigestChunk>(*protocol::Decode(frames[0])).run_id, "kept");
}

TEST_F(SpoolTest, CorruptFileIsReportedNotTrusted) {
  {
    auto spool = Open();
    ASSERT_TRUE(spool->AddChunk({"r", 0, {{0, "a"}}}).ok());
  }
  for (const auto& run : std::filesystem::directory_iterator(dir_)) {
    if (!run.is_directory()) continue;  // agent.lock
    for (const auto& file : std::filesystem::directory_iterator(run.path())) {
      if (file.path().extension() == ".msg") std::filesystem::resize_file(file.path(), 3);
    }
  }
  Result<std::unique_ptr<Spool>> spool = Spool::Open(dir_);
  ASSERT_FALSE(spool.ok());
  EXPECT_EQ(spool.status().code(), StatusCode::kDataLoss);
}

// A spool holds frames of the agent's protocol version; one left by an agent of
// version 1 is refused naming the file and both versions (docs/agent.md).
TEST_F(SpoolTest, AChunkOfProtocolVersion1IsRefusedNamingTheFile) {
  { ASSERT_TRUE(Open()->AddChunk({"run-1", 3, {{0, "abc"}}}).ok()); }
  std::string chunk_file;
  for (const auto& run : std::filesystem::directory_iterator(dir_)) {
    if (!run.is_directory()) continue;  // agent.lock
    for (const auto& file : std::filesystem::directory_iterator(run.path())) {
      if (file.path().extension() == ".msg") chunk_file = file.path().string();
    }
  }
  ASSERT_FALSE(chunk_file.empty());
  std::ofstream(chunk_file, std::ios::binary | std::ios::trunc)
      << protocol::testing::Version1DigestChunkFrame();
  Result<std::unique_ptr<Spool>> spool = Spool::Open(dir_);
  ASSERT_FALSE(spool.ok());
  EXPECT_EQ(spool.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(spool.status().message(), HasSubstr(chunk_file));
  EXPECT_THAT(spool.status().message(),
              HasSubstr("protocol version 1 (records framed in one Data field), "
                        "this build speaks version 2"));
}

// AgentCore decides on a SpoolLedger kept as if every write succeeded; it must
// say what the spool says after the same writes and acks.
TEST_F(SpoolTest, ItsLedgerMirrorsWhatIsUnacknowledged) {
  auto spool = Open();
  SpoolLedger ledger;
  ASSERT_TRUE(spool->BeginRun("a").ok());
  ledger.BeginRun("a");
  for (std::uint64_t seq : {0u, 1u}) {
    ASSERT_TRUE(spool->AddChunk({"a", seq, {{0, "x"}}}).ok());
    ledger.AddChunk("a", seq);
  }
  ASSERT_TRUE(spool->AddFinished({"a", protocol::RunStatus::kSucceeded, "{}", "", 2}).ok());
  ledger.AddFinished("a");
  ASSERT_TRUE(spool->AddFinished({"b", protocol::RunStatus::kFailed, "{}", "no", 0}).ok());
  ledger.AddFinished("b");
  EXPECT_EQ(spool->Ledger(), ledger);
  for (auto [run, seq] : {std::pair<const char*, std::uint64_t>{"a", protocol::kRunFinishedSeq},
                          {"a", 0},
                          {"b", protocol::kRunFinishedSeq},
                          {"c", 4}}) {
    ASSERT_TRUE(spool->Ack(run, seq).ok());
    ledger.Ack(run, seq);
    EXPECT_EQ(spool->Ledger(), ledger) << run << "/" << seq;
    EXPECT_EQ(spool->UnackedKeys(), ledger.UnackedKeys());
    EXPECT_EQ(spool->FinishedUnacked(), ledger.FinishedUnacked());
    EXPECT_EQ(spool->unacked(), ledger.unacked());
  }
  // After a restart the RunFinished acknowledged while chunk 1 was not is due again.
  spool.reset();
  EXPECT_EQ(Open()->Ledger().UnackedKeys(),
            (std::vector<std::string>{"a/1", "a/" + std::to_string(protocol::kRunFinishedSeq)}));
}

// A forked process holding `dir`'s spool open until Release() (or Kill()). The
// child reports whether its Open succeeded before it waits.
class SpoolHolder final {
 public:
  explicit SpoolHolder(const std::string& dir) {
    int ready[2], release[2];
    EXPECT_EQ(::pipe2(ready, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(release, O_CLOEXEC), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(ready[0]);
      ::close(release[1]);  // or the read below never sees the parent's end close
      Result<std::unique_ptr<Spool>> spool = Spool::Open(dir);
      char answer = spool.ok() ? 'y' : 'n';
      (void)!::write(ready[1], &answer, 1);
      (void)!::read(release[0], &answer, 1);  // returns when the parent writes or closes
      ::_exit(0);
    }
    ::close(ready[1]);
    ::close(release[0]);
    char answer = 0;
    opened_ = ::read(ready[0], &answer, 1) == 1 && answer == 'y';
    ::close(ready[0]);
    release_ = release[1];
  }
  ~SpoolHolder() {
    Release();
    Kill();
  }

  pid_t pid() const { return pid_; }
  bool opened() const { return opened_; }
  // Lets the child close its spool and exit; waits for it.
  void Release() {
    if (release_ < 0) return;
    ::close(release_);
    release_ = -1;
    Reap();
  }
  // SIGKILL: the child never closes anything itself.
  void Kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    Reap();
  }

 private:
  void Reap() {
    if (pid_ <= 0) return;
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  pid_t pid_ = -1;
  int release_ = -1;
  bool opened_ = false;
};

// Every file under `dir` with its bytes and modification time.
std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    std::ostringstream state;
    state << entry.last_write_time().time_since_epoch().count() << "|";
    if (entry.is_regular_file()) state << std::ifstream(entry.path(), std::ios::binary).rdbuf();
    files[entry.path().string()] = state.str();
  }
  return files;
}

// One agent per spool: a second agent's Open, in another process, fails naming
// the folder and the holder's pid and changes nothing there.
TEST_F(SpoolTest, ASecondOpenInAnotherProcessIsRefusedNamingTheHoldersPid) {
  {
    auto spool = Open();
    ASSERT_TRUE(spool->BeginRun("in-flight").ok());
    ASSERT_TRUE(spool->AddChunk({"in-flight", 0, {{0, "a"}}}).ok());
  }
  SpoolHolder holder(dir_);
  ASSERT_TRUE(holder.opened());
  std::map<std::string, std::string> before = Snapshot(dir_);

  Result<std::unique_ptr<Spool>> second = Spool::Open(dir_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr("spool " + dir_ + " is in use"));
  EXPECT_THAT(second.status().message(), HasSubstr("pid " + std::to_string(holder.pid())));
  EXPECT_EQ(Snapshot(dir_), before);

  holder.Release();
  auto spool = Open();  // free again once the holder exited
  ASSERT_NE(spool, nullptr);
  EXPECT_EQ(spool->UnfinishedRuns(), std::vector<std::string>{"in-flight"});
  EXPECT_EQ(spool->unacked(), 1u);
}

TEST_F(SpoolTest, TheLockDiesWithAKilledHolder) {
  SpoolHolder holder(dir_);
  ASSERT_TRUE(holder.opened());
  ASSERT_FALSE(Spool::Open(dir_).ok());
  holder.Kill();
  EXPECT_NE(Open(), nullptr);
}

// The lock is per Open, not per process: the same process cannot open it twice.
TEST_F(SpoolTest, ASecondOpenInTheSameProcessIsRefusedUntilTheFirstCloses) {
  auto first = Open();
  Result<std::unique_ptr<Spool>> second = Spool::Open(dir_);
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.status().message(), HasSubstr("pid " + std::to_string(::getpid())));
  first.reset();
  EXPECT_NE(Open(), nullptr);
}

}  // namespace
}  // namespace orch::agent
