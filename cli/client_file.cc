#include "cli/client_file.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/files.h"

namespace orch::cli {
namespace {

constexpr const char* kSchema = "orch.client/1";

// The string field `name` of `doc`; the error names the file and the field.
Result<std::string> Field(const nlohmann::json& doc, const char* name, const std::string& path) {
  auto it = doc.find(name);
  if (it == doc.end() || !it->is_string()) {
    return InvalidArgument(path + ": field \"" + name + "\" is missing or not a string");
  }
  return it->get<std::string>();
}

}  // namespace

std::string ClientFilePath(const std::string& data_dir) {
  return (std::filesystem::path(data_dir) / "client.json").string();
}

Status WriteClientFile(const std::string& data_dir, const ClientFile& file) {
  nlohmann::json doc = {{"schema", kSchema},
                        {"coordinator", file.coordinator},
                        {"key", file.key},
                        {"coordinator_key", file.coordinator_key},
                        {"ended", file.ended}};
  return WriteFileAtomically(ClientFilePath(data_dir), doc.dump(2) + "\n");
}

Result<ClientFile> ReadClientFile(const std::string& data_dir) {
  std::string path = ClientFilePath(data_dir);
  if (std::error_code ec; !std::filesystem::exists(path, ec)) {
    return NotFound("no " + path + ": no orch run has used --data-dir " + data_dir);
  }
  ORCH_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return InvalidArgument(path + ": not a JSON object");
  ORCH_ASSIGN_OR_RETURN(std::string schema, Field(doc, "schema", path));
  if (schema != kSchema) {
    return InvalidArgument(path + ": field \"schema\" is \"" + schema + "\", not " + kSchema);
  }
  ClientFile file;
  ORCH_ASSIGN_OR_RETURN(file.coordinator, Field(doc, "coordinator", path));
  ORCH_ASSIGN_OR_RETURN(file.key, Field(doc, "key", path));
  ORCH_ASSIGN_OR_RETURN(file.coordinator_key, Field(doc, "coordinator_key", path));
  auto ended = doc.find("ended");
  if (ended == doc.end() || !ended->is_boolean()) {
    return InvalidArgument(path + ": field \"ended\" is missing or not true/false");
  }
  file.ended = ended->get<bool>();
  return file;
}

std::string RunEndedMessage(const std::string& data_dir, const std::string& experiment) {
  return "the run in " + data_dir + " has ended; its store is there: orch report " +
         (experiment.empty() ? "EXPERIMENT" : experiment) + " --data-dir " + data_dir +
         (experiment.empty() ? " (orch experiments --data-dir " + data_dir + " lists them)" : "");
}

}  // namespace orch::cli
