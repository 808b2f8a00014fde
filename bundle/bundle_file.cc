#include "bundle/bundle_file.h"

#include <sodium.h>
#include <zstd.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "base/sha256.h"

namespace orch::bundle {
namespace {

using nlohmann::json;

constexpr std::string_view kSignedPrefix("orch-bundle/1\0", 14);
constexpr size_t kSectionHeader = 4 + 8;

std::string SignedBytes(std::string_view manifest) {
  std::string out(kSignedPrefix);
  out.append(manifest);
  return out;
}

void AppendSection(std::string& out, std::string_view tag, std::string_view payload) {
  out.append(tag);
  for (int shift = 56; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((static_cast<uint64_t>(payload.size()) >> shift) & 0xff));
  }
  out.append(payload);
}

// Reads sections in order from a bundle file; errors name the file and the section.
class SectionReader {
 public:
  SectionReader(std::string_view bytes, std::string file) : bytes_(bytes), file_(std::move(file)) {}

  Status Header() {
    if (bytes_.size() < kMagic.size() + 1 || bytes_.substr(0, kMagic.size()) != kMagic) {
      return Fail("not an orch bundle (it does not start with " + std::string(kMagic) + ")");
    }
    auto version = static_cast<uint8_t>(bytes_[kMagic.size()]);
    if (version != kFormatVersion) {
      return Fail("bundle format version " + std::to_string(version) + ", this orch reads " +
                  std::to_string(kFormatVersion) +
                  (version > kFormatVersion ? " (written by a newer orch)" : ""));
    }
    at_ = kMagic.size() + 1;
    return Status::Ok();
  }

  // The payload of the next section, which must have tag `tag` and at most `limit` bytes;
  // `what` names it in errors ("the manifest", "blob 3 (runs/r1/digests)").
  Result<std::string_view> Next(std::string_view tag, uint64_t limit, const std::string& what) {
    if (bytes_.size() - at_ < kSectionHeader) {
      return Fail("truncated: " + what + " is missing (the file ends at byte " +
                  std::to_string(bytes_.size()) + ")");
    }
    std::string_view got_tag = bytes_.substr(at_, 4);
    if (got_tag != tag) {
      return Fail(what + ": expected section " + std::string(tag) + " at byte " +
                  std::to_string(at_) + ", found other bytes (damaged framing)");
    }
    uint64_t size = 0;
    for (size_t i = 0; i < 8; ++i) {
      size = (size << 8) | static_cast<uint8_t>(bytes_[at_ + 4 + i]);
    }
    if (size > limit) {
      return Fail(what + ": section of " + std::to_string(size) + " bytes is over the limit of " +
                  std::to_string(limit));
    }
    if (size > bytes_.size() - at_ - kSectionHeader) {
      return Fail("truncated: " + what + " announces " + std::to_string(size) +
                  " bytes, the file has " + std::to_string(bytes_.size() - at_ - kSectionHeader));
    }
    std::string_view payload = bytes_.substr(at_ + kSectionHeader, size);
    at_ += kSectionHeader + size;
    return payload;
  }

  Status End() {
    if (at_ == bytes_.size()) return Status::Ok();
    return Fail(std::to_string(bytes_.size() - at_) +
                " bytes follow the last blob the manifest lists");
  }

  Status Fail(const std::string& what) const {
    return InvalidArgument("bundle " + file_ + ": " + what);
  }

 private:
  std::string_view bytes_;
  std::string file_;
  size_t at_ = 0;
};

Result<std::string> Compress(std::string_view data) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3);
  if (ZSTD_isError(n)) {
    return Status(StatusCode::kInternal, std::string("zstd: ") + ZSTD_getErrorName(n));
  }
  out.resize(n);
  return out;
}

using DCtxPtr = std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)>;

// A decompression context that refuses windows above kMaxWindowLog.
Result<DCtxPtr> MakeDCtx() {
  DCtxPtr dctx(ZSTD_createDCtx(), &ZSTD_freeDCtx);
  if (dctx == nullptr ||
      ZSTD_isError(ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax, kMaxWindowLog))) {
    return Status(StatusCode::kInternal, "zstd: no decompression context");
  }
  return dctx;
}

// Inflates a frame that must hold exactly `size` bytes. The output grows with what the
// frame yields (doubling from 64 KiB, never past `size`), so a frame that claims more
// than it holds costs only what it holds.
Result<std::string> Inflate(ZSTD_DCtx* dctx, std::string_view frame, uint64_t size) {
  unsigned long long declared = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR || declared == ZSTD_CONTENTSIZE_UNKNOWN ||
      declared != size) {
    return InvalidArgument("not a zstd frame of the size the manifest gives");
  }
  ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
  constexpr uint64_t kFirstStep = 64 << 10;
  std::string out;
  ZSTD_inBuffer in{frame.data(), frame.size(), 0};
  size_t produced = 0;
  for (;;) {
    if (produced == out.size() && out.size() < size) {
      out.resize(std::min<uint64_t>(size, std::max<uint64_t>(kFirstStep, 2 * out.size())));
    }
    ZSTD_outBuffer sink{out.data(), out.size(), produced};
    size_t in_before = in.pos;
    size_t left = ZSTD_decompressStream(dctx, &sink, &in);
    if (ZSTD_isError(left)) return InvalidArgument(std::string("zstd: ") + ZSTD_getErrorName(left));
    bool progressed = in.pos != in_before || sink.pos != produced;
    produced = sink.pos;
    if (left == 0) break;  // the frame is whole
    if (!progressed) {
      return InvalidArgument(produced < size ? "zstd: the frame ends early"
                                             : "zstd: the frame inflates past its size");
    }
  }
  if (in.pos != in.size) return InvalidArgument("bytes follow the zstd frame");
  if (produced != size) return InvalidArgument("zstd: short frame");
  return out;
}

// The deepest nesting of arrays and objects in a JSON text (brackets in strings do not
// count); stops counting at `limit` + 1.
int JsonDepth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size() && deepest <= limit; ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// The manifest with only its `signer` kept: before the signature is verified the
// manifest is a stranger's text, so nothing else of it is held in memory.
json SignerPart(std::string_view manifest_text) {
  bool in_signer = false;  // between the top-level key "signer" and the next top-level key
  json::parser_callback_t keep_signer = [&in_signer](int depth, json::parse_event_t event,
                                                     json& parsed) {
    if (depth == 0) return true;  // the top-level value itself, emptied of the rest
    if (depth == 1 && event == json::parse_event_t::key) in_signer = parsed == "signer";
    return in_signer;
  };
  return json::parse(manifest_text, keep_signer, /*allow_exceptions=*/false);
}

// The signer object of a manifest.
Result<protocol::PublicIdentity> SignerOf(const json& manifest) {
  const json* signer = manifest.contains("signer") ? &manifest.at("signer") : nullptr;
  if (signer == nullptr || !signer->is_object()) return InvalidArgument("manifest.signer missing");
  protocol::PublicIdentity id;
  for (auto [field, out] :
       {std::pair{"name", &id.name}, std::pair{"role", &id.role},
        std::pair{"ed25519", &id.sign_public}, std::pair{"curve", &id.curve_public}}) {
    if (!signer->contains(field) || !signer->at(field).is_string()) {
      return InvalidArgument(std::string("manifest.signer.") + field + " missing or not a string");
    }
    *out = signer->at(field).get<std::string>();
  }
  return id;
}

}  // namespace

const Blob* OpenedBundle::Find(std::string_view name) const {
  for (const Blob& blob : blobs) {
    if (blob.name == name) return &blob;
  }
  return nullptr;
}

Result<std::string> WriteBundle(const BundleContent& content,
                                const protocol::SecretIdentity& signer) {
  std::vector<FramedBlob> framed;
  for (const Blob& blob : content.blobs) {
    ORCH_ASSIGN_OR_RETURN(std::string frame, Compress(blob.data));
    framed.push_back({blob.name, blob.data.size(), std::move(frame)});
  }
  return WriteFramedBundle(content.kind, content.fields_json, framed, signer);
}

Result<std::string> WriteFramedBundle(std::string_view kind, std::string_view fields_json,
                                      const std::vector<FramedBlob>& blobs_in,
                                      const protocol::SecretIdentity& signer) {
  if (sodium_init() < 0) return Status(StatusCode::kInternal, "libsodium did not initialise");
  json manifest = json::parse(fields_json, nullptr, /*allow_exceptions=*/false);
  if (!manifest.is_object()) return InvalidArgument("bundle fields must be a JSON object");
  manifest["schema"] = kSchema;
  manifest["kind"] = kind;
  const protocol::PublicIdentity& id = signer.identity;
  manifest["signer"] = {{"name", id.name},
                        {"role", id.role},
                        {"ed25519", id.sign_public},
                        {"curve", id.curve_public}};
  json blobs = json::array();
  std::set<std::string> names;
  for (const FramedBlob& blob : blobs_in) {
    if (!ValidBlobName(blob.name) || !names.insert(blob.name).second) {
      return InvalidArgument("blob name '" + blob.name + "' is not a valid blob name or repeated");
    }
    blobs.push_back({{"name", blob.name}, {"sha256", Sha256Hex(blob.frame)}, {"size", blob.size}});
  }
  manifest["blobs"] = std::move(blobs);
  std::string manifest_text = manifest.dump();

  ORCH_ASSIGN_OR_RETURN(std::string secret, protocol::Z85Decode(signer.sign_secret));
  if (secret.size() != crypto_sign_SECRETKEYBYTES) {
    return InvalidArgument("signing key of " + id.name + " is not an Ed25519 secret key");
  }
  std::string to_sign = SignedBytes(manifest_text);
  unsigned char signature[crypto_sign_BYTES];
  crypto_sign_detached(signature, nullptr, reinterpret_cast<const unsigned char*>(to_sign.data()),
                       to_sign.size(), reinterpret_cast<const unsigned char*>(secret.data()));
  sodium_memzero(secret.data(), secret.size());

  std::string out(kMagic);
  out.push_back(static_cast<char>(kFormatVersion));
  AppendSection(out, "MANI", manifest_text);
  AppendSection(out, "SIGN",
                std::string_view(reinterpret_cast<const char*>(signature), sizeof signature));
  for (const FramedBlob& blob : blobs_in) AppendSection(out, "BLOB", blob.frame);
  return out;
}

namespace {

// Deeper manifests are refused before they are parsed (orch writes depth 3).
constexpr int kMaxManifestDepth = 32;

// One manifest.blobs entry with its framed bytes.
struct BlobEntry {
  std::string name;
  std::string sha256;
  uint64_t size = 0;
  std::string_view frame;
};

// The manifest's signer, its signature verified over the manifest as stored.
Result<protocol::PublicIdentity> VerifiedSigner(std::string_view manifest_text,
                                                std::string_view signature,
                                                const SectionReader& reader) {
  if (JsonDepth(manifest_text, kMaxManifestDepth) > kMaxManifestDepth) {
    return reader.Fail("the manifest nests deeper than " + std::to_string(kMaxManifestDepth) +
                       " levels (damaged)");
  }
  json signer_part = SignerPart(manifest_text);
  if (!signer_part.is_object()) return reader.Fail("the manifest is not a JSON object (damaged)");
  Result<protocol::PublicIdentity> signer = SignerOf(signer_part);
  if (!signer.ok()) return reader.Fail(signer.status().message());
  Result<std::string> public_key = protocol::Z85Decode(signer->sign_public);
  if (!public_key.ok() || public_key->size() != crypto_sign_PUBLICKEYBYTES) {
    return reader.Fail("manifest.signer.ed25519 is not an Ed25519 public key");
  }
  std::string signed_bytes = SignedBytes(manifest_text);
  if (signature.size() != crypto_sign_BYTES ||
      crypto_sign_verify_detached(
          reinterpret_cast<const unsigned char*>(signature.data()),
          reinterpret_cast<const unsigned char*>(signed_bytes.data()), signed_bytes.size(),
          reinterpret_cast<const unsigned char*>(public_key->data())) != 0) {
    return reader.Fail("the signature does not verify with the key the manifest names (" +
                       signer->name + ", ed25519 " + signer->sign_public +
                       "): the manifest or the signature was altered, or another key signed it");
  }
  return signer;
}

// manifest.blobs, each with its section; the sizes they declare are summed into `total`.
Result<std::vector<BlobEntry>> BlobEntries(const json& blobs, SectionReader& reader,
                                           uint64_t& total) {
  if (!blobs.is_array() || blobs.size() > kMaxBlobs) {
    return reader.Fail("manifest.blobs is not a list of at most " + std::to_string(kMaxBlobs));
  }
  std::vector<BlobEntry> entries;
  std::set<std::string> names;
  for (size_t i = 0; i < blobs.size(); ++i) {
    const json& entry = blobs[i];
    std::string where = "manifest.blobs[" + std::to_string(i) + "]";
    if (!entry.is_object() || !entry.contains("name") || !entry.at("name").is_string() ||
        !entry.contains("sha256") || !entry.at("sha256").is_string() || !entry.contains("size") ||
        !entry.at("size").is_number_unsigned()) {
      return reader.Fail(where + " needs name, sha256 and size");
    }
    BlobEntry blob{entry.at("name").get<std::string>(),
                   entry.at("sha256").get<std::string>(),
                   entry.at("size").get<uint64_t>(),
                   {}};
    if (!ValidBlobName(blob.name) || !names.insert(blob.name).second || blob.size > kMaxBlobBytes) {
      return reader.Fail(where + ": name '" + blob.name +
                         "' is not a valid blob name (1..255 bytes of letters, digits, '.', "
                         "'_', '-', ':', '@' and '/'-separated parts, none '.' or '..') or "
                         "is repeated, or size " +
                         std::to_string(blob.size) + " is over the limit of " +
                         std::to_string(kMaxBlobBytes));
    }
    std::string what = "blob " + std::to_string(i) + " (" + blob.name + ")";
    ORCH_ASSIGN_OR_RETURN(blob.frame, reader.Next("BLOB", kMaxBlobBytes, what));
    total += blob.size;  // at most 2^20 blobs of at most 2^30 bytes: no overflow
    entries.push_back(std::move(blob));
  }
  ORCH_RETURN_IF_ERROR(reader.End());
  return entries;
}

}  // namespace

bool ValidBlobName(std::string_view name) {
  if (name.empty() || name.size() > 255) return false;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = std::min(name.find('/', start), name.size());
    std::string_view part = name.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    for (char c : part) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-' || c == ':' || c == '@';
      if (!ok) return false;
    }
    start = end + 1;
  }
  return true;
}

Result<OpenedBundle> ReadBundle(std::string_view bytes, std::string_view file,
                                const ReadOptions& options) {
  if (sodium_init() < 0) return Status(StatusCode::kInternal, "libsodium did not initialise");
  SectionReader reader(bytes, std::string(file));
  ORCH_RETURN_IF_ERROR(reader.Header());
  ORCH_ASSIGN_OR_RETURN(std::string_view manifest_text,
                        reader.Next("MANI", kMaxManifestBytes, "the manifest"));
  ORCH_ASSIGN_OR_RETURN(std::string_view signature,
                        reader.Next("SIGN", crypto_sign_BYTES, "the signature"));
  ORCH_ASSIGN_OR_RETURN(protocol::PublicIdentity signer,
                        VerifiedSigner(manifest_text, signature, reader));
  // Nothing the manifest declares is acted on before its signer is trusted.
  if (options.trust) ORCH_RETURN_IF_ERROR(options.trust(signer));

  json manifest = json::parse(manifest_text, nullptr, /*allow_exceptions=*/false);
  if (!manifest.is_object() || !manifest.contains("schema") || manifest.at("schema") != kSchema ||
      !manifest.contains("kind") || !manifest.at("kind").is_string() ||
      !manifest.contains("blobs")) {
    return reader.Fail("manifest.schema is not " + std::string(kSchema) +
                       " or manifest.kind or manifest.blobs is missing");
  }
  OpenedBundle opened;
  opened.signer = std::move(signer);
  opened.manifest_json = std::string(manifest_text);
  opened.kind = manifest.at("kind").get<std::string>();
  uint64_t total = 0;
  ORCH_ASSIGN_OR_RETURN(std::vector<BlobEntry> entries,
                        BlobEntries(manifest.at("blobs"), reader, total));
  if (total > options.max_bundle_bytes) {
    return InvalidArgument("bundle " + std::string(file) + ": its " +
                           std::to_string(entries.size()) + " blobs inflate to " +
                           std::to_string(total) + " bytes in all, above the limit of " +
                           std::to_string(options.max_bundle_bytes) +
                           " bytes (max_bundle_bytes); nothing was inflated");
  }
  ORCH_ASSIGN_OR_RETURN(DCtxPtr dctx, MakeDCtx());
  for (size_t i = 0; i < entries.size(); ++i) {
    BlobEntry& entry = entries[i];
    std::string what = "blob " + std::to_string(i) + " (" + entry.name + ")";
    if (Sha256Hex(entry.frame) != entry.sha256) {
      return reader.Fail(what + ": its SHA-256 is not the one the manifest lists (altered)");
    }
    Result<std::string> data = Inflate(dctx.get(), entry.frame, entry.size);
    if (!data.ok()) return reader.Fail(what + ": " + data.status().message());
    opened.blobs.push_back({std::move(entry.name), std::move(*data)});
  }
  opened.sha256 = Sha256Hex(bytes);
  return opened;
}

Status TrustedSigner(const protocol::PublicIdentity& signer,
                     const std::vector<protocol::PublicIdentity>& trusted,
                     std::string_view trust_hint,
                     const std::vector<protocol::PublicIdentity>& other_roles) {
  for (const protocol::PublicIdentity& key : trusted) {
    if (key.sign_public == signer.sign_public) {
      if (key.name == signer.name) return Status::Ok();
      return Status(StatusCode::kFailedPrecondition,
                    "bundle signed by key ed25519 " + signer.sign_public + " naming itself '" +
                        signer.name + "', but that key is trusted as '" + key.name + "'");
    }
  }
  for (const protocol::PublicIdentity& key : trusted) {
    if (key.name == signer.name) {
      return Status(StatusCode::kFailedPrecondition,
                    "bundle signed as '" + signer.name + "' with key ed25519 " +
                        signer.sign_public + ", which is not the trusted key of that name (" +
                        key.sign_public + ")");
    }
  }
  for (const protocol::PublicIdentity& key : other_roles) {
    if (key.sign_public != signer.sign_public) continue;
    // Copying it into the allowed keys again would change nothing: its role is the issue.
    return Status(StatusCode::kFailedPrecondition,
                  "bundle signed by '" + signer.name + "' (ed25519 " + signer.sign_public +
                      "), a key known here as '" + key.name + "' with role " + key.role +
                      "; result bundles need a key of role contributor: on the rig, make one "
                      "with `orch keygen NAME --role contributor` (a NAME no allowed key has), "
                      "have NAME.key copied into the allowed keys, and write the bundle again "
                      "signed by it (orch run --bundle ... --write-results --key "
                      "NAME.key_secret)");
  }
  std::string hint(trust_hint);
  for (size_t at = hint.find("{name}"); at != std::string::npos; at = hint.find("{name}")) {
    hint.replace(at, 6, signer.name);
  }
  return Status(StatusCode::kFailedPrecondition,
                "bundle signed by an unknown key: '" + signer.name + "' (ed25519 " +
                    signer.sign_public + "). To trust it, " + hint);
}

}  // namespace orch::bundle
