#include "bundle/bundle_file.h"

#include <sodium.h>
#include <zstd.h>

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

// Decompresses a frame that must hold exactly `size` bytes.
Result<std::string> Decompress(std::string_view frame, uint64_t size) {
  unsigned long long declared = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR || declared == ZSTD_CONTENTSIZE_UNKNOWN ||
      declared != size) {
    return InvalidArgument("not a zstd frame of the size the manifest gives");
  }
  std::string out(size, '\0');
  size_t n = ZSTD_decompress(out.data(), out.size(), frame.data(), frame.size());
  if (ZSTD_isError(n) || n != size) {
    return InvalidArgument(std::string("zstd: ") +
                           (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short frame"));
  }
  return out;
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
  if (sodium_init() < 0) return Status(StatusCode::kInternal, "libsodium did not initialise");
  json manifest = json::parse(content.fields_json, nullptr, /*allow_exceptions=*/false);
  if (!manifest.is_object()) return InvalidArgument("bundle fields must be a JSON object");
  manifest["schema"] = kSchema;
  manifest["kind"] = content.kind;
  const protocol::PublicIdentity& id = signer.identity;
  manifest["signer"] = {{"name", id.name},
                        {"role", id.role},
                        {"ed25519", id.sign_public},
                        {"curve", id.curve_public}};
  json blobs = json::array();
  std::vector<std::string> frames;
  std::set<std::string> names;
  for (const Blob& blob : content.blobs) {
    if (blob.name.empty() || blob.name.size() > 255 || !names.insert(blob.name).second) {
      return InvalidArgument("blob name '" + blob.name + "' is empty, too long or repeated");
    }
    ORCH_ASSIGN_OR_RETURN(std::string frame, Compress(blob.data));
    blobs.push_back(
        {{"name", blob.name}, {"sha256", Sha256Hex(frame)}, {"size", blob.data.size()}});
    frames.push_back(std::move(frame));
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
  for (const std::string& frame : frames) AppendSection(out, "BLOB", frame);
  return out;
}

Result<OpenedBundle> ReadBundle(std::string_view bytes, std::string_view file) {
  if (sodium_init() < 0) return Status(StatusCode::kInternal, "libsodium did not initialise");
  SectionReader reader(bytes, std::string(file));
  ORCH_RETURN_IF_ERROR(reader.Header());
  ORCH_ASSIGN_OR_RETURN(std::string_view manifest_text,
                        reader.Next("MANI", kMaxManifestBytes, "the manifest"));
  ORCH_ASSIGN_OR_RETURN(std::string_view signature,
                        reader.Next("SIGN", crypto_sign_BYTES, "the signature"));

  json manifest = json::parse(manifest_text, nullptr, /*allow_exceptions=*/false);
  if (!manifest.is_object()) return reader.Fail("the manifest is not a JSON object (damaged)");
  Result<protocol::PublicIdentity> signer = SignerOf(manifest);
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

  OpenedBundle opened;
  opened.signer = *signer;
  opened.manifest_json = std::string(manifest_text);
  if (!manifest.contains("schema") || manifest.at("schema") != kSchema ||
      !manifest.contains("kind") || !manifest.at("kind").is_string() ||
      !manifest.contains("blobs")) {
    return reader.Fail("manifest.schema is not " + std::string(kSchema) +
                       " or manifest.kind or manifest.blobs is missing");
  }
  opened.kind = manifest.at("kind").get<std::string>();
  const json& blobs = manifest.at("blobs");
  if (!blobs.is_array() || blobs.size() > kMaxBlobs) {
    return reader.Fail("manifest.blobs is not a list of at most " + std::to_string(kMaxBlobs));
  }
  std::set<std::string> names;
  for (size_t i = 0; i < blobs.size(); ++i) {
    const json& entry = blobs[i];
    std::string where = "manifest.blobs[" + std::to_string(i) + "]";
    if (!entry.is_object() || !entry.contains("name") || !entry.at("name").is_string() ||
        !entry.contains("sha256") || !entry.at("sha256").is_string() || !entry.contains("size") ||
        !entry.at("size").is_number_unsigned()) {
      return reader.Fail(where + " needs name, sha256 and size");
    }
    std::string name = entry.at("name").get<std::string>();
    uint64_t size = entry.at("size").get<uint64_t>();
    if (name.empty() || name.size() > 255 || !names.insert(name).second || size > kMaxBlobBytes) {
      return reader.Fail(where + ": name '" + name + "' empty, repeated or too long, or size " +
                         std::to_string(size) + " over the limit");
    }
    std::string what = "blob " + std::to_string(i) + " (" + name + ")";
    ORCH_ASSIGN_OR_RETURN(std::string_view frame, reader.Next("BLOB", kMaxBlobBytes, what));
    if (Sha256Hex(frame) != entry.at("sha256").get<std::string>()) {
      return reader.Fail(what + ": its SHA-256 is not the one the manifest lists (altered)");
    }
    Result<std::string> data = Decompress(frame, size);
    if (!data.ok()) return reader.Fail(what + ": " + data.status().message());
    opened.blobs.push_back({std::move(name), std::move(*data)});
  }
  ORCH_RETURN_IF_ERROR(reader.End());
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
