#include "plan_document/job_fields.h"

#include <string>

namespace orch::plan_document {

const std::vector<IntegerField>& JobIntegerFields() {
  static const std::vector<IntegerField> fields = {kTopLogits, kFullEvery, kFullRowBudgetBytes,
                                                   kResourceThreads};
  return fields;
}

Status CheckRange(const IntegerField& field, std::int64_t value, std::string_view where) {
  if (value >= field.min && value <= field.max) return Status::Ok();
  return InvalidArgument(std::string(where.empty() ? field.path : where) + ": expected " +
                         std::to_string(field.min) + " to " + std::to_string(field.max) + ", got " +
                         std::to_string(value));
}

}  // namespace orch::plan_document
