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
// Whatever is accepted is in the store whole: the bundle record, and every run it names
// complete with its provenance.
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
"cells":[{"label":"baseline"}],"jobs":[{"id":"j1","cell":"baseline"},
{"id":"j2","cell":"baseline"}]})";
constexpr int64_t kNow = 1'800'000'000'000;

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
  j1.plan_id = "exp";
  j2.id = "j2";
  j2.plan_id = "exp";
  (void)store->PutPlan({"exp", "exp", kPlanJson}, {j1, j2});
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
    bundle::BundleContent content{std::string(bundle::kResultKind), fields, {}};
    for (size_t i = 1; i < parts.size() && i <= std::size(kNames); ++i) {
      content.blobs.push_back({kNames[i - 1], parts[i] == "@plan" ? keys.plan_bundle : parts[i]});
    }
    Result<std::string> signed_file = bundle::WriteBundle(content, keys.carol);
    if (!signed_file.ok()) return 0;  // fields that are no JSON object, repeated names
    file = std::move(*signed_file);
  }
  std::unique_ptr<store::Store> store = LabStore();
  bundle::ImportContext context;
  context.trusted = {keys.carol.identity};
  context.coordinator_key = keys.lab.identity.sign_public;
  context.now_ms = kNow + 1000;
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
