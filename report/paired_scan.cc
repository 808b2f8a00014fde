#include "report/paired_scan.h"

#include <string>
#include <vector>

namespace orch::report {
namespace {

// One side of the scan: a buffer of at most kScanChunk records, refilled on demand.
class ChunkCursor {
 public:
  ChunkCursor(RunSource& source, std::string_view run) : source_(source), run_(run) {}

  // The current record, or null at the end. Errors are kept in status().
  const digest::PositionRecord* Current() {
    if (index_ < size_) return &buffer_[index_];
    if (done_ || !status_.ok()) return nullptr;
    Refill();
    return index_ < size_ ? &buffer_[index_] : nullptr;
  }
  void Advance() { ++index_; }
  const Status& status() const { return status_; }

 private:
  void Refill() {
    index_ = 0;
    size_ = 0;
    buffer_.resize(kScanChunk);
    status_ = source_.ScanRecords(run_, next_position_, [this](const digest::PositionRecord& r) {
      buffer_[size_++] = r;  // reuses the slot's allocations
      return size_ < kScanChunk;
    });
    if (size_ < kScanChunk) done_ = true;
    if (size_ > 0) next_position_ = buffer_[size_ - 1].position + 1;
  }

  RunSource& source_;  // borrowed for the scan
  std::string run_;
  std::vector<digest::PositionRecord> buffer_;
  std::size_t index_ = 0;
  std::size_t size_ = 0;
  std::uint64_t next_position_ = 0;
  bool done_ = false;
  Status status_;
};

}  // namespace

Status ScanPaired(RunSource& source, std::string_view reference_run, std::string_view other_run,
                  const PairVisitor& visit) {
  ChunkCursor a(source, reference_run);
  ChunkCursor b(source, other_run);
  while (true) {
    const digest::PositionRecord* p = a.Current();
    const digest::PositionRecord* q = b.Current();
    if (p == nullptr && q == nullptr) break;
    bool keep_going = true;
    if (q == nullptr || (p != nullptr && p->position < q->position)) {
      keep_going = visit(p, nullptr);
      a.Advance();
    } else if (p == nullptr || q->position < p->position) {
      keep_going = visit(nullptr, q);
      b.Advance();
    } else {
      keep_going = visit(p, q);
      a.Advance();
      b.Advance();
    }
    if (!keep_going) break;
  }
  ORCH_RETURN_IF_ERROR(a.status());
  return b.status();
}

}  // namespace orch::report
