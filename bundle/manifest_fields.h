// Typed readers of a bundle manifest's fields (docs/bundles.md), shared by the plan and
// the result bundle: each returns the field's value, or InvalidArgument naming it
// ("manifest.runs[2].job missing or not a string") when it is absent or of another
// type. `where` is the object's path in the manifest ("manifest", "manifest.runs[2]").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace orch::bundle {

Result<std::string> StringField(const nlohmann::json& object, std::string_view where,
                                std::string_view field);
Result<std::int64_t> IntField(const nlohmann::json& object, std::string_view where,
                              std::string_view field);
Result<std::uint64_t> UnsignedField(const nlohmann::json& object, std::string_view where,
                                    std::string_view field);
// A list of strings.
Result<std::vector<std::string>> StringListField(const nlohmann::json& object,
                                                 std::string_view where, std::string_view field);
// A list of anything (its items are the caller's to read).
Result<const nlohmann::json*> ListField(const nlohmann::json& object, std::string_view where,
                                        std::string_view field);

}  // namespace orch::bundle
