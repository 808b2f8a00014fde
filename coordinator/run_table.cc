#include "coordinator/run_table.h"

#include "base/check.h"

namespace orch::coordinator {

store::RunRecord RunEntry::ToRecord() const {
  store::RunRecord record;
  record.id = id;
  record.job_id = job_id;
  record.agent_id = agent_id;
  record.host_fingerprint_id = host_fingerprint_id;
  record.lease_expiry_ms = lease_expiry.count();
  record.state = state;
  record.assigned_at_ms = assigned_at.count();
  record.ended_at_ms = ended_at.count();
  return record;
}

void RunTable::Add(RunEntry run) {
  std::string id = run.id;
  auto [it, added] = runs_.insert_or_assign(id, std::move(run));
  (void)added;
  if (it->second.InFlight()) {
    leases_.emplace(it->second.lease_expiry, id);
    by_agent_[it->second.agent_id].insert(id);
  }
}

RunEntry* RunTable::Find(std::string_view id) {
  auto it = runs_.find(std::string(id));
  return it == runs_.end() ? nullptr : &it->second;
}

const RunEntry* RunTable::Find(std::string_view id) const {
  auto it = runs_.find(std::string(id));
  return it == runs_.end() ? nullptr : &it->second;
}

void RunTable::Renew(RunEntry& run, Millis expiry) {
  ORCH_CHECK(run.InFlight()) << "renewing the lease of run " << run.id << " not in flight";
  // leases_ is keyed by (expiry, id): the old key must go before the expiry
  // changes, or the run would hold two leases.
  leases_.erase({run.lease_expiry, run.id});
  run.lease_expiry = expiry;
  leases_.emplace(expiry, run.id);
}

void RunTable::End(RunEntry& run, store::RunState state, Millis at) {
  if (run.InFlight()) {
    run.ended_at = at;
    leases_.erase({run.lease_expiry, run.id});
    auto agent = by_agent_.find(run.agent_id);
    // Empty sets are dropped, so by_agent_ holds only agents with runs in flight.
    if (agent != by_agent_.end()) {
      agent->second.erase(run.id);
      if (agent->second.empty()) by_agent_.erase(agent);
    }
  }
  run.state = state;
}

std::vector<std::string> RunTable::Expired(Millis now) const {
  std::vector<std::string> expired;
  for (const auto& [expiry, id] : leases_) {
    // leases_ is ordered by expiry: every later lease is due later still.
    if (expiry > now) break;
    expired.push_back(id);
  }
  return expired;
}

std::optional<Millis> RunTable::NextExpiry() const {
  if (leases_.empty()) return std::nullopt;
  return leases_.begin()->first;
}

std::vector<std::string> RunTable::InFlightOn(std::string_view agent) const {
  auto it = by_agent_.find(agent);
  if (it == by_agent_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

std::int32_t RunTable::CountOn(std::string_view agent) const {
  auto it = by_agent_.find(agent);
  return it == by_agent_.end() ? 0 : static_cast<std::int32_t>(it->second.size());
}

}  // namespace orch::coordinator
