#include "coordinator/access_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "protocol/codec.h"
#include "tests/coordinator/coordinator_fixture.h"

namespace orch::coordinator {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;
using namespace testing;  // NOLINT: the fixture's builders

AccessPolicy Policy() {
  return {true,
          {{"agent-1", "agent"},
           {"alice", "submitter"},
           {"bob", "submitter"},
           {"vera", "viewer"},
           {"root", "admin"},
           {"coord", "coordinator"},
           {"pilots", "pilot"}}};
}

// "alices" was submitted by alice, "legacy" without authentication; nothing else exists.
std::optional<std::string> OwnedByAlice(const std::string& experiment) {
  if (experiment == "alices") return "alice";
  if (experiment == "legacy") return "";
  return std::nullopt;
}

protocol::Submit PlanOf(const std::string& experiment) {
  return protocol::Submit{R"({"experiment": {"name": ")" + experiment + R"("}, "jobs": []})"};
}

std::string Why(const std::string& user, const std::string& peer, const protocol::Message& m) {
  return WhyRefused(Policy(), user, peer, m, OwnedByAlice);
}

protocol::Hello HelloFrom(const std::string& id) {
  protocol::Hello hello;
  hello.agent_id = id;
  hello.capabilities = {{kEngine}, "cpu", 0, 1, {}};
  return hello;
}

// A second connection with the agent's key gets an alias "ID~HEX": it is told that two
// agents share the id, not a puzzle about aliases.
TEST(AccessPolicyTest, ASecondConnectionUnderAnAgentsIdIsToldTwoAgentsShareIt) {
  EXPECT_EQ(Why("agent-1", "agent-1~0a1b", HelloFrom("agent-1")),
            "agent id agent-1 is in use by another connected agent: two agents were given one "
            "id and key; give each its own `id` and key. This one is refused while the other "
            "stays connected.");
}

TEST(AccessPolicyTest, AnAgentKeySpeaksOnlyAsItself) {
  EXPECT_EQ(Why("agent-1", "agent-1", HelloFrom("agent-1")), "");
  EXPECT_EQ(Why("agent-1", "agent-2", protocol::RunFinished{"r", {}, "", "", 1}),
            "key agent-1 speaks only as agent agent-1, not as agent-2");
  EXPECT_THAT(Why("agent-1", "agent-1", protocol::Submit{"{}"}),
              HasSubstr("needs role submitter or admin"));
  EXPECT_THAT(Why("root", "agent-1", protocol::Heartbeat{"agent-1", {}, 1}),
              HasSubstr("key root (role admin) may not send heartbeat: needs role agent"));
}

TEST(AccessPolicyTest, APilotKeySpeaksAsItselfAndAsItsPilotsOnly) {
  EXPECT_EQ(Why("pilots", "pilots.slurm-812", HelloFrom("pilots.slurm-812")), "");
  EXPECT_EQ(Why("pilots", "pilots", protocol::Heartbeat{"pilots", {}, 1}), "");
  EXPECT_EQ(Why("pilots", "pilots.slurm-812.0", protocol::RunStarted{"r"}), "");
  EXPECT_THAT(Why("pilots", "agent-1", HelloFrom("agent-1")),
              HasSubstr("key pilots speaks only as agent pilots or its pilots pilots.*, not as "
                        "agent-1"));
  EXPECT_THAT(Why("pilots", "pilotsX", HelloFrom("pilotsX")), HasSubstr("not as pilotsX"));
  EXPECT_THAT(Why("pilots", "pilots.", HelloFrom("pilots.")), HasSubstr("not as pilots."));
  // An agent key stays itself: its key does not make pilots.
  EXPECT_THAT(Why("agent-1", "agent-1.slurm-3", HelloFrom("agent-1.slurm-3")),
              HasSubstr("key agent-1 speaks only as agent agent-1, not as agent-1.slurm-3"));
  EXPECT_THAT(Why("pilots", "cli-1", protocol::Submit{"{}"}), HasSubstr("(role pilot)"));
}

TEST(AccessPolicyTest, SubmittersRunTheirOwnExperimentsOnly) {
  EXPECT_EQ(Why("alice", "cli-1", protocol::Submit{"{}"}), "");
  EXPECT_EQ(Why("alice", "cli-1", protocol::StatusRequest{}), "");
  EXPECT_EQ(Why("alice", "cli-1", protocol::CancelExperiment{"alices"}), "");
  EXPECT_EQ(Why("alice", "cli-1", protocol::Retry{"alices", true, false}), "");
  EXPECT_THAT(
      Why("bob", "cli-2", protocol::CancelExperiment{"alices"}),
      HasSubstr("may cancel only the experiments it submitted, not alices: needs role admin"));
  EXPECT_THAT(Why("alice", "cli-1", protocol::Drain{"agent-1"}), HasSubstr("needs role admin"));
}

TEST(AccessPolicyTest, BundlesAreForSubmittersOfTheExperimentAndAdmins) {
  protocol::ExportRequest export_alices{"alices", {}, 1};
  EXPECT_EQ(Why("alice", "cli-1", export_alices), "");
  EXPECT_EQ(Why("root", "cli-1", export_alices), "");
  EXPECT_THAT(Why("bob", "cli-2", export_alices),
              HasSubstr("may exportRequest only the experiments it submitted, not alices"));
  EXPECT_THAT(Why("vera", "cli-3", export_alices), HasSubstr("(role viewer)"));
  // Which experiment a result bundle is for is read from the bundle by the service.
  protocol::ImportRequest import{"ORCHBNDL", "f"};
  EXPECT_EQ(Why("bob", "cli-2", import), "");
  EXPECT_EQ(Why("root", "cli-1", import), "");
  EXPECT_THAT(Why("vera", "cli-3", import), HasSubstr("needs role submitter or admin"));
  EXPECT_THAT(Why("coord", "cli-4", import), HasSubstr("(role coordinator)"));
}

TEST(AccessPolicyTest, OnlyTheOwnerOrAnAdminSubmitsAnExistingExperimentAgain) {
  EXPECT_EQ(Why("bob", "cli-2", PlanOf("bobs-new")), "");
  EXPECT_EQ(Why("alice", "cli-1", PlanOf("alices")), "");  // an edited plan of its own
  EXPECT_THAT(Why("bob", "cli-2", PlanOf("alices")),
              HasSubstr("key bob (role submitter) may submit only the experiments it submitted, "
                        "not alices: needs role admin"));
  EXPECT_THAT(Why("alice", "cli-1", PlanOf("legacy")), HasSubstr("needs role admin"));
  EXPECT_THAT(Why("alice", "cli-1", protocol::CancelExperiment{"legacy"}),
              HasSubstr("needs role admin"));
  EXPECT_EQ(Why("root", "cli-4", PlanOf("alices")), "");
}

TEST(AccessPolicyTest, ViewersOnlyLookAndAdminsDoAnyRequest) {
  EXPECT_EQ(Why("vera", "cli-3", protocol::StatusRequest{}), "");
  EXPECT_THAT(
      Why("vera", "cli-3", protocol::Submit{"{}"}),
      HasSubstr("key vera (role viewer) may not send submit: needs role submitter or admin"));
  EXPECT_EQ(Why("root", "cli-4", protocol::Drain{"agent-1"}), "");
  EXPECT_EQ(Why("root", "cli-4", protocol::CancelExperiment{"alices"}), "");
  EXPECT_THAT(Why("coord", "cli-5", protocol::StatusRequest{}), HasSubstr("role coordinator"));
  EXPECT_THAT(Why("nobody", "cli-6", protocol::StatusRequest{}), HasSubstr("(role none)"));
}

TEST(AccessPolicyTest, PlainModeLetsEveryoneSpeak) {
  EXPECT_EQ(WhyRefused(AccessPolicy{}, "", "x", protocol::Drain{"agent-1"}, OwnedByAlice), "");
}

// The service applies the policy to what the transport says each connection is.
class SecuredServiceTest : public ::testing::Test {
 protected:
  SecuredServiceTest() { h_.service().SetAccessPolicy(Policy()); }

  // Delivers `message` from connection `peer` authenticated as `user`.
  void SendAs(const std::string& peer, const std::string& user, const protocol::Message& message) {
    h_.service().OnEvent(
        {protocol::TransportEvent::Kind::kFrame, peer, protocol::Encode(message), user}, h_.now());
    h_.Pump();
  }

  // Cancelled jobs of the one experiment, asked as the admin from `cli`.
  std::uint32_t Cancelled(ScriptedPeer& cli) {
    SendAs(cli.id(), "root", protocol::StatusRequest{});
    auto replies = OfKind<protocol::StatusReply>(cli.Take());
    EXPECT_THAT(replies, SizeIs(1));
    return replies.empty() ? 0 : replies[0].experiments.at(0).cancelled;
  }

  CoordinatorHarness h_;
};

TEST_F(SecuredServiceTest, ARefusedRequestIsAnsweredAndChangesNothing) {
  auto cli = h_.Peer("cli-1");
  h_.Pump();  // the connection is known before anything is sent to it
  SendAs("cli-1", "alice", protocol::Submit{PlanJson(SmallSpec("alices", 2))});
  ASSERT_THAT(OfKind<protocol::CommandReply>(cli->Take()), SizeIs(1));
  SendAs("cli-1", "vera", protocol::CancelExperiment{"alices"});
  auto replies = OfKind<protocol::CommandReply>(cli->Take());
  ASSERT_THAT(replies, SizeIs(1));
  EXPECT_FALSE(replies[0].ok);
  EXPECT_THAT(replies[0].message, HasSubstr("refused: key vera (role viewer)"));
  SendAs("cli-1", "bob", protocol::CancelExperiment{"alices"});
  EXPECT_FALSE(OfKind<protocol::CommandReply>(cli->Take()).at(0).ok);
  EXPECT_EQ(Cancelled(*cli), 0u) << "nothing was cancelled";
  SendAs("cli-1", "alice", protocol::CancelExperiment{"alices"});
  EXPECT_TRUE(OfKind<protocol::CommandReply>(cli->Take()).at(0).ok);
  EXPECT_EQ(Cancelled(*cli), 2u);
}

TEST_F(SecuredServiceTest, AbuseByOneKeyQuietsItWithoutLockingOutTheAgentWhoseIdItUsed) {
  auto agent = h_.Peer("agent-1");
  h_.Pump();
  for (int i = 0; i < 3; ++i) SendAs("agent-1", "alice", HelloFrom("agent-1"));  // max_bad_frames 3
  auto rejects = OfKind<protocol::Reject>(agent->Take());
  ASSERT_THAT(rejects, SizeIs(3));
  EXPECT_THAT(rejects[0].reason, HasSubstr("needs role agent"));
  SendAs("agent-1", "alice", HelloFrom("agent-1"));
  EXPECT_THAT(agent->Take(), SizeIs(0)) << "alice's key is ignored for a while";
  SendAs("agent-1", "agent-1", HelloFrom("agent-1"));
  EXPECT_THAT(OfKind<protocol::Welcome>(agent->Take()), SizeIs(1))
      << "the agent's own key still works";
}

TEST_F(SecuredServiceTest, NothingMeantForAnAgentGoesToAnotherKeysConnectionUnderItsId) {
  auto agent = h_.Peer("agent-1");
  h_.Pump();
  SendAs("agent-1", "agent-1", HelloFrom("agent-1"));
  ASSERT_THAT(OfKind<protocol::Welcome>(agent->Take()), SizeIs(1));
  // The agent's connection is gone unnoticed and another key's connection took
  // the id (protocol/peer_names.h); then the agent comes back.
  h_.service().OnEvent({protocol::TransportEvent::Kind::kConnected, "agent-1", "", "alice"},
                       h_.now());
  auto cli = h_.Peer("cli-1");
  h_.Pump();
  SendAs("cli-1", "alice", protocol::Submit{PlanJson(SmallSpec("alices", 1))});
  EXPECT_THAT(OfKind<protocol::Assign>(agent->Take()), SizeIs(0))
      << "the Assign is not sent while another key holds agent-1's id";
  SendAs("agent-1", "agent-1", protocol::Heartbeat{"agent-1", {}, 1});  // the agent is back
  h_.Advance(std::chrono::milliseconds(31000));  // the unsent Assign's lease expires
  SendAs("agent-1", "agent-1", protocol::Heartbeat{"agent-1", {}, 1});
  EXPECT_THAT(OfKind<protocol::Assign>(agent->Take()), SizeIs(1)) << "the job is assigned again";
}

TEST_F(SecuredServiceTest, AnotherConnectionWithTheAgentsKeyCannotLockTheAgentOut) {
  auto agent = h_.Peer("agent-1");
  h_.Pump();
  SendAs("agent-1", "agent-1", HelloFrom("agent-1"));
  ASSERT_THAT(OfKind<protocol::Welcome>(agent->Take()), SizeIs(1));
  // A second connection under the agent's key speaks under another peer id (the transport gives it an alias; any name serves here).
  auto twin = h_.Peer("agent-1.twin");
  h_.Pump();
  for (int i = 0; i < 4; ++i) SendAs("agent-1.twin", "agent-1", HelloFrom("agent-1"));
  auto rejects = OfKind<protocol::Reject>(twin->Take());
  ASSERT_THAT(rejects, SizeIs(3)) << "refused three times (max_bad_frames), then ignored";
  EXPECT_THAT(rejects[0].reason, HasSubstr("speaks only as agent agent-1, not as agent-1.twin"));
  auto cli = h_.Peer("cli-1");
  h_.Pump();
  SendAs("agent-1", "agent-1", HelloFrom("agent-1"));
  EXPECT_THAT(OfKind<protocol::Welcome>(agent->Take()), SizeIs(1)) << "the holder is still heard";
  SendAs("cli-1", "alice", protocol::Submit{PlanJson(SmallSpec("alices", 1))});
  EXPECT_THAT(OfKind<protocol::Assign>(agent->Take()), SizeIs(1));
}

TEST_F(SecuredServiceTest, WhoSubmittedAnExperimentSurvivesARestart) {
  auto cli = h_.Peer("cli-1");
  h_.Pump();
  SendAs("cli-1", "alice", protocol::Submit{PlanJson(SmallSpec("alices", 2))});
  ASSERT_TRUE(OfKind<protocol::CommandReply>(cli->Take()).at(0).ok);
  h_.Restart();
  h_.service().SetAccessPolicy(Policy());
  SendAs("cli-1", "bob", protocol::Submit{PlanJson(SmallSpec("alices", 3))});
  auto refused = OfKind<protocol::CommandReply>(cli->Take());
  ASSERT_THAT(refused, SizeIs(1));
  EXPECT_FALSE(refused[0].ok);
  EXPECT_THAT(refused[0].message, HasSubstr("may submit only the experiments it submitted"));
  SendAs("cli-1", "bob", protocol::CancelExperiment{"alices"});
  EXPECT_FALSE(OfKind<protocol::CommandReply>(cli->Take()).at(0).ok);
  SendAs("cli-1", "alice", protocol::Submit{PlanJson(SmallSpec("alices", 3))});  // edited
  EXPECT_TRUE(OfKind<protocol::CommandReply>(cli->Take()).at(0).ok);
  h_.Restart();
  h_.service().SetAccessPolicy(Policy());
  SendAs("cli-1", "alice", protocol::CancelExperiment{"alices"});
  EXPECT_TRUE(OfKind<protocol::CommandReply>(cli->Take()).at(0).ok)
      << "still alice's after the edit";
  EXPECT_EQ(Cancelled(*cli), 3u);
}

// An agent's key sends permitted heartbeats all the time: they must not wipe out the
// refusals of requests made with the same key from another connection.
TEST_F(SecuredServiceTest, RefusalsWithinTheWindowQuietAKeyWhateverItSentBetween) {
  auto agent = h_.Peer("agent-1");
  auto cli = h_.Peer("cli-9");
  h_.Pump();
  SendAs("agent-1", "agent-1", HelloFrom("agent-1"));
  ASSERT_THAT(OfKind<protocol::Welcome>(agent->Take()), SizeIs(1));
  for (int i = 0; i < 3; ++i) {  // max_bad_frames 3
    SendAs("cli-9", "agent-1", protocol::Drain{"agent-1"});
    auto refused = OfKind<protocol::CommandReply>(cli->Take());
    ASSERT_THAT(refused, SizeIs(1));
    EXPECT_THAT(refused[0].message, HasSubstr("refused: key agent-1 (role agent)"));
    SendAs("agent-1", "agent-1", protocol::Heartbeat{"agent-1", {}, 1});  // permitted
    h_.Advance(std::chrono::milliseconds(1000));
  }
  SendAs("cli-9", "agent-1", protocol::StatusRequest{});
  auto replies = cli->Take();
  ASSERT_THAT(replies, SizeIs(1));
  ASSERT_TRUE(std::holds_alternative<protocol::CommandReply>(replies[0]));
  EXPECT_THAT(std::get<protocol::CommandReply>(replies[0]).message, HasSubstr("throttled: "))
      << "the key is quieted although its agent's heartbeats came between";
  SendAs("agent-1", "agent-1", HelloFrom("agent-1"));
  EXPECT_THAT(OfKind<protocol::Welcome>(agent->Take()), SizeIs(1))
      << "the key's own agent connection is still heard";
}

TEST_F(SecuredServiceTest, RefusalsOlderThanTheWindowDoNotCount) {
  auto cli = h_.Peer("cli-1");
  h_.Pump();
  auto refused = [&] {
    SendAs("cli-1", "vera", protocol::Drain{"agent-1"});
    auto replies = OfKind<protocol::CommandReply>(cli->Take());
    EXPECT_THAT(replies, SizeIs(1));
    return replies.empty() ? std::string() : replies[0].message;
  };
  EXPECT_THAT(refused(), HasSubstr("refused: "));
  EXPECT_THAT(refused(), HasSubstr("refused: "));
  h_.Advance(kRefusalWindow);  // both leave the window
  EXPECT_THAT(refused(), HasSubstr("refused: "));
  EXPECT_THAT(refused(), HasSubstr("refused: ")) << "two within the window, not four";
  EXPECT_THAT(refused(), HasSubstr("refused: "));  // the third within the window quiets it
  EXPECT_THAT(refused(), HasSubstr("throttled: "));
}

// A quieted key's requests are answered once each, saying why and until when; its
// agent messages on another connection are dropped; after the quiet it is heard again.
TEST_F(SecuredServiceTest, AThrottledKeyIsToldSoAndUntilWhen) {
  auto cli = h_.Peer("cli-1");
  auto agent = h_.Peer("agent-1");
  h_.Pump();
  for (int i = 0; i < 3; ++i) SendAs("cli-1", "vera", protocol::CancelExperiment{"alices"});
  ASSERT_THAT(OfKind<protocol::CommandReply>(cli->Take()), SizeIs(3));
  h_.Advance(std::chrono::milliseconds(10'000));
  SendAs("cli-1", "vera", protocol::StatusRequest{});
  std::vector<protocol::Message> replies = cli->Take();
  ASSERT_THAT(replies, SizeIs(1));
  ASSERT_TRUE(std::holds_alternative<protocol::CommandReply>(replies[0]));
  const auto& throttled = std::get<protocol::CommandReply>(replies[0]);
  EXPECT_FALSE(throttled.ok);
  // Quieted at 1,000,000 ms (1970-01-01 00:16:40 UTC) for 60 s.
  EXPECT_EQ(throttled.message,
            "throttled: 3 refused requests from key vera within 60 s; its requests are ignored "
            "until 1970-01-01 00:17:40 UTC (in 50 s)");
  SendAs("cli-1", "vera", protocol::ExportRequest{"alices", {}, 1000});
  replies = cli->Take();
  ASSERT_THAT(replies, SizeIs(1));
  ASSERT_TRUE(std::holds_alternative<protocol::ExportReply>(replies[0]))
      << "orch export waits for an ExportReply";
  EXPECT_THAT(std::get<protocol::ExportReply>(replies[0]).message, HasSubstr("throttled: "));
  SendAs("agent-1", "vera", HelloFrom("agent-1"));
  EXPECT_THAT(agent->Take(), SizeIs(0)) << "an agent message of a quieted key gets no answer";
  h_.Advance(std::chrono::milliseconds(50'000));
  SendAs("cli-1", "vera", protocol::StatusRequest{});
  EXPECT_THAT(OfKind<protocol::StatusReply>(cli->Take()), SizeIs(1)) << "heard again";
}

// The parts of a plan carry no experiment the policy could check: the whole plan is
// checked once it is in, and refused there like a plan sent whole.
TEST_F(SecuredServiceTest, APlanSentInPartsIsCheckedWhenWhole) {
  auto cli = h_.Peer("cli-1");
  h_.Pump();
  SendAs("cli-1", "alice", protocol::Submit{PlanJson(SmallSpec("alices", 2))});
  ASSERT_TRUE(OfKind<protocol::CommandReply>(cli->Take()).at(0).ok);
  std::string plan = PlanJson(SmallSpec("alices", 3));
  std::size_t half = plan.size() / 2;
  SendAs("cli-1", "bob", protocol::Submit{plan.substr(0, half), "p-1", 0, plan.size()});
  SendAs("cli-1", "bob", protocol::Submit{plan.substr(half), "p-1", half, plan.size()});
  auto replies = OfKind<protocol::CommandReply>(cli->Take());
  ASSERT_THAT(replies, SizeIs(2));
  EXPECT_TRUE(replies[0].ok);
  EXPECT_THAT(replies[0].message, HasSubstr("received"));
  EXPECT_FALSE(replies[1].ok);
  EXPECT_THAT(replies[1].message, HasSubstr("may submit only the experiments it submitted"));
  SendAs("cli-1", "root", protocol::StatusRequest{});
  auto status = OfKind<protocol::StatusReply>(cli->Take());
  ASSERT_THAT(status, SizeIs(1));
  EXPECT_EQ(status[0].experiments.at(0).total, 2u) << "the plan was not replaced";
  EXPECT_EQ(Why("bob", "cli-2", protocol::Submit{"{", "p-2", 0, 10}), "");
  EXPECT_THAT(Why("vera", "cli-3", protocol::Submit{"{", "p-3", 0, 10}),
              HasSubstr("needs role submitter or admin"));
}

}  // namespace
}  // namespace orch::coordinator
