#include "coordinator/job_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace orch::coordinator {
namespace {

JobEntry Pending(std::string id) {
  JobEntry job;
  job.id = std::move(id);
  return job;
}

protocol::Requirements Needs(std::string engine) {
  protocol::Requirements needs;
  needs.engine = std::move(engine);
  return needs;
}

// The ids queued for `needs`' queue, front first.
std::vector<std::string> Queued(JobTable& table, const std::string& engine) {
  std::vector<std::string> ids;
  for (JobTable::Queue& queue : table.queues()) {
    if (queue.needs.engine != engine) continue;
    for (const JobEntry* job : queue.jobs) ids.push_back(job->id);
  }
  return ids;
}

TEST(JobTableTest, PendingJobsQueueByRequirementsInOrder) {
  JobTable table;
  EXPECT_TRUE(table.Add(Pending("a"), Needs("x@1")));
  EXPECT_TRUE(table.Add(Pending("b"), Needs("y@1")));
  EXPECT_TRUE(table.Add(Pending("c"), Needs("x@1")));
  JobEntry done = Pending("d");
  done.state = store::JobState::kSucceeded;
  EXPECT_TRUE(table.Add(std::move(done), Needs("x@1")));
  EXPECT_FALSE(table.Add(Pending("a"), Needs("y@1")));  // known: left as it is
  EXPECT_THAT(Queued(table, "x@1"), ::testing::ElementsAre("a", "c"));
  EXPECT_THAT(Queued(table, "y@1"), ::testing::ElementsAre("b"));
  EXPECT_EQ(table.size(), 4u);
}

TEST(JobTableTest, QueueEntriesStayValidWhileTheTableGrows) {
  JobTable table;
  for (int i = 0; i < 5000; ++i) table.Add(Pending("job-" + std::to_string(i)), Needs("x@1"));
  std::vector<std::string> queued = Queued(table, "x@1");
  ASSERT_EQ(queued.size(), 5000u);
  EXPECT_EQ(queued.front(), "job-0");
  EXPECT_EQ(queued.back(), "job-4999");
}

TEST(JobTableTest, RemovingAJobTakesItOutOfItsQueue) {
  JobTable table;
  table.Add(Pending("a"), Needs("x@1"));
  table.Add(Pending("b"), Needs("x@1"));
  table.Add(Pending("c"), Needs("x@1"));
  // Queued twice: cancelled while pending, then retried.
  JobEntry* b = table.Find("b");
  ASSERT_NE(b, nullptr);
  table.Requeue(*b);
  EXPECT_THAT(Queued(table, "x@1"), ::testing::ElementsAre("a", "b", "c", "b"));
  table.Remove("b");
  EXPECT_EQ(table.Find("b"), nullptr);
  EXPECT_THAT(Queued(table, "x@1"), ::testing::ElementsAre("a", "c"));
  table.Remove("unknown");
  EXPECT_EQ(table.size(), 2u);
}

TEST(JobTableTest, ACopyQueuesItsOwnEntries) {
  JobTable table;
  table.Add(Pending("a"), Needs("x@1"));
  table.Add(Pending("b"), Needs("x@1"));
  JobTable copy = table;
  copy.Find("a")->state = store::JobState::kAssigned;
  for (JobTable::Queue& queue : copy.queues()) {
    for (const JobEntry* job : queue.jobs) EXPECT_EQ(job, copy.Find(job->id));
  }
  EXPECT_EQ(table.Find("a")->state, store::JobState::kPending);
  table.Remove("a");  // the copy's entries do not point here
  EXPECT_THAT(Queued(copy, "x@1"), ::testing::ElementsAre("a", "b"));
  JobTable assigned;
  assigned = copy;
  EXPECT_THAT(Queued(assigned, "x@1"), ::testing::ElementsAre("a", "b"));
  EXPECT_EQ(assigned.Find("a")->state, store::JobState::kAssigned);
}

}  // namespace
}  // namespace orch::coordinator
