#include "agent/driver_check.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/spawn.h"
#include "base/strings.h"

namespace orch::agent {
namespace {

using nlohmann::json;

// "driver "NAME" (PATH): WHAT; WHAT TO DO".
Status Rejected(const DriverConfig& driver, const std::string& what, const std::string& todo) {
  return Status(
      StatusCode::kFailedPrecondition,
      "driver \"" + driver.name + "\" (" + driver.executable + "): " + what + "; " + todo);
}

constexpr char kFixPath[] =
    "set its [[drivers]] executable in the agent config to the driver program";

// At most `limit` characters of the last non-empty line of `text`.
std::string LastLine(const std::string& text, std::size_t limit = 200) {
  std::size_t end = text.find_last_not_of("\r\n \t");
  if (end == std::string::npos) return "";
  std::size_t begin = text.rfind('\n', end);
  begin = begin == std::string::npos ? 0 : begin + 1;
  std::string line = text.substr(begin, end + 1 - begin);
  return line.size() > limit ? line.substr(0, limit) + "..." : line;
}

Status CheckFile(const DriverConfig& driver) {
  struct stat info {};
  if (::stat(driver.executable.c_str(), &info) != 0) {
    int error = errno;
    if (error == ENOENT || error == ENOTDIR) {
      return Rejected(driver, "does not exist",
                      "build or install the driver, or " + std::string(kFixPath));
    }
    return Rejected(driver, std::string("cannot be read: ") + std::strerror(error), kFixPath);
  }
  if (S_ISDIR(info.st_mode)) {
    return Rejected(driver, "is a directory, not an executable file", kFixPath);
  }
  if (!S_ISREG(info.st_mode)) {
    return Rejected(driver, "is not a regular file", kFixPath);
  }
  if (::access(driver.executable.c_str(), X_OK) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
    return Rejected(driver, std::string("is not executable by this user (mode ") + mode + ")",
                    "make it executable (chmod +x) or " + std::string(kFixPath));
  }
  return Status::Ok();
}

// "NAME@VERSION" -> {NAME, VERSION}; VERSION empty without '@'.
std::pair<std::string, std::string> SplitEngine(const std::string& engine) {
  std::size_t at = engine.find('@');
  if (at == std::string::npos) return {engine, ""};
  return {engine.substr(0, at), engine.substr(at + 1)};
}

std::string StringField(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

Status JudgeVersionOutput(const DriverConfig& driver, const fingerprint::CommandOutput& output) {
  std::string command = "\"" + driver.executable + " " + kDriverVersionCommand + "\"";
  if (output.exit_code != 0) {
    std::string why = LastLine(output.stderr_text);
    return Rejected(driver,
                    command + " exited with status " + std::to_string(output.exit_code) +
                        (why.empty() ? "" : " (" + why + ")"),
                    "run it by hand to see why; is it an orch engine driver "
                    "(docs/driver-protocol.md)?");
  }
  json hello = json::parse(output.stdout_text, nullptr, /*allow_exceptions=*/false);
  std::string engine = hello.is_object() ? StringField(hello, "engine") : "";
  if (engine.empty()) {
    return Rejected(driver,
                    command + " printed no JSON object naming its \"engine\" (got \"" +
                        LastLine(output.stdout_text, 80) + "\")",
                    "point executable at an orch engine driver (docs/driver-protocol.md)");
  }
  auto [name, version] = SplitEngine(driver.engine);
  std::string reported_version = StringField(hello, "version");
  bool name_ok = Lower(engine) == Lower(name);
  bool version_ok = version.empty() || reported_version.empty() || reported_version == version;
  if (name_ok && version_ok) return Status::Ok();
  std::string reported = engine + (reported_version.empty() ? "" : "@" + reported_version);
  return Rejected(
      driver,
      "it reports engine " + reported + ", but the config says engine = \"" + driver.engine + "\"",
      "point executable at a driver of " + driver.engine + ", or set engine = \"" + reported +
          "\"");
}

Result<std::optional<std::vector<std::string>>> SessionLoadAxes(const DriverConfig& driver,
                                                                const std::string& version_json) {
  json hello = json::parse(version_json, nullptr, /*allow_exceptions=*/false);
  if (!hello.is_object() || !hello.contains("session")) {
    return std::optional<std::vector<std::string>>();
  }
  const json& session = hello["session"];
  auto bad = [&](const std::string& what) {
    return Rejected(driver, "its version hello's " + what + " (got " + session.dump() + ")",
                    "fix the driver's hello (docs/driver-protocol.md, \"Sessions\")");
  };
  if (!session.is_object() || !session.contains("load_axes") || !session["load_axes"].is_array()) {
    return bad("\"session.load_axes\" must be an array of axis names");
  }
  std::vector<std::string> axes;
  for (const json& axis : session["load_axes"]) {
    if (!axis.is_string() || axis.get<std::string>().empty()) {
      return bad("\"session.load_axes\" must hold non-empty strings");
    }
    axes.push_back(axis.get<std::string>());
  }
  return std::optional<std::vector<std::string>>(std::move(axes));
}

Status CheckDriver(const DriverConfig& driver, fingerprint::CommandRunner& runner,
                   std::optional<std::vector<std::string>>* load_axes) {
  ORCH_RETURN_IF_ERROR(CheckFile(driver));
  Result<fingerprint::CommandOutput> output =
      runner.Run({driver.executable, kDriverVersionCommand});
  if (!output.ok()) {
    std::string what = output.status().code() == StatusCode::kUnavailable
                           ? "did not answer \"" + std::string(kDriverVersionCommand) +
                                 "\" in time (" + output.status().message() + ")"
                           : "could not be run: " + output.status().message();
    return Rejected(driver, what, "run it by hand to see why");
  }
  ORCH_RETURN_IF_ERROR(JudgeVersionOutput(driver, *output));
  ORCH_ASSIGN_OR_RETURN(std::optional<std::vector<std::string>> axes,
                        SessionLoadAxes(driver, output->stdout_text));
  if (load_axes != nullptr) *load_axes = std::move(axes);
  return Status::Ok();
}

Status CheckServerLaunch(const ServerConfig& server, const std::string& search_path) {
  if (!server.launched()) return Status::Ok();
  Result<std::string> program = FindProgram(server.launch[0], search_path);
  if (program.ok()) return Status::Ok();
  return Status(StatusCode::kFailedPrecondition,
                "server entry for " + server.engine + " (" + server.where + "): launch program \"" +
                    server.launch[0] + "\" cannot be run (" + program.status().message() +
                    "); install the server or set launch[0] in the agent config to its path");
}

std::vector<DriverVerdict> CheckDrivers(const std::vector<DriverConfig>& drivers,
                                        fingerprint::CommandRunner& runner) {
  std::vector<DriverVerdict> verdicts;
  for (const DriverConfig& driver : drivers) {
    DriverVerdict verdict{driver, Status::Ok()};
    verdict.status = CheckDriver(driver, runner, &verdict.driver.session_load_axes);
    verdicts.push_back(std::move(verdict));
  }
  return verdicts;
}

}  // namespace orch::agent
