// DriverCheck: whether a configured driver can run at all, decided before the
// agent advertises its engine (docs/agent.md, "Driver checks").
//
// A driver passes when its executable exists, is a regular file this process
// may execute, and `EXECUTABLE version` (docs/driver-protocol.md) exits 0
// within the runner's timeout and prints a JSON object whose "engine" equals
// the configured engine's name (the part before '@', compared without case)
// and whose "version", when the driver prints one and the configured engine
// names one, equals the part after '@'. A driver that fails would fail every
// run within milliseconds; the agent does not advertise its engine.
//
// A driver whose hello has `"session": {"load_axes": [AXIS, ...]}` runs jobs in
// sessions (docs/driver-protocol.md, "Sessions"); CheckDrivers records the axes
// in the verdict's DriverConfig::session_load_axes. A session object of another
// shape fails the check.
//
// Failures are values whose message names the driver, its path, the reason and
// what to do. The runner starts the child and never lets it outlive Run().
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent/config.h"
#include "base/status.h"
#include "fingerprint/command_runner.h"

namespace orch::agent {

// The subcommand every driver answers with its hello object as JSON.
inline constexpr char kDriverVersionCommand[] = "version";
// The subcommand that starts a session driver (job frames on its stdin).
inline constexpr char kDriverSessionCommand[] = "session";

struct DriverVerdict {
  DriverConfig driver = {};
  Status status = {};  // Ok: the driver may be advertised
};

// Pure: judges what `version` printed. `driver` names the engine expected.
Status JudgeVersionOutput(const DriverConfig& driver, const fingerprint::CommandOutput& output);

// Pure: the load axes of a version hello's `session` object; nullopt when the
// hello has none (the driver runs one job per process).
Result<std::optional<std::vector<std::string>>> SessionLoadAxes(const DriverConfig& driver,
                                                                const std::string& version_json);

// Checks the file, then runs `version` through `runner`. `load_axes`, when
// given, receives SessionLoadAxes of a driver that passes.
Status CheckDriver(const DriverConfig& driver, fingerprint::CommandRunner& runner,
                   std::optional<std::vector<std::string>>* load_axes = nullptr);

// A launched [[servers]] entry passes when its launch program (launch[0]: a
// path, or a name looked up on `search_path`) is an executable regular file.
// The message names the engine, the entry's place in the config and the path.
Status CheckServerLaunch(const ServerConfig& server, const std::string& search_path);

// CheckDriver for every driver, in order.
std::vector<DriverVerdict> CheckDrivers(const std::vector<DriverConfig>& drivers,
                                        fingerprint::CommandRunner& runner);

}  // namespace orch::agent
