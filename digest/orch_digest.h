/* C ABI of the digest library, for engine drivers written in any language
 * (Python through ctypes, C, Rust). It wraps the one C++ implementation
 * (row_digest.h, kl_divergence.h), so every driver produces bit-identical
 * digests.
 *
 * Contract: plain structs and fixed-width integers only; no call allocates,
 * throws or keeps a pointer after it returns; every call is thread-safe on
 * distinct outputs. Every function returns an orch_digest_status; outputs are
 * written only on ORCH_DIGEST_OK. Float rows are IEEE-754 binary32 in host
 * (little-endian) order.
 */
#ifndef ORCH_DIGEST_ORCH_DIGEST_H_
#define ORCH_DIGEST_ORCH_DIGEST_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a struct layout or a function signature changes (functions are
 * only ever added without a bump: orch_digest_row_versioned came with digest
 * v2). */
#define ORCH_DIGEST_ABI_VERSION 1

/* Status codes (int32_t). */
#define ORCH_DIGEST_OK 0
/* Empty row, k or target out of range. */
#define ORCH_DIGEST_INVALID_ARGUMENT 1
/* The top buffer is below min(top_k, vocab). */
#define ORCH_DIGEST_BUFFER_TOO_SMALL 2
#define ORCH_DIGEST_NULL_POINTER 3
#define ORCH_DIGEST_INTERNAL 4 /* a bug: please report */

/* Row flags (orch_row_digest.flags). The first three say why a row is not a
 * distribution (none of them set: it is one); the last two say what kind of
 * row was digested and never make it "not a distribution". */
#define ORCH_DIGEST_ROW_HAS_NAN 1u
#define ORCH_DIGEST_ROW_HAS_POS_INF 2u
#define ORCH_DIGEST_ROW_NO_FINITE_LOGIT 4u
/* A server's K most likely tokens as raw log-probabilities, not the full row
 * (orch_digest_top_logprobs). */
#define ORCH_ROW_TOP_K_ONLY 8u
/* With ORCH_ROW_TOP_K_ONLY: values after the server's sampling transforms
 * (temperature, top-k/top-p), not the model's distribution. */
#define ORCH_ROW_PROCESSED 16u

/* No teacher-forced target token. */
#define ORCH_DIGEST_NO_TARGET (-1)
#define ORCH_DIGEST_DEFAULT_TOP_K 20u
#define ORCH_DIGEST_MAX_TOP_K 1024u

/* Digest versions (docs/metrics.md, "Digest versions"): how logsumexp and
 * entropy are computed. Hash, flags, top-k, argmax and target logit are the
 * same in every version. A position record's version byte is its digest's. */
#define ORCH_DIGEST_VERSION_1 1u
#define ORCH_DIGEST_VERSION_2 2u
#define ORCH_DIGEST_VERSION_CURRENT ORCH_DIGEST_VERSION_2

typedef int32_t orch_digest_status;

typedef struct orch_token_logit {
  int32_t id;
  float logit;
} orch_token_logit;

/* Summary of one row; the top-k list goes to the caller's orch_token_logit
 * buffer. Field meanings as in digest/row_digest.h (RowDigest). 56 bytes, no
 * padding. */
typedef struct orch_row_digest {
  uint32_t vocab_size;
  uint32_t flags;     /* ORCH_DIGEST_ROW_* and ORCH_ROW_* bits */
  int32_t argmax;     /* -1 when every logit is NaN */
  uint32_t top_count; /* entries written to the top buffer, best first */
  double logsumexp;   /* NaN when not a distribution; 0 for a top-k-only row */
  double entropy;     /* nats; NaN when not a distribution or top-k-only */
  uint64_t hash_low;  /* XXH3-128 of the row bytes (top-k-only: of the pairs) */
  uint64_t hash_high;
  int32_t target_id; /* ORCH_DIGEST_NO_TARGET when none */
  float target_logit;
} orch_row_digest;

uint32_t orch_digest_abi_version(void);

/* Static, never-NULL name of a status code ("OK", "INVALID_ARGUMENT", ...). */
const char* orch_digest_status_name(orch_digest_status status);

/* Digests `row[0..vocab_size)` by digest version `digest_version`
 * (ORCH_DIGEST_VERSION_*; INVALID_ARGUMENT for any other): top `top_k` logits
 * (ties to the lower id) into `top[0..top_capacity)`, and the summary into
 * `*out`. `target_id` is the teacher-forced next token or
 * ORCH_DIGEST_NO_TARGET. NaN/+inf rows are digested and flagged, not rejected.
 * Needs top_capacity >= min(top_k, vocab_size). Drivers pass
 * ORCH_DIGEST_VERSION_CURRENT and write the same number as their records'
 * version. */
orch_digest_status orch_digest_row_versioned(uint32_t digest_version, const float* row,
                                             uint64_t vocab_size, uint32_t top_k, int32_t target_id,
                                             orch_token_logit* top, uint32_t top_capacity,
                                             orch_row_digest* out);

/* orch_digest_row_versioned with ORCH_DIGEST_VERSION_1, as in every library
 * before digest v2: callers that write version-1 records keep getting the
 * digests those records promise. */
orch_digest_status orch_digest_row(const float* row, uint64_t vocab_size, uint32_t top_k,
                                   int32_t target_id, orch_token_logit* top, uint32_t top_capacity,
                                   orch_row_digest* out);

/* Exact KL(P || Q) in nats of two full rows of `vocab_size` logits, into
 * `*out`. INVALID_ARGUMENT when either row is not a distribution. */
orch_digest_status orch_digest_kl_divergence_exact(const float* p_logits, const float* q_logits,
                                                   uint64_t vocab_size, double* out);

/* Digest of a top-k-only row: the `k` (id, log-probability) pairs a server
 * returned for one position (`ids[i]` with `logprobs[i]`, any order), of a
 * vocabulary of `vocab_size` tokens (0: unknown). Writes the k pairs into
 * `top[0..k)` sorted by value descending, ties by lower id (NaN values last),
 * and into `*out`: flags = ORCH_ROW_TOP_K_ONLY | extra_flags (| HAS_NAN,
 * HAS_POS_INF, NO_FINITE_LOGIT as for a full row), argmax = top[0].id,
 * logsumexp = 0 (NaN when not a distribution), entropy = NaN (unavailable),
 * hash = XXH3-128 of the sorted pairs' bytes (int32 id, float32 bits, both
 * little-endian, pair after pair): two top-k rows hash equal iff they returned
 * the same ids with the same bits. `target_id` is the teacher-forced token or
 * ORCH_DIGEST_NO_TARGET; `target_logprob` its log-probability, NaN when the
 * server did not return it (taken from the pairs when the target is among
 * them). `extra_flags` is 0 or ORCH_ROW_PROCESSED; `digest_version` the
 * version byte the record will carry (ORCH_DIGEST_VERSION_*).
 * INVALID_ARGUMENT: k == 0, k > ORCH_DIGEST_MAX_TOP_K, a negative or repeated
 * id, an id or target not below a known vocab_size, another extra flag, an
 * unknown version. BUFFER_TOO_SMALL: top_capacity < k. */
orch_digest_status orch_digest_top_logprobs(uint32_t digest_version, const int32_t* ids,
                                            const float* logprobs, uint32_t k, uint64_t vocab_size,
                                            int32_t target_id, float target_logprob,
                                            uint32_t extra_flags, orch_token_logit* top,
                                            uint32_t top_capacity, orch_row_digest* out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ORCH_DIGEST_ORCH_DIGEST_H_ */
