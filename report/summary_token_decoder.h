// A TokenDecoder made from what the drivers reported: the `token_text` table
// ({"ID": "text"}) of each run's `done` frame, which the agent forwards in the run's
// summary (store::RunRecord::summary, JSON {"done": {"token_text": {...}}}). Drivers name
// there the tokens their records use as input, argmax or output, so the tokens a report
// shows are decodable without the model's tokenizer.
//
// Runs without a summary or table contribute nothing, and a summary that is not JSON is
// skipped: the report then shows ids only. An id that two runs decode differently (runs of
// different vocabularies) is not decoded at all rather than guessed.
#pragma once

#include <memory>
#include <vector>

#include "report/report.h"
#include "store/records.h"

namespace orch::report {

// The decoder of every token named by `runs`' summaries. Owns its table; `runs` may go
// away after the call.
std::unique_ptr<TokenDecoder> MakeSummaryTokenDecoder(const std::vector<store::RunRecord>& runs);

}  // namespace orch::report
