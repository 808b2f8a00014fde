// The llama.cpp driver's session mode (docs/driver-protocol.md, "Sessions") on
// the real engine builds and a generated model: a job run warm, after other
// jobs on the same loaded model, gives the records and done of the same job run
// cold; the hello says whether the model was already loaded; a bad job in the
// middle gets its error and the session goes on; end of file ends it with 0.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "driver_protocol/frames.h"
#include "tests/drivers/llamacpp/driver_harness.h"
#include "tests/support/subprocess.h"

namespace orch::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class LlamaCppSessionTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeDriverTestDir("orch-llamacpp-session-test"));
  }
  static void TearDownTestSuite() {
    RemoveDriverTestDir(*dir_);
    delete dir_;
  }
  static std::string Model() { return TinyModel(*dir_); }
  static std::string Cache() { return ModelCache(*dir_); }
  static json Job(const json& overrides = json::object()) {
    return TeacherForcedJob(Model(), Cache(), overrides, 64);
  }
  static json Generate(const std::string& seed, const std::string& temperature) {
    json job = Job({{"sampler.temperature", temperature},
                    {"sampler.top_k", "0"},
                    {"sampler.top_p", "1.0"},
                    {"sampler.min_p", "0.0"},
                    {"sampler.seed", seed}});
    job["workload"] = {{"name", "reasoning"},
                       {"kind", "generate"},
                       {"prompt", "Question: what is 17 times 23?\nAnswer:"},
                       {"max_tokens", 16},
                       {"capture", job["capture"]}};
    return job;
  }
  DriverOutput Cold(const json& job) {
    DriverOutput output = RunLlamaDriver(GetParam(), job, *dir_);
    EXPECT_EQ(output.exit_code, 0) << output.log;
    EXPECT_TRUE(output.done.is_object()) << output.error.dump();
    return output;
  }
  SessionOutput Session(const std::vector<json>& jobs) {
    return RunLlamaDriverSession(GetParam(), jobs, *dir_);
  }

  static std::string* dir_;
};

std::string* LlamaCppSessionTest::dir_ = nullptr;

std::vector<std::string> RecordBytes(const DriverOutput& output) {
  std::vector<std::string> bytes;
  for (const auto& record : output.records) bytes.push_back(digest::EncodePositionRecord(record));
  return bytes;
}

// The done object less what is a measurement of this run (its time).
json Comparable(json done) {
  done.erase("eval_ms");
  return done;
}

void ExpectSameJob(const DriverOutput& cold, const DriverOutput& warm, const std::string& what) {
  EXPECT_EQ(warm.stream_error, "") << what;
  ASSERT_TRUE(warm.done.is_object()) << what << ": " << warm.error.dump();
  ASSERT_FALSE(cold.records.empty()) << what;
  EXPECT_EQ(RecordBytes(warm), RecordBytes(cold)) << what;
  EXPECT_EQ(Comparable(warm.done), Comparable(cold.done)) << what;
}

void ExpectSession(const DriverOutput& job, bool warm, int jobs_before) {
  ASSERT_TRUE(job.hello.contains("session")) << job.hello.dump();
  EXPECT_EQ(job.hello["session"], (json{{"warm", warm}, {"jobs_before", jobs_before}}));
}

TEST_P(LlamaCppSessionTest, AWarmJobGivesTheColdRecordsAndDoneAfterAnyOtherJob) {
  json teacher = Job();
  json generate = Generate("42", "1.0");
  DriverOutput cold_teacher = Cold(teacher);
  DriverOutput cold_generate = Cold(generate);
  EXPECT_FALSE(cold_teacher.hello.contains("session"));  // a single run is unchanged
  SessionOutput session = Session({teacher, Generate("7", "0.5"), generate, teacher, generate});
  EXPECT_EQ(session.exit_code, 0) << session.log;
  EXPECT_EQ(session.trailing_error, "");
  ASSERT_EQ(session.jobs.size(), 5u) << session.log;
  ExpectSameJob(cold_teacher, session.jobs[0], "the first job (cold in the session)");
  ExpectSameJob(cold_generate, session.jobs[2], "generate, warm after another sampler");
  ExpectSameJob(cold_teacher, session.jobs[3], "teacher forcing, warm after generation");
  ExpectSameJob(cold_generate, session.jobs[4], "generate, warm after teacher forcing");
  ExpectSession(session.jobs[0], false, 0);
  for (int i = 1; i < 5; ++i) ExpectSession(session.jobs[static_cast<std::size_t>(i)], true, i);
  // The other sampler did sample other tokens: the test would see leaked state.
  EXPECT_NE(session.jobs[1].done["generated_ids"], cold_generate.done["generated_ids"]);
}

TEST_P(LlamaCppSessionTest, BadJobsInTheMiddleGetTheirErrorsAndTheSessionGoesOn) {
  json teacher = Job();
  json missing = Job();
  missing["model"]["path"] = "";
  json mismatch = Job();
  mismatch["model"]["requirement"] = "sha256:" + std::string(64, 'a');
  json combination = Job({{"kv", "q8_0"}, {"attention", "off"}});
  SessionOutput session =
      Session({teacher, json{{"not", "a job"}}, missing, mismatch, combination, teacher});
  EXPECT_EQ(session.exit_code, 0) << session.log;
  ASSERT_EQ(session.jobs.size(), 6u) << session.log;
  const char* codes[] = {"invalid_job", "model_missing", "sha256_mismatch", "invalid_combination"};
  for (std::size_t i = 1; i <= 4; ++i) {
    EXPECT_EQ(session.jobs[i].stream_error, "");
    EXPECT_TRUE(session.jobs[i].done.is_null());
    EXPECT_EQ(session.jobs[i].error.value("code", ""), codes[i - 1]) << session.jobs[i].error;
    EXPECT_EQ(session.jobs[i].hello["session"]["jobs_before"], i);
  }
  ExpectSameJob(session.jobs[0], session.jobs[5], "the job after the errors");
  ExpectSession(session.jobs[5], true, 5);
}

TEST_P(LlamaCppSessionTest, OtherContextSettingsReuseTheModelAndOtherLoadValuesLoadItAnew) {
  json flash = Job({{"attention", "on"}, {"kv", "q8_0"}, {"threads", "2"}, {"batch", "16"}});
  json no_repack = Job({{"repack", "off"}});
  DriverOutput cold_flash = Cold(flash);
  DriverOutput cold_no_repack = Cold(no_repack);
  SessionOutput session = Session({Job(), flash, no_repack, Job()});
  EXPECT_EQ(session.exit_code, 0) << session.log;
  ASSERT_EQ(session.jobs.size(), 4u) << session.log;
  ExpectSameJob(cold_flash, session.jobs[1], "other context settings, warm");
  ExpectSession(session.jobs[1], true, 1);
  ExpectSameJob(cold_no_repack, session.jobs[2], "another load value");
  ExpectSession(session.jobs[2], false, 2);
  ExpectSession(session.jobs[3], false, 3);  // back to repack on: loaded anew again
  ExpectSameJob(session.jobs[0], session.jobs[3], "the first job again");
}

// The quantized variant is the file loaded: a second q8_0 job runs on it warm, an
// f32 job loads the f32 file.
TEST_P(LlamaCppSessionTest, AQuantizedVariantIsKeptLoadedLikeAnyModelFile) {
  json q8 = Job({{"quant", "q8_0"}});
  SessionOutput session = Session({q8, q8, Job()});
  DriverOutput cold_q8 = Cold(q8);  // after the session: the variant is cached for both
  EXPECT_EQ(session.exit_code, 0) << session.log;
  ASSERT_EQ(session.jobs.size(), 3u) << session.log;
  EXPECT_EQ(session.jobs[0].done["model"]["type"], "q8_0");
  EXPECT_EQ(session.jobs[0].done["model"]["cache_hit"], false);  // quantized by the session
  ExpectSameJob(cold_q8, session.jobs[1], "the q8_0 variant, warm");
  ExpectSession(session.jobs[1], true, 1);
  ExpectSession(session.jobs[2], false, 2);
  EXPECT_NE(RecordBytes(session.jobs[2]), RecordBytes(session.jobs[1]));
}

// The process's CPU kernel library is loaded once: a job for another variant is
// refused and the session goes on; one naming the variant "best" chose runs warm.
TEST_P(LlamaCppSessionTest, AnotherCpuBackendIsRefusedAndTheLoadedOneByItsNameRunsWarm) {
  SessionOutput probe = Session({Job()});
  ASSERT_EQ(probe.jobs.size(), 1u) << probe.log;
  std::string kernel = probe.jobs[0].hello.value("kernel_path", "");
  ASSERT_EQ(kernel.rfind("cpu: ", 0), 0u) << kernel;
  std::string variant = kernel.substr(5);
  if (variant == "x64" || variant == "built-in") GTEST_SKIP() << "best is " << variant;
  SessionOutput session =
      Session({Job(), Job({{"cpu_backend", "x64"}}), Job({{"cpu_backend", variant}})});
  EXPECT_EQ(session.exit_code, 0) << session.log;
  ASSERT_EQ(session.jobs.size(), 3u) << session.log;
  EXPECT_EQ(session.jobs[1].error.value("code", ""), "invalid_combination");
  EXPECT_NE(session.jobs[1]
                .error.value("message", "")
                .find("cpu_backend = \"x64\": this driver process runs the CPU backend \"best\""),
            std::string::npos)
      << session.jobs[1].error;
  ExpectSameJob(session.jobs[0], session.jobs[2], "the chosen variant by its name");
  ExpectSession(session.jobs[2], true, 2);
}

TEST_P(LlamaCppSessionTest, EndOfFileAtOnceEndsTheSessionWithNothingWritten) {
  SessionOutput session = Session({});
  EXPECT_EQ(session.exit_code, 0) << session.log;
  EXPECT_TRUE(session.jobs.empty());
  EXPECT_EQ(session.trailing_error, "");
}

TEST_P(LlamaCppSessionTest, AFrameThatIsNoJobEndsTheSessionWithATypedError) {
  std::string path = *dir_ + "/not-a-job.frames";
  std::ofstream(path, std::ios::binary)
      << driver_protocol::EncodeJobFrame(Job().dump()) << std::string("\x02\x00\x00\x00\x01{}", 7);
  ProcessResult result =
      RunProcess({LlamaDriverBinary(GetParam()), "session"}, std::chrono::seconds(120), "", path);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("job frame: type 1, expected 16 (job)"), std::string::npos)
      << result.err;
}

TEST_P(LlamaCppSessionTest, VersionDeclaresTheLoadAxes) {
  ProcessResult result = RunProcess({LlamaDriverBinary(GetParam()), "version"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  json hello = json::parse(result.out);
  EXPECT_EQ(hello["session"]["load_axes"],
            (json{"quant", "cpu_backend", "repack", "hardware", "tp"}));
}

INSTANTIATE_TEST_SUITE_P(Builds, LlamaCppSessionTest, ::testing::Values("v0.4.0", "b8390"));

}  // namespace
}  // namespace orch::testing
