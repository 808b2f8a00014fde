#include "digest/kl_divergence.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace orch::digest {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kRestFloor = 1e-30;

// log(sum_i exp(x_i)) in double; NaN when the row is not a distribution.
double LogSumExp(std::span<const float> logits) {
  double max = -kInf;
  for (const float x : logits) {
    if (std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
    max = std::max<double>(max, x);
  }
  if (std::isinf(max)) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0.0;
  for (const float x : logits) sum += std::exp(x - max);
  return max + std::log(sum);
}

// p log(p / q) with the conventions 0 log(0 / q) = 0 and p log(p / 0) = +inf.
double Term(double p, double q) {
  if (p <= 0.0) return 0.0;
  if (q <= 0.0) return kInf;
  return p * std::log(p / q);
}

// Adds token `id` of P to the buckets when Q knows its logit. Returns whether
// it did.
bool AddBucket(const RowDigest& p, const RowDigest& q, std::int32_t id, float p_logit, double* kld,
               double* p_mass, double* q_mass) {
  const std::optional<float> q_logit = KnownLogit(q, id);
  if (!q_logit) return false;
  const double log_p = p_logit - p.logsumexp;
  const double log_q = *q_logit - q.logsumexp;
  const double p_i = std::exp(log_p);
  *kld += p_i > 0.0 ? p_i * (log_p - log_q) : 0.0;
  *p_mass += p_i;
  *q_mass += std::exp(log_q);
  return true;
}

bool InTop(const RowDigest& digest, std::int32_t id) {
  return std::any_of(digest.top.begin(), digest.top.end(),
                     [id](const TokenLogit& t) { return t.id == id; });
}

}  // namespace

Result<double> ExactKlDivergence(std::span<const float> p_logits, std::span<const float> q_logits) {
  if (p_logits.empty() || p_logits.size() != q_logits.size()) {
    return InvalidArgument("kl divergence: rows of " + std::to_string(p_logits.size()) + " and " +
                           std::to_string(q_logits.size()) + " logits");
  }
  const double lse_p = LogSumExp(p_logits);
  const double lse_q = LogSumExp(q_logits);
  if (std::isnan(lse_p) || std::isnan(lse_q)) {
    return InvalidArgument(
        "kl divergence: a row is not a distribution (NaN, +inf or "
        "no finite logit)");
  }
  double kld = 0.0;
  for (std::size_t i = 0; i < p_logits.size(); ++i) {
    const double log_p = p_logits[i] - lse_p;
    const double log_q = q_logits[i] - lse_q;
    const double p = std::exp(log_p);
    if (p <= 0.0) continue;
    if (std::isinf(log_q)) return kInf;
    kld += p * (log_p - log_q);
  }
  return kld;
}

std::optional<float> KnownLogit(const RowDigest& digest, std::int32_t id) {
  for (const TokenLogit& t : digest.top) {
    if (t.id == id) return t.logit;
  }
  // A top-k-only row's target value is NaN when the server did not return it.
  if (digest.target_id != kNoTarget && digest.target_id == id && !std::isnan(digest.target_logit)) {
    return digest.target_logit;
  }
  return std::nullopt;
}

namespace {

// The bucketed KL both top-k estimators share (docs/metrics.md).
double BucketKl(const RowDigest& p, const RowDigest& q) {
  double kld = 0.0;
  double p_mass = 0.0;
  double q_mass = 0.0;
  for (const TokenLogit& t : p.top) {
    AddBucket(p, q, t.id, t.logit, &kld, &p_mass, &q_mass);
  }
  if (p.target_id != kNoTarget && !std::isnan(p.target_logit) && !InTop(p, p.target_id)) {
    AddBucket(p, q, p.target_id, p.target_logit, &kld, &p_mass, &q_mass);
  }
  const double p_rest = std::max(0.0, 1.0 - p_mass);
  const double q_rest = std::max(kRestFloor, 1.0 - q_mass);
  return kld + Term(p_rest, q_rest);
}

}  // namespace

double TopKKlDivergence(const RowDigest& p, const RowDigest& q) {
  ORCH_CHECK(p.is_distribution() && q.is_distribution())
      << "top-k KL of a row that is not a distribution";
  ORCH_CHECK(p.vocab_size == q.vocab_size) << "top-k KL across vocabularies";
  return BucketKl(p, q);
}

double ReturnedTopKKlDivergence(const RowDigest& p, const RowDigest& q) {
  ORCH_CHECK(p.is_distribution() && q.is_distribution())
      << "returned top-k KL of a row that is not a distribution";
  ORCH_CHECK(p.is_top_k_only() || q.is_top_k_only()) << "returned top-k KL of two full rows";
  const bool unknown_vocab =
      (p.is_top_k_only() && p.vocab_size == 0) || (q.is_top_k_only() && q.vocab_size == 0);
  ORCH_CHECK(p.vocab_size == q.vocab_size || unknown_vocab)
      << "returned top-k KL across vocabularies";
  return BucketKl(p, q);
}

double TailMass(const RowDigest& digest) {
  if (!digest.is_distribution()) return std::numeric_limits<double>::quiet_NaN();
  double mass = 0.0;
  for (const TokenLogit& t : digest.top) mass += std::exp(t.logit - digest.logsumexp);
  return std::max(0.0, 1.0 - mass);
}

}  // namespace orch::digest
