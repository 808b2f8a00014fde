// bundle_fuzzer: result bundles into a lab's store (bundle/result_bundle.h).
//
// The first byte picks what the rest is:
//   0: a bundle file as it arrives. Import must refuse it or store it, never crash;
//      ReadPlanBundle of the same bytes too.
//   1: the content of a bundle that a trusted contributor signed, so that the checks
//      after the signature are reached: parts of a u16 little-endian length and that many
//      bytes (a cut-off last part is dropped), the first the manifest's
//      fields (JSON), the others the blobs plan-bundle, fingerprints/fp-x,
//      runs/0/summary, runs/0/digests, runs/1/summary, runs/1/digests in turn; a blob
//      "@plan" is replaced by a real plan bundle of the lab's coordinator, and "@nonce"
//      in the fields by its nonce.
//   2: as 1, but each blob part is a frame taken as it is (WriteFramedBundle), so the
//      manifest's sizes and the frames need not agree: its first byte picks the frame
//      (0: the part's bytes from byte 5 on; 1, 2, 3: a zstd frame of 1 MiB, 64 MiB or
//      1 GiB of zeros, made once at start), bytes 1..4 (little-endian) the size the
//      manifest gives, in KiB.
// Whatever is accepted is in the store whole: the bundle record, and every run it names
// complete with its provenance. The import may inflate at most kCap bytes; scripts/fuzz
// runs this target with -malloc_limit_mb=64, so any single allocation past 64 MiB (a
// declared size inflated up front, a bomb inflated whole) is a finding.
#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bundle/bundle_file.h"
#include "bundle/plan_bundle.h"
#include "bundle/result_bundle.h"
#include "fuzz/fuzz_check.h"
#include "store/memory_store.h"

namespace {

using namespace orch;

constexpr char kPlanJson[] = R"({"schema":"orch.plan/1","experiment":{"name":"exp"},
"workloads":[{"name":"w","kind":"teacher_forced"}],"cells":[{"label":"baseline"}],
"jobs":[{"id":"j1","cell":"baseline","workload":"w"},{"id":"j2","cell":"baseline","workload":"w"}]})";
constexpr int64_t kNow = 1'800'000'000'000;
constexpr uint64_t kCap = 16 << 20;

struct Keys {
  protocol::SecretIdentity lab =
      std::move(protocol::GenerateIdentity("lab", "coordinator")).value();
  protocol::SecretIdentity carol =
      std::move(protocol::GenerateIdentity("carol", "contributor")).value();
  std::string plan_bundle;
  std::string nonce;
};

std::unique_ptr<store::Store> LabStore() {
  std::unique_ptr<store::Store> store = store::MakeMemoryStore();
  store::JobRecord j1, j2;
  j1.id = "j1";
  j1.experiment = "exp";
  j2.id = "j2";
  j2.experiment = "exp";
  (void)store->PutPlan({"exp", kPlanJson}, {j1, j2});
  return store;
}

const Keys& TheKeys() {
  static const Keys* keys = [] {
    auto* made = new Keys;
    std::unique_ptr<store::Store> store = LabStore();
    made->plan_bundle =
        std::move(bundle::ExportPlanBundle(*store, {"exp", {}, kNow, 86'400'000}, made->lab))
            .value();
    made->nonce = std::move(bundle::ReadPlanBundle(made->plan_bundle, "plan")).value().nonce;
    return made;
  }();
  return *keys;
}

// A zstd frame of `size` zeros, compressed 1 MiB at a time.
std::string ZerosFrame(uint64_t size) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setPledgedSrcSize(cctx, size);
  std::string zeros(1 << 20, '\0'), out, buffer(ZSTD_CStreamOutSize(), '\0');
  for (uint64_t done = 0;;) {
    uint64_t n = std::min<uint64_t>(zeros.size(), size - done);
    done += n;
    ZSTD_EndDirective end = done == size ? ZSTD_e_end : ZSTD_e_continue;
    ZSTD_inBuffer in{zeros.data(), n, 0};
    for (size_t left = 1; in.pos < in.size || (end == ZSTD_e_end && left != 0);) {
      ZSTD_outBuffer sink{buffer.data(), buffer.size(), 0};
      left = ZSTD_compressStream2(cctx, &sink, &in, end);
      if (ZSTD_isError(left)) std::abort();
      out.append(buffer.data(), sink.pos);
    }
    if (done == size) break;
  }
  ZSTD_freeCCtx(cctx);
  return out;
}

const std::vector<std::string>& Bombs() {
  static const auto* bombs = new std::vector<std::string>{ZerosFrame(1 << 20), ZerosFrame(64 << 20),
                                                          ZerosFrame(uint64_t{1} << 30)};
  return *bombs;
}

std::vector<std::string> Split(std::string_view text) {
  std::vector<std::string> parts;
  size_t at = 0;
  while (text.size() - at >= 2) {
    size_t n = static_cast<uint8_t>(text[at]) | (static_cast<uint8_t>(text[at + 1]) << 8);
    if (n > text.size() - at - 2) break;
    parts.emplace_back(text.substr(at + 2, n));
    at += 2 + n;
  }
  return parts;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)TheKeys();
  (void)Bombs();  // before libFuzzer's malloc limit applies
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const Keys& keys = TheKeys();
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string file;
  if (data[0] == 0) {
    file = std::string(rest);
    (void)bundle::ReadPlanBundle(file, "fuzz");
  } else {
    static const char* kNames[] = {"plan-bundle",    "fingerprints/fp-x", "runs/0/summary",
                                   "runs/0/digests", "runs/1/summary",    "runs/1/digests"};
    std::vector<std::string> parts = Split(rest);
    if (parts.empty()) return 0;
    std::string fields = parts[0];
    for (size_t at = fields.find("@nonce"); at != std::string::npos; at = fields.find("@nonce")) {
      fields.replace(at, 6, keys.nonce);
    }
    Result<std::string> signed_file = Status(StatusCode::kInternal, "no mode");
    if (data[0] == 1) {
      bundle::BundleContent content{std::string(bundle::kResultKind), fields, {}};
      for (size_t i = 1; i < parts.size() && i <= std::size(kNames); ++i) {
        content.blobs.push_back({kNames[i - 1], parts[i] == "@plan" ? keys.plan_bundle : parts[i]});
      }
      signed_file = bundle::WriteBundle(content, keys.carol);
    } else {
      std::vector<bundle::FramedBlob> blobs;
      for (size_t i = 1; i < parts.size() && i <= std::size(kNames); ++i) {
        const std::string& part = parts[i];
        if (part.size() < 5) continue;
        uint64_t kib = 0;
        for (int b = 4; b >= 1; --b) kib = (kib << 8) | static_cast<uint8_t>(part[b]);
        uint8_t pick = static_cast<uint8_t>(part[0]) % 4;
        blobs.push_back({kNames[i - 1], kib << 10, pick == 0 ? part.substr(5) : Bombs()[pick - 1]});
      }
      signed_file = bundle::WriteFramedBundle(bundle::kResultKind, fields, blobs, keys.carol);
    }
    if (!signed_file.ok()) return 0;  // fields that are no JSON object, repeated names
    file = std::move(*signed_file);
  }
  std::unique_ptr<store::Store> store = LabStore();
  bundle::ImportContext context;
  context.trusted = {keys.carol.identity};
  context.coordinator_key = keys.lab.identity.sign_public;
  context.now_ms = kNow + 1000;
  context.max_bundle_bytes = kCap;
  Result<bundle::ImportResult> imported = bundle::ImportResultBundle(*store, file, "fuzz", context);
  if (!imported.ok()) {
    FUZZ_EXPECT(store->GetSigner(keys.carol.identity.sign_public).status().code() ==
                StatusCode::kNotFound);
    return 0;
  }
  Result<store::BundleRecord> record = store->GetBundle(imported->sha256);
  FUZZ_EXPECT(record.ok());
  FUZZ_EXPECT(record->run_ids.size() == static_cast<size_t>(imported->runs));
  for (const std::string& run_id : record->run_ids) {
    Result<store::RunRecord> run = store->GetRun(run_id);
    FUZZ_EXPECT(run.ok() && run->Complete() && run->contributor == "carol");
  }
  return 0;
}
