// Admission without a transport: frames and messages in, verdicts and answers out.
#include "coordinator/admission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "protocol/codec.h"

namespace orch::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

AccessPolicy AdmissionRoles() {
  return {true, {{"agent-1", "agent"}, {"alice", "submitter"}, {"root", "admin"}}};
}

protocol::TransportEvent AdmissionFrame(const std::string& peer, const std::string& user,
                                        const protocol::Message& message) {
  return {protocol::TransportEvent::Kind::kFrame, peer, protocol::Encode(message), user};
}

// A Drain: only an admin may send it, so alice's is refused.
protocol::Message DrainFromAlice() { return protocol::Drain{"agent-1"}; }

bool NoExperimentNamed(const std::string&) { return false; }

class AdmissionTest : public ::testing::Test {
 protected:
  AdmissionTest() : admission_(3, [this](std::string_view line) { log_.emplace_back(line); }) {
    admission_.SetPolicy(AdmissionRoles());
  }
  // Alice sends a refused request at `at`; its answer.
  std::optional<protocol::Message> Refuse(Millis at, const std::string& peer = "cli-1") {
    return admission_.Refusal(AdmissionFrame(peer, "alice", DrainFromAlice()), DrainFromAlice(),
                              NoExperimentNamed, at);
  }

  std::vector<std::string> log_;
  Admission admission_;
};

TEST_F(AdmissionTest, APeerIsIgnoredAtItsThirdBadFrameUntilItConnectsAnew) {
  protocol::TransportEvent event = AdmissionFrame("p", "", protocol::StatusRequest{});
  admission_.BadFrame("p", InvalidArgument("truncated"));
  admission_.BadFrame("p", InvalidArgument("truncated"));
  EXPECT_FALSE(admission_.Screen(event, Millis(0)).drop);
  admission_.BadFrame("p", InvalidArgument("truncated"));
  EXPECT_TRUE(admission_.ignoring("p"));
  EXPECT_TRUE(admission_.Screen(event, Millis(0)).drop);
  EXPECT_FALSE(admission_.Screen(event, Millis(0)).answer);
  EXPECT_THAT(log_.back(), HasSubstr("ignoring p from now on: 3 bad frames"));

  admission_.OnConnected("p");
  EXPECT_FALSE(admission_.ignoring("p"));
  admission_.BadFrame("p", InvalidArgument("truncated"));
  EXPECT_FALSE(admission_.ignoring("p"));  // counting starts over
}

TEST_F(AdmissionTest, EachRefusalIsAnsweredInTheFormItsRequestWaitsFor) {
  auto export_answer =
      admission_.Refusal(AdmissionFrame("cli-1", "agent-1", protocol::ExportRequest{"exp", {}, 1}),
                         protocol::ExportRequest{"exp", {}, 1}, NoExperimentNamed, Millis(0));
  ASSERT_TRUE(export_answer);
  EXPECT_TRUE(std::holds_alternative<protocol::ExportReply>(*export_answer));
  auto command = Refuse(Millis(0));
  ASSERT_TRUE(command);
  auto* reply = std::get_if<protocol::CommandReply>(&*command);
  ASSERT_NE(reply, nullptr);
  EXPECT_FALSE(reply->ok);
  EXPECT_THAT(reply->message, HasSubstr("refused: "));
  protocol::Heartbeat beat{"agent-1", {}, 1};
  auto reject = admission_.Refusal(AdmissionFrame("agent-2", "agent-1", beat), beat,
                                   NoExperimentNamed, Millis(0));
  ASSERT_TRUE(reject);
  EXPECT_TRUE(std::holds_alternative<protocol::Reject>(*reject));
  EXPECT_FALSE(admission_.Refusal(AdmissionFrame("agent-1", "agent-1", beat), beat,
                                  NoExperimentNamed, Millis(0)));
}

TEST_F(AdmissionTest, ThreeRefusalsWithinTheWindowQuietTheKeyAndItsRequestsAreToldUntilWhen) {
  Refuse(Millis(0));
  Refuse(kRefusalWindow);  // the first left the window: one in it
  Refuse(kRefusalWindow + Millis(1000));
  protocol::TransportEvent status = AdmissionFrame("cli-2", "alice", protocol::StatusRequest{});
  EXPECT_FALSE(admission_.Screen(status, kRefusalWindow + Millis(1000)).drop);

  Refuse(kRefusalWindow + Millis(2000));  // the third within the window
  EXPECT_THAT(log_.back(), HasSubstr("ignoring key alice for 60 s: 3 refused requests"));
  Admission::Screened screened = admission_.Screen(status, kRefusalWindow + Millis(3000));
  EXPECT_TRUE(screened.drop);
  ASSERT_TRUE(screened.answer);
  auto* reply = std::get_if<protocol::CommandReply>(&*screened.answer);
  ASSERT_NE(reply, nullptr);
  EXPECT_THAT(reply->message,
              HasSubstr("throttled: 3 refused requests from key alice within 60 s; its requests "
                        "are ignored until 1970-01-01 00:02:02 UTC (in 59 s)"));
  // Not a request: dropped without an answer.
  protocol::TransportEvent beat = AdmissionFrame("cli-2", "alice", protocol::Heartbeat{"x", {}, 0});
  EXPECT_FALSE(admission_.Screen(beat, kRefusalWindow + Millis(3000)).answer);
  // Another key is not affected; the quiet ends.
  EXPECT_FALSE(admission_
                   .Screen(AdmissionFrame("cli-3", "root", protocol::StatusRequest{}),
                           kRefusalWindow + Millis(3000))
                   .drop);
  EXPECT_FALSE(admission_.Screen(status, kRefusalWindow + Millis(2000) + kQuietAfterAbuse).drop);
}

TEST_F(AdmissionTest, AQuietedAgentKeyIsStillHeardOnTheConnectionOfItsOwnId) {
  protocol::Message drain = DrainFromAlice();
  for (int i = 0; i < 3; ++i) {
    admission_.Refusal(AdmissionFrame("agent-1", "agent-1", drain), drain, NoExperimentNamed,
                       Millis(i));
  }
  protocol::Heartbeat beat{"agent-1", {}, 1};
  EXPECT_FALSE(admission_.Screen(AdmissionFrame("agent-1", "agent-1", beat), Millis(10)).drop);
  EXPECT_TRUE(admission_.Screen(AdmissionFrame("other", "agent-1", beat), Millis(10)).drop);
}

TEST_F(AdmissionTest, AMessageForAnAgentsIdHeldByAnotherKeyIsWithheldButARefusalGoesOut) {
  protocol::Message assign = protocol::Assign{};
  admission_.NoteHolder("agent-1", "agent-1");
  EXPECT_FALSE(admission_.Withheld("agent-1", assign));
  admission_.NoteHolder("agent-1", "alice");
  EXPECT_TRUE(admission_.Withheld("agent-1", assign));
  EXPECT_THAT(log_.back(), HasSubstr("for agent agent-1 not sent: its id is held by key alice"));
  EXPECT_FALSE(admission_.Withheld("agent-1", protocol::Reject{protocol::kProtocolVersion, "x"}));
  // Not an agent's id: whoever holds it gets its messages.
  admission_.NoteHolder("cli-1", "alice");
  EXPECT_FALSE(admission_.Withheld("cli-1", protocol::CommandReply{true, "ok"}));
}

TEST_F(AdmissionTest, WithoutAuthenticationNothingIsWithheld) {
  admission_.SetPolicy({});
  admission_.NoteHolder("agent-1", "alice");
  EXPECT_FALSE(admission_.Withheld("agent-1", protocol::Assign{}));
}

TEST_F(AdmissionTest, TheFirstSubmitterOwnsAnExperimentAcrossEditsAndRestarts) {
  Effects effects{PutPlanEffect{}};
  std::get<PutPlanEffect>(effects[0]).plan.experiment = "exp";
  admission_.StampOwner("alice", effects);
  EXPECT_EQ(std::get<PutPlanEffect>(effects[0]).plan.owner, "alice");
  admission_.NoteOwner(std::get<PutPlanEffect>(effects[0]).plan);
  admission_.StampOwner("root", effects);  // an admin edits it
  EXPECT_EQ(std::get<PutPlanEffect>(effects[0]).plan.owner, "alice");

  Admission restarted(3, [](std::string_view) {});
  restarted.SetPolicy(AdmissionRoles());
  store::StoreState state;
  state.plans.push_back({"exp", "{}", "alice"});
  state.plans.push_back({"legacy", "{}", ""});  // plain mode: no owner
  restarted.RestoreOwners(state);
  std::function<bool(const std::string&)> alice = restarted.ImportScope("alice");
  ASSERT_TRUE(alice);
  EXPECT_TRUE(alice("exp"));
  EXPECT_FALSE(alice("legacy"));
  EXPECT_FALSE(restarted.ImportScope("root"));  // an admin: any experiment
}

TEST(RequestAnswerTest, AnAgentsMessageHasNoRequestAnswer) {
  EXPECT_FALSE(RequestAnswer(protocol::Heartbeat{"a", {}, 0}, "why"));
  EXPECT_TRUE(RequestAnswer(protocol::Retry{}, "why"));
}

}  // namespace
}  // namespace orch::coordinator
