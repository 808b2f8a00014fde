#include "bundle/manifest_fields.h"

namespace orch::bundle {
namespace {

using nlohmann::json;

// The field when `object` has it and `is_type` holds for it; else nullptr.
template <typename Check>
const json* Find(const json& object, std::string_view field, Check is_type) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(std::string(field));
  if (it == object.end() || !is_type(*it)) return nullptr;
  return &*it;
}

Status Missing(std::string_view where, std::string_view field, std::string_view what) {
  return InvalidArgument(std::string(where) + "." + std::string(field) + " missing or not " +
                         std::string(what));
}

}  // namespace

Result<std::string> StringField(const json& object, std::string_view where,
                                std::string_view field) {
  const json* value = Find(object, field, [](const json& v) { return v.is_string(); });
  if (value == nullptr) return Missing(where, field, "a string");
  return value->get<std::string>();
}

Result<std::int64_t> IntField(const json& object, std::string_view where, std::string_view field) {
  const json* value = Find(object, field, [](const json& v) { return v.is_number_integer(); });
  if (value == nullptr) return Missing(where, field, "an integer");
  return value->get<std::int64_t>();
}

Result<std::uint64_t> UnsignedField(const json& object, std::string_view where,
                                    std::string_view field) {
  const json* value = Find(object, field, [](const json& v) { return v.is_number_unsigned(); });
  if (value == nullptr) return Missing(where, field, "an unsigned integer");
  return value->get<std::uint64_t>();
}

Result<std::vector<std::string>> StringListField(const json& object, std::string_view where,
                                                 std::string_view field) {
  ORCH_ASSIGN_OR_RETURN(const json* list, ListField(object, where, field));
  std::vector<std::string> out;
  for (const json& item : *list) {
    if (!item.is_string()) {
      return InvalidArgument(std::string(where) + "." + std::string(field) + ": not text");
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

Result<const json*> ListField(const json& object, std::string_view where, std::string_view field) {
  const json* value = Find(object, field, [](const json& v) { return v.is_array(); });
  if (value == nullptr) return Missing(where, field, "a list");
  return value;
}

}  // namespace orch::bundle
