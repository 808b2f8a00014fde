// SHA-256 of bytes, as raw digest or lowercase hex. Used for job ids, model files and
// anything else whose identity must be the same on every machine.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace orch {

using Sha256Digest = std::array<std::uint8_t, 32>;

// Incremental hasher for data that arrives in pieces (a model file read in blocks).
class Sha256 final {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(std::string_view bytes);
  // Finishes the hash; the hasher must not be used afterwards.
  Sha256Digest Finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

Sha256Digest Sha256Of(std::string_view bytes);
std::string Sha256Hex(std::string_view bytes);

// Lowercase hex of arbitrary bytes.
std::string ToHex(const std::uint8_t* data, std::size_t size);
std::string ToHex(const Sha256Digest& digest);

// True for exactly 64 hex digits (either case).
bool IsSha256Hex(std::string_view text);

}  // namespace orch
