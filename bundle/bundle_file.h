// The bundle file (docs/bundles.md): a signed manifest and the blobs it lists.
//
//   "ORCHBNDL" (8 bytes), format version (1 byte, 1)
//   section "MANI": the manifest, canonical JSON (UTF-8)
//   section "SIGN": Ed25519 signature (64 bytes) of "orch-bundle/1\0" + the manifest
//   section "BLOB" once per manifest.blobs entry, in that order: the blob, zstd-compressed
//
// A section is a 4-byte ASCII tag, a big-endian u64 payload length, the payload. Nothing
// may follow the last blob. The manifest names its signer's key and, per blob, its name,
// the SHA-256 of its compressed bytes and its size before compression, so the signature
// covers every byte of the file but the framing; a reader checks a blob's hash before
// decompressing it and never inflates it past the size the manifest promises.
//
// ReadBundle checks everything in the file itself: framing, the signature against the
// key the manifest names, each blob. A bundle is hostile input until its signer is
// trusted, so the order is fixed: framing and the signature, then the caller's verdict on
// the signer (ReadOptions::trust, e.g. TrustedSigner), then the sizes the manifest
// declares against ReadOptions::max_bundle_bytes, and only then is any blob inflated,
// by streaming into a buffer that grows with what the frame really holds (never to a
// declared size up front). Errors name the file, the section or blob, and what failed;
// nothing is returned from a bundle that fails any check.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "protocol/identity_key.h"

namespace orch::bundle {

inline constexpr std::string_view kMagic = "ORCHBNDL";
inline constexpr uint8_t kFormatVersion = 1;
inline constexpr std::string_view kSchema = "orch.bundle/1";

// Limits a reader enforces (a bundle is hostile input until verified).
inline constexpr uint64_t kMaxManifestBytes = 64ull << 20;
inline constexpr uint64_t kMaxBlobBytes = 1ull << 30;  // one blob, uncompressed
inline constexpr uint64_t kMaxBlobs = 1'000'000;
// Every blob of one bundle together, uncompressed, unless the reader is given another
// limit (the coordinator's `max_bundle_bytes`, `orch import --max-bundle-bytes`).
inline constexpr uint64_t kDefaultMaxBundleBytes = 1ull << 30;
// The zstd window a reader accepts (2^24 = 16 MiB; orch writes frames at level 3, whose
// window is at most 2 MiB): a frame asking for more is refused before its window is
// allocated.
inline constexpr int kMaxWindowLog = 24;

// A blob name: 1..255 bytes of '/'-separated parts, each of letters, digits, '.', '_',
// '-', ':' and '@', none empty, "." or "..".
bool ValidBlobName(std::string_view name);

struct Blob {
  std::string name;  // ValidBlobName, unique within the bundle
  std::string data;  // uncompressed
};

// What the signer writes: the bundle's kind ("plan" or "result"), its kind-specific
// manifest fields (a JSON object; "schema", "kind", "signer" and "blobs" are added) and
// its blobs.
struct BundleContent {
  std::string kind;
  std::string fields_json = "{}";
  std::vector<Blob> blobs;
};

struct OpenedBundle {
  std::string sha256;  // of the whole file (hex): the bundle's identity
  std::string kind;
  std::string manifest_json;        // the manifest as signed
  protocol::PublicIdentity signer;  // as the manifest names it; the signature verified
  std::vector<Blob> blobs;          // in manifest order, hashes checked, decompressed

  const Blob* Find(std::string_view name) const;
};

// The bundle file's bytes, signed with `signer`'s Ed25519 key.
Result<std::string> WriteBundle(const BundleContent& content,
                                const protocol::SecretIdentity& signer);

// A blob as it is stored: the size the manifest gives and the frame, taken as they are.
struct FramedBlob {
  std::string name;
  uint64_t size = 0;
  std::string frame;
};
// WriteBundle's second half: signs a manifest of blobs already framed, without checking
// that a frame holds the size given (what a hostile writer could do; tests and fuzz
// targets make such bundles with it).
Result<std::string> WriteFramedBundle(std::string_view kind, std::string_view fields_json,
                                      const std::vector<FramedBlob>& blobs,
                                      const protocol::SecretIdentity& signer);

struct ReadOptions {
  // The verdict on the signer, after its signature verified and before any blob is
  // inflated; its error is returned as it is. Unset: a valid signature is enough (a file
  // its user chose to open; the caller checks the signer afterwards).
  std::function<Status(const protocol::PublicIdentity& signer)> trust;
  // The sizes the manifest declares, summed, must not exceed this (checked before any
  // blob is inflated); what is inflated never exceeds it either.
  uint64_t max_bundle_bytes = kDefaultMaxBundleBytes;
};

// Parses and checks a bundle file; `file` names it in errors.
Result<OpenedBundle> ReadBundle(std::string_view bytes, std::string_view file,
                                const ReadOptions& options = {});

// OK when `signer` is among `trusted` (same name and Ed25519 key). A key not there is
// FailedPrecondition naming its name and key and saying how to trust it (`trust_hint`,
// in which "{name}" becomes the signer's name); a trusted name with another key is
// refused too. A key among `other_roles` (admitted, but not to sign bundles) is told
// its role and that bundles need a key of role contributor, and how to make one.
Status TrustedSigner(const protocol::PublicIdentity& signer,
                     const std::vector<protocol::PublicIdentity>& trusted,
                     std::string_view trust_hint,
                     const std::vector<protocol::PublicIdentity>& other_roles = {});

}  // namespace orch::bundle
