// Group commit (CoordinatorOptions::group_commit): the service holds what it sends until
// Commit() has synced the store once for the burst, so an Ack still means durable while
// one sync serves many messages; a failed sync withholds the Acks of its burst, and the
// agent's resend is acknowledged once a sync succeeds.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/coordinator_service.h"
#include "tests/coordinator/coordinator_fixture.h"

namespace orch::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace testing;  // NOLINT: the fixture's builders

class GroupCommitTest : public ::testing::Test {
 protected:
  GroupCommitTest() : inner_(store::MakeMemoryStore()), store_(*inner_) {
    CoordinatorOptions options = TestOptions();
    options.group_commit = true;
    service_ = std::make_unique<CoordinatorService>(
        options, store_,
        [this](std::string_view peer, std::string_view frame) {
          Result<protocol::Message> message = protocol::Decode(frame);
          EXPECT_TRUE(message.ok());
          if (message.ok()) sent_.push_back({std::string(peer), std::move(message).value()});
          return Status::Ok();
        },
        *log_);
    EXPECT_TRUE(service_->Start(now_).ok());
  }

  void Event(protocol::TransportEvent::Kind kind, const std::string& peer, std::string frame = "") {
    service_->OnEvent({kind, peer, std::move(frame)}, now_);
  }
  void Frame(const std::string& peer, const protocol::Message& message) {
    Event(protocol::TransportEvent::Kind::kFrame, peer, protocol::Encode(message));
  }
  // The CLI submits one job; agent-1 (one slot) connects and says Hello. No commit.
  void SubmitAndHello() {
    Event(protocol::TransportEvent::Kind::kConnected, "cli");
    Frame("cli", protocol::Submit{PlanJson(SmallSpec("exp", 1))});
    Event(protocol::TransportEvent::Kind::kConnected, "agent-1");
    protocol::Hello hello;
    hello.agent_id = "agent-1";
    hello.capabilities = {{kEngine}, "cpu", 0, 1, {}};
    hello.host_facts = {{"hostname", "host-1"}};
    Frame("agent-1", hello);
  }
  // The same, committed: returns the run id the agent was assigned.
  std::string SubmitAndAssign() {
    SubmitAndHello();
    service_->Commit();
    for (const auto& [peer, message] : sent_) {
      if (auto* assign = std::get_if<protocol::Assign>(&message)) return assign->run_id;
    }
    ADD_FAILURE() << "no Assign";
    return "";
  }
  void FinishRun(const std::string& run) {
    Frame("agent-1", protocol::DigestChunk{run, 0, {{0, "d0"}}});
    Frame("agent-1", protocol::RunFinished{run, protocol::RunStatus::kSucceeded, "{}", "", 1});
  }
  std::vector<std::string> Kinds() const {
    std::vector<std::string> kinds;
    for (const auto& [peer, message] : sent_)
      kinds.push_back(peer + ":" + protocol::MessageName(message));
    return kinds;
  }
  std::string OnlyJob() {
    Result<std::vector<store::JobRecord>> jobs = store_.ListJobs("exp");
    EXPECT_TRUE(jobs.ok() && jobs->size() == 1);
    return jobs.ok() && !jobs->empty() ? (*jobs)[0].id : "";
  }
  int Acks() const {
    int n = 0;
    for (const auto& [peer, message] : sent_) n += std::holds_alternative<protocol::Ack>(message);
    return n;
  }

  std::shared_ptr<spdlog::logger> log_ = NullLogger();
  std::unique_ptr<store::Store> inner_;
  store::FailingStore store_;
  std::unique_ptr<CoordinatorService> service_;
  milliseconds now_{1'000'000};
  std::vector<std::pair<std::string, protocol::Message>> sent_;
};

TEST_F(GroupCommitTest, NothingIsSentBeforeTheCommitThenEverythingInOrder) {
  SubmitAndHello();
  EXPECT_TRUE(sent_.empty()) << "held until the commit";
  service_->Commit();
  EXPECT_THAT(Kinds(), ElementsAre("cli:commandReply", "agent-1:welcome", "agent-1:assign"));
}

TEST_F(GroupCommitTest, OneSyncServesAWholeBurstAndItsAcksFollowIt) {
  std::string run = SubmitAndAssign();
  sent_.clear();
  FinishRun(run);
  EXPECT_EQ(Acks(), 0) << "no Ack before the sync";
  store_.FailWriteNumber(2);  // counted from here: a second write in the commit fails
  service_->Commit();
  EXPECT_EQ(Acks(), 2) << "the chunk's and RunFinished's, after one sync";
  EXPECT_EQ(store_.failed_writes(), 0) << "the commit wrote once: its sync";
  EXPECT_EQ(store_.GetJob(OnlyJob())->state, store::JobState::kSucceeded);
}

TEST_F(GroupCommitTest, AFailedSyncWithholdsTheAcksAndTheResendIsAcknowledgedLater) {
  std::string run = SubmitAndAssign();
  sent_.clear();
  FinishRun(run);
  store_.FailWriteNumber(1);  // the next write is the commit's sync
  service_->Commit();
  EXPECT_EQ(Acks(), 0) << "the writes may not be durable: nothing acknowledged";
  EXPECT_EQ(service_->failed_writes(), 1u);

  FinishRun(run);  // the agent resends what was not acknowledged
  service_->Commit();
  EXPECT_EQ(Acks(), 2) << "stored before, acknowledged as duplicates once synced";
}

TEST_F(GroupCommitTest, AFailedSyncTurnsASubmitsOkIntoAFailure) {
  Event(protocol::TransportEvent::Kind::kConnected, "cli");
  Frame("cli", protocol::Submit{PlanJson(SmallSpec("exp", 1))});
  store_.FailWriteNumber(1);
  service_->Commit();
  ASSERT_EQ(sent_.size(), 1u);
  auto* reply = std::get_if<protocol::CommandReply>(&sent_[0].second);
  ASSERT_NE(reply, nullptr);
  EXPECT_FALSE(reply->ok);
  EXPECT_THAT(reply->message, HasSubstr("not stored durably"));
}

}  // namespace
}  // namespace orch::coordinator
