// The client file orch run leaves in its data dir for other terminals, and the
// stored experiments `orch experiments --data-dir` lists.
#include "cli/client_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cli/stored_status.h"
#include "store/memory_store.h"

namespace orch::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ClientFileTest : public ::testing::Test {
 protected:
  void SetUp() override { fs::create_directories(dir_); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_ = fs::temp_directory_path() / ("orch-client-file-" + std::to_string(::getpid()));
};

TEST_F(ClientFileTest, ReadsBackWhatWasWrittenAndTheEndedMark) {
  ClientFile live{"tcp://127.0.0.1:4242", "/k/orch-run.key_secret", "/k/coordinator.key", false};
  ASSERT_TRUE(WriteClientFile(dir_.string(), live).ok());
  Result<ClientFile> read = ReadClientFile(dir_.string());
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->coordinator, live.coordinator);
  EXPECT_EQ(read->key, live.key);
  EXPECT_EQ(read->coordinator_key, live.coordinator_key);
  EXPECT_FALSE(read->ended);
  live.ended = true;
  ASSERT_TRUE(WriteClientFile(dir_.string(), live).ok());
  EXPECT_TRUE(ReadClientFile(dir_.string())->ended);
}

TEST_F(ClientFileTest, AMissingFileIsNotFoundAndABadOneNamesTheFileAndField) {
  Result<ClientFile> none = ReadClientFile(dir_.string());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(), HasSubstr(ClientFilePath(dir_.string())));
  std::ofstream(ClientFilePath(dir_.string()))
      << R"({"schema": "orch.client/1", "coordinator": 7, "key": "", "coordinator_key": ""})";
  Result<ClientFile> bad = ReadClientFile(dir_.string());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(),
              HasSubstr(ClientFilePath(dir_.string()) + ": field \"coordinator\""));
  std::ofstream(ClientFilePath(dir_.string())) << "not json";
  EXPECT_THAT(ReadClientFile(dir_.string()).status().message(), HasSubstr("not a JSON object"));
}

TEST(StoredProgressTest, CountsEveryStoredExperimentsJobsByState) {
  std::unique_ptr<store::Store> store = store::MakeMemoryStore();
  auto job = [](const char* id, const char* plan, store::JobState state) {
    store::JobRecord record;
    record.id = id;
    record.experiment = plan;
    record.state = state;
    return record;
  };
  ASSERT_TRUE(store
                  ->PutPlan({"a", "{}"}, {job("a1", "a", store::JobState::kSucceeded),
                                          job("a2", "a", store::JobState::kFailed),
                                          job("a3", "a", store::JobState::kLost)})
                  .ok());
  ASSERT_TRUE(store->PutPlan({"b", "{}"}, {job("b1", "b", store::JobState::kCancelled)}).ok());
  Result<protocol::StatusReply> stored = StoredProgress(*store);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  ASSERT_EQ(stored->experiments.size(), 2u);
  const protocol::ExperimentProgress& a = stored->experiments[0];
  EXPECT_EQ(a.experiment, "a");
  EXPECT_EQ(a.total, 3u);
  EXPECT_EQ(a.succeeded, 1u);
  EXPECT_EQ(a.failed, 1u);
  EXPECT_EQ(a.pending, 1u);  // lost: requeued when the coordinator starts again
  EXPECT_EQ(stored->experiments[1].experiment, "b");
  EXPECT_EQ(stored->experiments[1].cancelled, 1u);
}

}  // namespace
}  // namespace orch::cli
