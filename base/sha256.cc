#include "base/sha256.h"

#include <sodium.h>

#include "base/check.h"

namespace orch {

struct Sha256::State {
  crypto_hash_sha256_state sodium;
  bool finished = false;
};

Sha256::Sha256() : state_(std::make_unique<State>()) { crypto_hash_sha256_init(&state_->sodium); }

Sha256::~Sha256() = default;

void Sha256::Update(std::string_view bytes) {
  ORCH_CHECK(!state_->finished) << "Sha256::Update after Finish";
  crypto_hash_sha256_update(&state_->sodium, reinterpret_cast<const unsigned char*>(bytes.data()),
                            bytes.size());
}

Sha256Digest Sha256::Finish() {
  ORCH_CHECK(!state_->finished) << "Sha256::Finish called twice";
  state_->finished = true;
  Sha256Digest digest;
  crypto_hash_sha256_final(&state_->sodium, digest.data());
  return digest;
}

Sha256Digest Sha256Of(std::string_view bytes) {
  Sha256 hasher;
  hasher.Update(bytes);
  return hasher.Finish();
}

std::string Sha256Hex(std::string_view bytes) { return ToHex(Sha256Of(bytes)); }

std::string ToHex(const std::uint8_t* data, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(size * 2, '0');
  for (std::size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 0xf];
  }
  return out;
}

std::string ToHex(const Sha256Digest& digest) { return ToHex(digest.data(), digest.size()); }

bool IsSha256Hex(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (!hex) return false;
  }
  return true;
}

}  // namespace orch
