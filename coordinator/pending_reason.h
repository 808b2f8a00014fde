// Why a pending job waits, as the matchmaker sees it against the agents now
// registered: the coordinator's answer to squeue's REASON column and
// `condor_q -better-analyze`.
//
// The explanation walks the requirement the way matching does (matchmaker.h)
// and stops at the first part that no connected agent meets, naming what the
// agents offer instead:
//   no agent connected
//   no connected agent offers engine E (offered: ...)[; agent A's drivers that
//     failed their check: NAME (E): why]
//   no agent with engine E has hardware H (they have: ...)
//   no agent with engine E on H has N GPUs (most: M)
//   no agent with engine E on H holds model sha256:X (...)
//   refused by every capable agent: A: reason; B: reason
//   capable agents draining: A, B
// Those are `runnable = false`: nothing will change until an agent joins or
// changes. Otherwise the job only waits its turn ("waiting for a free slot on
// A, B"). Pure.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/agent_registry.h"
#include "coordinator/job_table.h"
#include "protocol/messages.h"

namespace orch::coordinator {

struct PendingReason {
  std::string text;
  bool runnable = true;  // false: no registered agent can ever take it as is
};

// `busy(agent_id)` is the number of runs in flight on that agent.
PendingReason ExplainPending(const protocol::Requirements& needs,
                             const std::vector<Refusal>& refusals, const AgentRegistry& agents,
                             const std::function<std::int32_t(std::string_view)>& busy);

}  // namespace orch::coordinator
