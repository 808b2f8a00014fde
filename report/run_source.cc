#include "report/run_source.h"

namespace orch::report {
namespace {

class StoreRunSource final : public RunSource {
 public:
  explicit StoreRunSource(store::Store& store) : store_(store) {}

  Status ScanRecords(std::string_view run_id, std::uint64_t from_position,
                     const RecordVisitor& visit) override {
    Status decode_error;
    Status scanned = store_.ScanDigests(
        run_id, from_position, [&](std::uint64_t position, std::string_view bytes) {
          Result<digest::PositionRecord> record = digest::DecodePositionRecord(bytes);
          if (!record.ok()) {
            decode_error = record.status().WithContext("run " + std::string(run_id) + " position " +
                                                       std::to_string(position));
            return false;
          }
          return visit(*record);
        });
    if (!scanned.ok()) return scanned.WithContext("scan run " + std::string(run_id));
    return decode_error;
  }

  Result<std::string> GetFingerprint(std::string_view id) override {
    return store_.GetFingerprint(id);
  }

 private:
  store::Store& store_;  // borrowed; outlives the source
};

}  // namespace

std::unique_ptr<RunSource> MakeStoreRunSource(store::Store& store) {
  return std::make_unique<StoreRunSource>(store);
}

}  // namespace orch::report
