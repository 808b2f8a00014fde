// Internal to store/: whose experiment a stored record belongs to, learned from the
// plan_jobs index (job -> experiment) and the run records (run -> job). Used to report
// damage (store_check.cc) and loss (store_recover.cc) by experiment.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "base/status.h"
#include "store/keys.h"
#include "store/kv_engine.h"

namespace orch::store {

class RecordOwners {
 public:
  // Learns from every plan_jobs key and run record of `engine`.
  static Result<RecordOwners> Learn(KvEngine& engine);

  // A plan_jobs key: its job belongs to its experiment. False when the key is malformed.
  bool NotePlanJob(std::string_view key);
  // A run record's value (also one of a newer or damaged version whose job id can be
  // read). Returns the run's job id, empty when not even that decodes.
  std::string NoteRun(std::string_view key, std::string_view value);

  // The experiment a record belongs to; empty when nothing says (events, hosts,
  // signers, or a record whose job or run is unknown).
  std::string ExperimentOf(Table table, std::string_view key, std::string_view value) const;
  std::string ExperimentOfJob(std::string_view job) const;
  std::string ExperimentOfRun(std::string_view run) const;

 private:
  std::map<std::string, std::string, std::less<>> plan_of_job_;
  std::map<std::string, std::string, std::less<>> job_of_run_;
};

// The id of an IdPrefix-keyed key (plan_jobs, chunks, digests); empty when malformed.
std::string PrefixId(std::string_view key);

}  // namespace orch::store
