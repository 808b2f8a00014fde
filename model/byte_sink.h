// ByteSink: where a model file's bytes go as they are generated (a file being written
// atomically, or a string in tests). Generators append in order and never seek, so a
// sink can hash what passes through it.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace orch::model {

class ByteSink {
 public:
  virtual ~ByteSink() = default;
  // Appends `bytes`; after an error the sink's content is unspecified.
  virtual Status Append(std::string_view bytes) = 0;
};

// Appends to a string it borrows (which must outlive the sink).
class StringSink final : public ByteSink {
 public:
  explicit StringSink(std::string& out) : out_(out) {}
  Status Append(std::string_view bytes) override {
    out_.append(bytes);
    return Status::Ok();
  }

 private:
  std::string& out_;
};

}  // namespace orch::model
