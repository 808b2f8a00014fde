// What a report's reader needs to know before reading a number: which model (and which
// bytes of it), which baseline coordinate, which hosts and which engine builds produced the
// runs. Gathered from the plan, the runs' summaries (the drivers' hello and done frames)
// and the stored host fingerprints; anything missing is left out, never an error.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "report/plan_view.h"
#include "report/run_source.h"
#include "store/records.h"

namespace orch::report {

// One distinct value seen in the runs, and the cells whose runs had it (plan order).
struct SeenValue {
  std::string value;
  std::vector<std::string> cells;
};

struct Provenance {
  std::string model_name;  // the plan's
  std::string model_id;    // "sha256:HEX" or "synth:RECIPE"; empty when the plan says neither
  // The model files the drivers loaded: "TYPE sha256:HEX" from done.model.
  std::vector<SeenValue> model_files;
  std::vector<std::pair<std::string, std::string>> baseline;  // axis, value
  // "AGENT: CPU MODEL (fingerprint ID)"; the CPU from the host fingerprint, else the
  // driver's hello.hardware.
  std::vector<SeenValue> hosts;
  // "ENGINE VERSION (commit C)" from each driver's hello.
  std::vector<SeenValue> engines;
};

// `runs` are the experiment's runs; only succeeded runs of planned jobs count. `source`
// supplies the host fingerprints.
Provenance CollectProvenance(const PlanView& plan, const std::vector<store::RunRecord>& runs,
                             RunSource& source);

}  // namespace orch::report
