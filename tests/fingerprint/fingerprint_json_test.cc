#include "fingerprint/fingerprint_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "fingerprint/diff.h"
#include "fingerprint/posix_command_runner.h"
#include "tests/fingerprint/fixture_fingerprints.h"

namespace orch::fingerprint {
namespace {

using nlohmann::json;
using testing::ExpectGolden;

TEST(CanonicalJsonTest, FixtureFingerprintsMatchTheirGoldenJson) {
  ExpectGolden("sapphire_rapids.json",
               ToCanonicalJson(testing::SapphireRapidsFingerprint()) + "\n");
  ExpectGolden("h100_box.json", ToCanonicalJson(testing::H100BoxFingerprint()) + "\n");
}

TEST(CanonicalJsonTest, KeysAreSortedAndThereIsNoWhitespace) {
  std::string text = ToCanonicalJson(testing::SapphireRapidsFingerprint());
  EXPECT_EQ(text.find('\n'), std::string::npos);
  EXPECT_EQ(text.find("\": "), std::string::npos);
  EXPECT_LT(text.find("\"engines\""), text.find("\"gpu\""));
  EXPECT_LT(text.find("\"gpu\""), text.find("\"host\""));
  EXPECT_EQ(text, json::parse(text).dump());  // nlohmann's std::map keeps keys sorted
}

TEST(CanonicalJsonTest, UnknownFactsCarryTheirReason) {
  Fingerprint fingerprint;
  fingerprint.host.memory_bytes = Probed<std::int64_t>::Unknown("/proc/meminfo: denied");
  json document = json::parse(ToCanonicalJson(fingerprint));
  EXPECT_EQ(document["host"]["memory_bytes"], json({{"unknown", "/proc/meminfo: denied"}}));
}

TEST(CanonicalJsonTest, ParsingTheCanonicalFormGivesItBack) {
  for (const Fingerprint& original :
       {testing::SapphireRapidsFingerprint(), testing::H100BoxFingerprint(), Fingerprint{}}) {
    std::string text = ToCanonicalJson(original);
    Result<Fingerprint> parsed = ParseFingerprintJson(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(ToCanonicalJson(*parsed), text);
  }
}

TEST(CanonicalJsonTest, PrettyPrintedInputHasTheSameId) {
  Fingerprint original = testing::H100BoxFingerprint();
  std::string pretty = json::parse(ToCanonicalJson(original)).dump(2);
  Result<Fingerprint> parsed = ParseFingerprintJson(pretty);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(FingerprintId(*parsed), FingerprintId(original));
}

TEST(CanonicalJsonTest, MalformedInputNamesTheProblem) {
  EXPECT_EQ(ParseFingerprintJson("{not json").status().message(), "not valid JSON");
  EXPECT_EQ(ParseFingerprintJson("[]").status().message(), "not a JSON object");
  json document = json::parse(ToCanonicalJson(Fingerprint{}));
  document["schema"] = 99;
  EXPECT_NE(ParseFingerprintJson(document.dump()).status().message().find("schema"),
            std::string::npos);
  document = json::parse(ToCanonicalJson(Fingerprint{}));
  document["host"]["cpu"]["family"] = "six";
  EXPECT_EQ(ParseFingerprintJson(document.dump()).status().message(),
            "not a fingerprint: host.cpu.family: expected an integer");
  document["host"]["cpu"].erase("family");
  EXPECT_EQ(ParseFingerprintJson(document.dump()).status().message(),
            "not a fingerprint: host.cpu.family: missing");
}

TEST(CanonicalJsonTest, IdIsFpAnd32HexDigits) {
  std::string id = FingerprintId(testing::SapphireRapidsFingerprint());
  ASSERT_EQ(id.size(), 35u);
  EXPECT_EQ(id.substr(0, 3), "fp-");
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef", 3), std::string::npos);
}

TEST(CanonicalJsonTest, IdIsStableAcrossTwoProcesses) {
  auto runner = MakePosixCommandRunner({.search_path = "", .environment = {"PATH=/usr/bin:/bin"}});
  Result<CommandOutput> first = runner->Run({FINGERPRINT_ID_TOOL});
  Result<CommandOutput> second = runner->Run({FINGERPRINT_ID_TOOL});
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_EQ(first->exit_code, 0) << first->stderr_text;
  EXPECT_EQ(first->stdout_text.substr(0, 3), "fp-");
  EXPECT_EQ(first->stdout_text, second->stdout_text);
}

// Changes one leaf of a JSON document in place, keeping its type.
void Mutate(json& leaf) {
  if (leaf.is_string())
    leaf = leaf.get<std::string>() + "x";
  else if (leaf.is_boolean())
    leaf = !leaf.get<bool>();
  else if (leaf.is_number_integer())
    leaf = leaf.get<std::int64_t>() + 1;
  else if (leaf.is_array())
    leaf.push_back("extra");
}

// Calls `visit` with the changed leaf's location and a copy of `document` in which exactly
// that leaf was changed.
void ForEachSingleLeafChange(const json& document, const json::json_pointer& at,
                             const std::function<void(const json::json_pointer&, json)>& visit) {
  const json& node = document[at];
  bool leaf =
      !node.is_structured() || (node.is_array() && (node.empty() || !node[0].is_structured()));
  if (node.is_object() && node.size() == 1 && node.contains("unknown")) {
    return ForEachSingleLeafChange(document, at / "unknown", visit);
  }
  if (leaf) {
    json copy = document;
    Mutate(copy[at]);
    return visit(at, copy);
  }
  if (node.is_object()) {
    for (const auto& item : node.items()) ForEachSingleLeafChange(document, at / item.key(), visit);
  } else {
    for (std::size_t i = 0; i < node.size(); ++i) ForEachSingleLeafChange(document, at / i, visit);
  }
}

TEST(CanonicalJsonTest, AnySingleFieldChangeChangesTheIdAndShowsInTheDiff) {
  Fingerprint base = testing::H100BoxFingerprint();
  std::set<std::string> ids = {FingerprintId(base)};
  int changes = 0;
  json document = json::parse(ToCanonicalJson(base));
  document.erase("schema");  // the schema version is not a field one can change alone
  ForEachSingleLeafChange(
      document, json::json_pointer(), [&](const json::json_pointer& at, json changed) {
        changed["schema"] = kSchemaVersion;
        Result<Fingerprint> parsed = ParseFingerprintJson(changed.dump());
        ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
        EXPECT_TRUE(ids.insert(FingerprintId(*parsed)).second) << at.to_string();
        // A model is keyed by its file name, so renaming its path moves the whole entry:
        // the old entry is absent in B and the new one absent in A.
        bool moves_model = at.to_string().starts_with("/models/") && at.back() == "path";
        EXPECT_EQ(Diff(base, *parsed).differences.size(), moves_model ? 2u : 1u) << at.to_string();
        ++changes;
      });
  EXPECT_GT(changes, 60);
}

}  // namespace
}  // namespace orch::fingerprint
