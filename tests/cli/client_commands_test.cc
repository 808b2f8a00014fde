// What the client commands say before and instead of waiting for a coordinator: a
// message larger than a frame is an error at once, and a plan above the coordinator's
// bound is refused before anything is sent.
#include "cli/client_commands.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/coordinator_service.h"
#include "protocol/messages.h"

namespace orch::cli {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// Nothing listens there: only an answer-less wait could come of sending.
ClientOptions Nowhere() { return ClientOptions{"tcp://127.0.0.1:9", 5, "", ""}; }

TEST(ClientCommandsTest, AMessageLargerThanAFrameIsAnErrorNamingTheSizes) {
  std::string plan(protocol::kMaxFrameBytes, 'x');
  Result<protocol::Message> reply = Request(Nowhere(), protocol::Submit{plan});
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(reply.status().message(),
              AllOf(HasSubstr("message too large"),
                    HasSubstr("limit of " + std::to_string(protocol::kMaxFrameBytes) + " bytes")))
      << "not a wait for an answer that cannot come";
}

TEST(ClientCommandsTest, APlanAboveTheCoordinatorsBoundIsRefusedNamingBoth) {
  EXPECT_TRUE(PlanFits("big", coordinator::kMaxPlanBytes).ok());
  Status fits = PlanFits("big", coordinator::kMaxPlanBytes + 1);
  EXPECT_EQ(fits.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(fits.message(),
            "the plan of experiment big is 513 MiB of JSON (" +
                std::to_string(coordinator::kMaxPlanBytes + 1) +
                " bytes), above the 512 MiB a coordinator takes: split the experiment into "
                "smaller ones (fewer workloads, cells or repeats per spec)");
}

}  // namespace
}  // namespace orch::cli
