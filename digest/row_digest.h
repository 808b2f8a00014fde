// Row digest: the compact summary of one next-token distribution.
//
// A driver computes one RowDigest per position from the engine's raw float
// logit row (vocabulary-sized, unnormalised). The digest keeps what the
// comparison metrics need (docs/metrics.md): the top-k tokens, argmax,
// logsumexp, entropy, the logit of the teacher-forced target token, and a
// 128-bit hash of the raw row bits, so two rows can be declared bit-identical
// without storing them.
//
// Computation reads the row once, block by block (the hash, the maxima, the
// top-k and the online logsumexp/entropy share each cache-resident block), and
// allocates nothing once the output's top-k buffer has reached capacity.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace orch::digest {

// Token id meaning "no teacher-forced target was supplied".
inline constexpr std::int32_t kNoTarget = -1;
// Default capture policy: keep the 20 highest logits.
inline constexpr std::uint32_t kDefaultTopK = 20;
// Largest accepted k; larger requests are an InvalidArgument.
inline constexpr std::uint32_t kMaxTopK = 1024;

// Which definition of the digest's statistics a digest follows
// (docs/metrics.md, "Digest versions"). Both versions give the same hash, flags,
// top-k, argmax and target logit for the same row; logsumexp and entropy
// differ in their last bits (both within 2e-7 of the exact values on the
// tests' rows).
// Every version stays computable and readable: streams of different versions
// compare, and v1's bits are frozen (tests/digest/row_digest_reference.cc).
enum class DigestVersion : std::uint8_t {
  kV1 = 1,  // the first release: 4 double lanes, Cephes exponential
  kV2 = 2,  // 16 double lanes, a shorter exponential, far blocks skipped
            // (row_pass_v2.cc); about 1.2x cheaper than v1
};
// What new digests follow unless the caller asks for another version.
inline constexpr DigestVersion kCurrentDigestVersion = DigestVersion::kV2;

// One token and its raw logit. Layout-compatible with the C ABI's
// orch_token_logit.
struct TokenLogit {
  std::int32_t id = 0;
  float logit = 0.0f;
  friend bool operator==(const TokenLogit&, const TokenLogit&) = default;
};

// XXH3-128 of the row's bytes (IEEE-754 binary32, little-endian), in xxhash's
// order.
struct RowHash {
  std::uint64_t low = 0;
  std::uint64_t high = 0;
  friend bool operator==(const RowHash&, const RowHash&) = default;
};

// The hash a digest of `row` carries (the same value DigestRowInto computes).
RowHash HashRow(std::span<const float> row);

// 32 lowercase hex digits, high word first (xxhash's canonical big-endian
// form).
std::string RowHashHex(const RowHash& hash);

// Row flags; they combine with bitwise or. The first three say why a row is not
// a probability distribution; the last two say what kind of row was digested.
enum RowFlag : std::uint32_t {
  kRowHasNan = 1u << 0,         // at least one NaN logit
  kRowHasPosInf = 1u << 1,      // at least one +inf logit (softmax undefined)
  kRowNoFiniteLogit = 1u << 2,  // every non-NaN logit is -inf (or there is none)
  // Not the full row: the K most likely tokens' log-probabilities as a server
  // returned them (top_logprobs.h). logsumexp is 0 (log-probabilities), entropy
  // NaN (unknown), and the hash covers the returned (id, value) pairs only.
  kRowTopKOnly = 1u << 3,
  // With kRowTopKOnly: the values are after the server's sampling transforms
  // (temperature, top-k/top-p), not the model's own distribution.
  kRowProcessed = 1u << 4,
};
// The flags that make a row not a distribution; the others describe its kind.
inline constexpr std::uint32_t kRowNotDistributionFlags =
    kRowHasNan | kRowHasPosInf | kRowNoFiniteLogit;

// Summary of one row. Every field is a deterministic function of the row bits
// and the options, so the same row gives the same digest on every machine.
struct RowDigest {
  DigestVersion version = kCurrentDigestVersion;  // how logsumexp/entropy were computed
  std::uint32_t vocab_size = 0;
  // RowFlag bits; no kRowNotDistributionFlags bit means the row is a
  // distribution (is_distribution()).
  std::uint32_t flags = 0;
  // Lowest id among the maximal non-NaN logits; -1 when every logit is NaN.
  std::int32_t argmax = -1;
  // Natural-log partition function log(sum_i exp(logit_i)); NaN when the row
  // is not a distribution; 0 for a top-k-only row (its values are log-probabilities).
  double logsumexp = 0.0;
  // Entropy of softmax(row) in nats; NaN when the row is not a distribution,
  // and for a top-k-only row (the full row is unknown).
  double entropy = 0.0;
  // Of the raw row; of the returned (id, value) pairs for a top-k-only row.
  RowHash hash;
  // Teacher-forced next token and its raw logit; kNoTarget when none was given.
  std::int32_t target_id = kNoTarget;
  float target_logit = 0.0f;
  // The min(k, number of non-NaN logits) largest logits, ordered by logit
  // descending, ties by lower id. top[0] is the argmax.
  std::vector<TokenLogit> top;

  // No NaN, no +inf, a finite value: what can be computed from the row is
  // defined. A top-k-only row is a distribution in this sense.
  bool is_distribution() const { return (flags & kRowNotDistributionFlags) == 0; }
  // The row is a server's returned top-k log-probabilities, not the full row.
  bool is_top_k_only() const { return (flags & kRowTopKOnly) != 0; }
  // Top-k-only values taken after the server's sampling transforms.
  bool is_processed() const { return (flags & kRowProcessed) != 0; }
  // Field-wise; like float ==, a digest with NaN statistics is unequal to
  // itself.
  friend bool operator==(const RowDigest&, const RowDigest&) = default;
};

// The capture policy's per-row parameters.
struct DigestOptions {
  std::uint32_t top_k = kDefaultTopK;             // 1 ... kMaxTopK; clamped to the vocabulary
  std::int32_t target_id = kNoTarget;             // kNoTarget or an id in [0, vocab)
  DigestVersion version = kCurrentDigestVersion;  // kV1 or kV2
};

// Digest fields without the top-k list (the C ABI returns the list separately).
struct RowSummary {
  DigestVersion version = kCurrentDigestVersion;
  std::uint32_t vocab_size = 0;
  std::uint32_t flags = 0;
  std::int32_t argmax = -1;
  std::uint32_t top_count = 0;  // entries written to the caller's top buffer
  double logsumexp = 0.0;
  double entropy = 0.0;
  RowHash hash;
  std::int32_t target_id = kNoTarget;
  float target_logit = 0.0f;
};

// Checks the request without reading the row: non-empty row of at most
// INT32_MAX entries, 1 <= top_k <= kMaxTopK, target in range, a known
// version. Returns InvalidArgument otherwise.
Status ValidateDigestRequest(std::size_t vocab_size, const DigestOptions& options);

// Number of top entries a row of `vocab_size` yields at most: min(top_k,
// vocab_size).
std::size_t TopCapacityNeeded(std::size_t vocab_size, const DigestOptions& options);

// Digests `row` into `summary` and the first summary->top_count entries of
// `top`. `top` must hold TopCapacityNeeded() entries. Never allocates. Rows
// with NaN or +inf are digested deterministically and flagged, never rejected.
// Errors: InvalidArgument from ValidateDigestRequest, or when `top` is too
// small.
Status DigestRowInto(std::span<const float> row, const DigestOptions& options,
                     std::span<TokenLogit> top, RowSummary* summary);

// As DigestRowInto, into a reusable RowDigest: `out->top` is resized in place,
// so a digest reused across rows allocates only when k grows. On error `out` is
// unchanged.
Status ComputeRowDigest(std::span<const float> row, const DigestOptions& options, RowDigest* out);

}  // namespace orch::digest
