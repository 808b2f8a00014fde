#include "protocol/codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "tests/protocol/message_builders.h"

namespace orch::protocol {
namespace {

using ::testing::HasSubstr;
using testing::OneOfEachMessage;
using testing::ValidAssign;
using testing::ValidHello;
using testing::ValidStatusReply;

// One message of each kind, shown by its kind's name: gtest would print the
// variant's bytes, and ctest's test names would differ in every build.
struct NamedMessage {
  Message message;
  friend void PrintTo(const NamedMessage& m, std::ostream* out) { *out << MessageName(m.message); }
};

std::vector<NamedMessage> OneOfEachNamedMessage() {
  std::vector<NamedMessage> out;
  for (Message& m : OneOfEachMessage()) out.push_back({std::move(m)});
  return out;
}

class CodecRoundTripTest : public ::testing::TestWithParam<NamedMessage> {};

TEST_P(CodecRoundTripTest, DecodesWhatItEncoded) {
  std::string frame = Encode(GetParam().message);
  Result<Message> decoded = Decode(frame);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(EveryMessage, CodecRoundTripTest,
                         ::testing::ValuesIn(OneOfEachNamedMessage()), [](const auto& info) {
                           return std::string(MessageName(info.param.message));
                         });

TEST(CodecTest, ExamplesCoverEveryMessageKind) {
  std::vector<Message> messages = OneOfEachMessage();
  ASSERT_EQ(messages.size(), std::variant_size_v<Message>);
  for (std::size_t i = 0; i < messages.size(); ++i) EXPECT_EQ(messages[i].index(), i);
}

TEST(CodecTest, RoundTripsAPartOfAnUpload) {
  Message part = ImportRequest{"part", "big.orchb", "u-1", 4, 100};
  Result<Message> decoded = Decode(Encode(part));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, part);
}

TEST(CodecTest, RoundTripsAPartOfAPlan) {
  Message part = Submit{R"({"experiment")", "p-1", 0, 1 << 30};
  Result<Message> decoded = Decode(Encode(part));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, part);
}

TEST(CodecTest, RoundTripsEmptyOptionalFieldsAndLists) {
  Hello hello;
  hello.agent_id = "a";
  hello.capabilities.hardware_class = "cpu";
  Result<Message> decoded = Decode(Encode(hello));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, Message(hello));
}

TEST(CodecTest, RoundTripsAStatusReplyOfAThousandAgents) {
  StatusReply reply = ValidStatusReply();
  for (int i = 0; i < 1000; ++i) {
    AgentSummary agent = reply.agents[0];
    agent.agent_id = "agent-" + std::to_string(i);
    reply.agents.push_back(agent);
    reply.experiments.push_back({"exp-" + std::to_string(i), 30, 1, 2, 3, 4});
  }
  Result<Message> decoded = Decode(Encode(reply));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, Message(reply));
}

// Agent states added after the first three, and what an ETA rests on.
TEST(CodecTest, RoundTripsEveryAgentStateAndTheEtaBasis) {
  StatusReply reply = ValidStatusReply();
  for (AgentState state : {AgentState::kDrained, AgentState::kNeverSeen}) {
    AgentSummary agent = reply.agents[0];
    agent.agent_id += AgentStateName(state);
    agent.state = state;
    reply.agents.push_back(agent);
  }
  reply.experiments[0].eta_runs = 12;
  reply.experiments[0].eta_cells = 3;
  reply.experiments[0].eta_cells_unmeasured = 2;
  Result<Message> decoded = Decode(Encode(reply));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, Message(reply));
}

TEST(CodecTest, DecodesFramesAtAnyAlignment) {
  std::string frame = Encode(ValidAssign());
  for (std::size_t offset = 1; offset < 8; ++offset) {
    std::vector<std::byte> buffer(frame.size() + offset);
    std::memcpy(buffer.data() + offset, frame.data(), frame.size());
    Result<Message> decoded = Decode(std::span(buffer).subspan(offset));
    ASSERT_TRUE(decoded.ok()) << "offset " << offset << ": " << decoded.status().ToString();
    EXPECT_EQ(*decoded, Message(ValidAssign()));
  }
}

TEST(CodecTest, RejectsEveryTruncationOfAFrame) {
  std::string frame = Encode(ValidStatusReply());
  for (std::size_t size = 0; size < frame.size(); ++size) {
    Result<Message> decoded = Decode(std::string_view(frame).substr(0, size));
    ASSERT_FALSE(decoded.ok()) << "prefix of " << size << " bytes decoded";
    EXPECT_EQ(decoded.status().code(), StatusCode::kDataLoss) << decoded.status().ToString();
  }
}

TEST(CodecTest, RejectsTrailingBytes) {
  std::string frame = Encode(ValidHello()) + std::string(8, '\0');
  Result<Message> decoded = Decode(frame);
  ASSERT_FALSE(decoded.ok());
  EXPECT_THAT(decoded.status().message(), HasSubstr("trailing bytes"));
}

TEST(CodecTest, RejectsOversizeFramesBeforeReadingThem) {
  std::string frame(kMaxFrameBytes + 8, '\0');
  Result<Message> decoded = Decode(frame);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(decoded.status().message(), HasSubstr("exceeds the limit"));
}

TEST(CodecTest, RejectsAnEmptyFrame) {
  Result<Message> decoded = Decode(std::string_view());
  ASSERT_FALSE(decoded.ok());
  EXPECT_THAT(decoded.status().message(), HasSubstr("empty"));
}

TEST(CodecTest, RejectsAnUnknownMessageKind) {
  std::string frame = Encode(Drain{"a"});
  // Single segment: 8-byte segment table, 8-byte root pointer, then the
  // Envelope's data section whose first 16 bits are the union discriminant.
  frame[16] = 99;
  frame[17] = 0;
  Result<Message> decoded = Decode(frame);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(decoded.status().message(), HasSubstr("unknown message kind 99"));
}

// The wire's one `cancel` is a run's or an experiment's by which field is set; the
// typed messages cannot set both, so the frame is made by hand: CancelRun{"r"}'s frame
// with its experiment pointer aimed at the run id's text too.
TEST(CodecTest, RejectsACancelOfARunAndAnExperiment) {
  std::string frame = Encode(CancelRun{"r"});
  ASSERT_TRUE(Decode(frame).ok());
  // The Cancel struct's pointers: runId (a list pointer to 2 bytes, "r" and its NUL),
  // then experiment (null).
  bool aimed = false;
  for (std::size_t at = 8; at + 16 <= frame.size(); at += 8) {
    std::uint64_t run_id = 0;
    std::uint64_t experiment = 0;
    std::memcpy(&run_id, frame.data() + at, 8);
    std::memcpy(&experiment, frame.data() + at + 8, 8);
    bool text_of_two_bytes = (run_id & 3) == 1 && ((run_id >> 32) & 7) == 2 && (run_id >> 35) == 2;
    if (!text_of_two_bytes || experiment != 0) continue;
    // Offsets count words from the end of the pointer: one word later, one less.
    std::uint64_t offset = (run_id >> 2) & 0x3fffffff;
    experiment = (run_id & ~(std::uint64_t{0x3fffffff} << 2)) | ((offset - 1) << 2);
    std::memcpy(frame.data() + at + 8, &experiment, 8);
    aimed = true;
    break;
  }
  ASSERT_TRUE(aimed);
  Result<Message> decoded = Decode(frame);
  ASSERT_FALSE(decoded.ok());
  EXPECT_THAT(decoded.status().message(),
              HasSubstr("cancel: exactly one of runId and experiment must be set"));
}

TEST(CodecTest, RejectsAHelloOfAnotherProtocolVersionNamingBoth) {
  Hello hello = ValidHello();
  hello.protocol_version = kProtocolVersion + 1;
  Result<Message> decoded = Decode(Encode(hello));
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(decoded.status().message(), "hello.protocolVersion: peer speaks protocol version " +
                                            std::to_string(kProtocolVersion + 1) +
                                            ", this build speaks version " +
                                            std::to_string(kProtocolVersion));
}

TEST(CodecTest, RejectsAWelcomeOfAnotherProtocolVersion) {
  Welcome welcome{kProtocolVersion + 1, "coord", std::chrono::seconds(1)};
  Result<Message> decoded = Decode(Encode(welcome));
  ASSERT_FALSE(decoded.ok());
  EXPECT_THAT(decoded.status().message(), HasSubstr("welcome.protocolVersion"));
}

TEST(CodecTest, DecodesARejectOfAnotherProtocolVersionSoTheReasonArrives) {
  Reject reject{kProtocolVersion + 5, "speak version 6"};
  Result<Message> decoded = Decode(Encode(reject));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, Message(reject));
}

struct BadField {
  std::string name;
  Message message;
  std::string field;  // what the Status must name
  friend void PrintTo(const BadField& b, std::ostream* out) { *out << b.name; }  // not bytes
};

class CodecFieldRuleTest : public ::testing::TestWithParam<BadField> {};

TEST_P(CodecFieldRuleTest, RejectsNamingTheField) {
  Result<Message> decoded = Decode(Encode(GetParam().message));
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(decoded.status().message(), HasSubstr(GetParam().field + ":"));
}

template <typename T, typename F>
Message Changed(T message, F change) {
  change(message);
  return message;
}

std::vector<BadField> BadFields() {
  return {
      {"HelloWithoutAgentId", Changed(ValidHello(), [](Hello& m) { m.agent_id.clear(); }),
       "hello.agentId"},
      {"HelloWithoutHardwareClass",
       Changed(ValidHello(), [](Hello& m) { m.capabilities.hardware_class.clear(); }),
       "hello.capabilities.hardwareClass"},
      {"HelloWithNoSlots", Changed(ValidHello(), [](Hello& m) { m.capabilities.slots = 0; }),
       "hello.capabilities.slots"},
      {"HelloWithNegativeGpus", Changed(ValidHello(), [](Hello& m) { m.capabilities.gpus = -1; }),
       "hello.capabilities.gpus"},
      {"HelloWithUnnamedFact", Changed(ValidHello(), [](Hello& m) { m.host_facts[1].key.clear(); }),
       "hello.hostFacts[1].key"},
      {"WelcomeWithoutHeartbeatInterval",
       Welcome{kProtocolVersion, "coord", std::chrono::milliseconds(0)},
       "welcome.heartbeatIntervalMs"},
      {"RejectWithoutReason", Reject{kProtocolVersion, ""}, "reject.reason"},
      {"HeartbeatWithoutAgentId", Heartbeat{"", {}, 1}, "heartbeat.agentId"},
      {"HelloWithAWarmSessionWithoutEngine",
       Changed(ValidHello(), [](Hello& m) { m.warm_sessions[1].engine.clear(); }),
       "hello.warmSessions[1].engine"},
      {"HeartbeatWithAWarmSessionWithAnUnnamedAxis",
       Heartbeat{"a", {}, 1, {{"e@1", "", {{"", "q4_0"}}}}},
       "heartbeat.warmSessions[0].axes[0].key"},
      {"AssignWithoutRunId", Changed(ValidAssign(), [](Assign& m) { m.run_id.clear(); }),
       "assign.runId"},
      {"AssignWithoutJobId", Changed(ValidAssign(), [](Assign& m) { m.job_id.clear(); }),
       "assign.jobId"},
      {"AssignWithoutWorkload", Changed(ValidAssign(), [](Assign& m) { m.workload.clear(); }),
       "assign.workload"},
      {"AssignWithoutLease",
       Changed(ValidAssign(), [](Assign& m) { m.lease = std::chrono::milliseconds(0); }),
       "assign.leaseMs"},
      {"AssignWithUnnamedAxis",
       Changed(ValidAssign(), [](Assign& m) { m.coordinate[2].key.clear(); }),
       "assign.coordinate[2].key"},
      {"RunStartedWithoutRunId", RunStarted{""}, "runStarted.runId"},
      {"DigestChunkWithoutRunId", DigestChunk{"", 0, {{0, "x"}}}, "digestChunk.runId"},
      {"RunFinishedFailedWithoutError", RunFinished{"r", RunStatus::kFailed, "", "", 0},
       "runFinished.error"},
      {"RunFinishedWithUnknownStatus", RunFinished{"r", static_cast<RunStatus>(7), "", "e", 0},
       "runFinished.status"},
      {"AckWithoutRunId", Ack{"", 3}, "ack.runId"},
      {"CancelOfNoRun", CancelRun{""}, "cancel"},
      {"CancelOfNoExperiment", CancelExperiment{""}, "cancel"},
      {"DrainWithoutAgentId", Drain{""}, "drain.agentId"},
      {"SubmitWithoutPlan", Submit{""}, "submit.planJson"},
      {"SubmitPartWithoutUpload", Submit{"{", "", 4, 10}, "submit.uploadId"},
      {"SubmitPartPastTheEnd", Submit{"{}", "p", 9, 10}, "submit.offset"},
      {"SubmitPartOfALongUploadId", Submit{"{}", std::string(65, 'p'), 0, 10}, "submit.uploadId"},
      {"StatusReplyWithUnnamedExperiment",
       Changed(ValidStatusReply(), [](StatusReply& m) { m.experiments[0].experiment.clear(); }),
       "statusReply.experiments[0].experiment"},
      {"StatusReplyWithUnknownAgentState",
       Changed(ValidStatusReply(),
               [](StatusReply& m) { m.agents[0].state = static_cast<AgentState>(9); }),
       "statusReply.agents[0].state"},
      {"StatusReplyWithUnnamedJob",
       Changed(ValidStatusReply(), [](StatusReply& m) { m.jobs[0].job_id.clear(); }),
       "statusReply.jobs[0].jobId"},
      {"RetryWithoutExperiment", Retry{"", true, false}, "retry.experiment"},
      {"RetryOfNothing", Retry{"e", false, false}, "retry"},
      {"ExportWithoutExperiment", ExportRequest{"", {}, 1}, "exportRequest.experiment"},
      {"ExportValidForNothing", ExportRequest{"e", {}, 0}, "exportRequest.validForMs"},
      {"ExportOfAnUnnamedCell", ExportRequest{"e", {"baseline", ""}, 1}, "exportRequest.cells[1]"},
      {"ExportReplyOkWithoutABundle", ExportReply{true, "m", ""}, "exportReply.bundle"},
      {"ImportOfNothing", ImportRequest{"", "f"}, "importRequest.bundle"},
      {"ImportPartWithoutUpload", ImportRequest{"x", "f", "", 4, 10}, "importRequest.uploadId"},
      {"ImportPartPastTheEnd", ImportRequest{"xyz", "f", "u", 8, 10}, "importRequest.offset"},
      {"CommandReplyWithoutMessage", CommandReply{false, ""}, "commandReply.message"},
  };
}

INSTANTIATE_TEST_SUITE_P(Rules, CodecFieldRuleTest, ::testing::ValuesIn(BadFields()),
                         [](const auto& info) { return info.param.name; });

// Decode must return (ok or not) for any bytes; a crash or escaping exception
// fails.
TEST(CodecFuzzTest, SurvivesRandomBytes) {
  std::mt19937 rng(20260601);
  int accepted = 0;
  for (int i = 0; i < 3000; ++i) {
    std::size_t words = std::uniform_int_distribution<std::size_t>(0, 64)(rng);
    std::string frame(words * 8, '\0');
    for (char& c : frame) c = static_cast<char>(rng());
    if (i % 2 == 0 && frame.size() >= 8) {
      frame[0] = frame[1] = frame[2] = frame[3] = 0;  // one segment: reach deeper code
      frame[4] = static_cast<char>(words - 1);
      frame[5] = frame[6] = frame[7] = 0;
    }
    if (Decode(frame).ok()) ++accepted;
  }
  RecordProperty("accepted", accepted);
}

TEST(CodecFuzzTest, SurvivesMutatedValidFrames) {
  std::mt19937 rng(7);
  std::vector<std::string> frames;
  for (const Message& m : OneOfEachMessage()) frames.push_back(Encode(m));
  for (int i = 0; i < 3000; ++i) {
    std::string frame = frames[i % frames.size()];
    int flips = std::uniform_int_distribution<int>(1, 4)(rng);
    for (int f = 0; f < flips; ++f) {
      std::size_t at = std::uniform_int_distribution<std::size_t>(0, frame.size() - 1)(rng);
      frame[at] = static_cast<char>(frame[at] ^ (1 << (rng() % 8)));
    }
    Result<Message> decoded = Decode(frame);
    if (decoded.ok()) {
      // Whatever passed validation must survive another trip unchanged.
      Result<Message> again = Decode(Encode(*decoded));
      ASSERT_TRUE(again.ok()) << again.status().ToString();
      EXPECT_EQ(*again, *decoded);
    }
  }
}

// One name per agent state, shared by `orch status` and the coordinator's metrics.
TEST(CodecTest, AgentStatesHaveTheirNames) {
  EXPECT_EQ(AgentStateName(AgentState::kConnected), "up");
  EXPECT_EQ(AgentStateName(AgentState::kDraining), "draining");
  EXPECT_EQ(AgentStateName(AgentState::kDrained), "drained");
  EXPECT_EQ(AgentStateName(AgentState::kDisconnected), "down");
  EXPECT_EQ(AgentStateName(AgentState::kNeverSeen), "never seen");
}

}  // namespace
}  // namespace orch::protocol
