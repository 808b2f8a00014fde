// AgentConfig: the agent's TOML configuration file (docs/agent.md).
//
// Parsing is strict: unknown keys, wrong types and out-of-range values are
// errors whose message names the file, line and column, the field and the
// offending value
// ("agent.toml:4:9: agent.slots: must be >= 1, got 0"). Relative paths
// (spool_dir, model_dirs, model_cache, driver executables, a server's
// api_key_file and a launch program given as a path) are resolved against the
// directory holding the config file. An unknown key's message suggests the
// closest allowed one.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/synth_model.h"

namespace orch::agent {

// One engine driver executable the agent may spawn.
struct DriverConfig {
  std::string name;        // unique within the file
  std::string executable;  // absolute after parsing
  std::string engine;      // a job whose requirements.engine equals this runs here
  // Not from the file: the driver check (agent/driver_check.h) sets it from the
  // `session.load_axes` of the driver's version hello. Set: the driver runs jobs
  // in sessions, and these coordinate axes are fixed for a loaded engine.
  std::optional<std::vector<std::string>> session_load_axes = {};
};

// The inference-server engine families (docs/agent.md, "Servers"): a job whose
// engine is FAMILY@VERSION of one of them runs against a server the agent
// attaches to or launches ([[servers]]).
inline constexpr std::string_view kServerFamilies[] = {"llama-server", "vllm", "sglang", "ollama"};

// True when `engine` ("FAMILY@VERSION") names a server family.
bool IsServerEngine(std::string_view engine);

// What one value of a server-level axis adds to the launch command.
// The key of a [servers.axes.NAME] table that maps every value the table does not
// list; "{value}" in its arguments and environment becomes the job's value.
inline constexpr char kAnyAxisValue[] = "*";

struct ServerAxisValue {
  std::vector<std::string> args;  // appended to the launch argv
  std::vector<std::string> env;   // "NAME=value", added to the server's environment
};

// One [[servers]] entry: the server jobs of `engine` run against. Either
// attached (`url`) or launched (`launch`, with placeholders {model}, {port} and
// {host} in its arguments).
struct ServerConfig {
  std::string engine;               // "FAMILY@VERSION", a server family
  std::string where;                // "FILE:LINE" of the entry, named in messages
  std::string url;                  // attach: the server's base URL
  std::string api_key_file;         // attach: absolute after parsing; may be empty
  std::vector<std::string> launch;  // launch: argv; argv[0] absolute when it names a path
  // Server-level axes: axis name -> accepted value -> what it adds. A job whose
  // coordinate has one of these axes with a value not listed cannot run here.
  // `preset` (agent/server_presets.h) fills the axes the entry does not map itself.
  std::map<std::string, std::map<std::string, ServerAxisValue>> axes;
  std::string preset;
  std::string health = "/health";  // GET on the launched server; 200 = ready
  std::chrono::milliseconds start_timeout{120000};
  std::chrono::milliseconds stop_timeout{10000};  // SIGTERM, then SIGKILL after this

  bool launched() const { return !launch.empty(); }
};

struct AgentConfig {
  std::string id;
  std::string coordinator;  // ZeroMQ endpoint, "tcp://host:port"
  std::int32_t slots = 1;
  std::string hardware = "cpu";
  std::int32_t gpus = 0;
  std::string spool_dir;                // absolute after parsing
  std::vector<std::string> model_dirs;  // absolute after parsing
  // Generated models (synth recipes) and the drivers' quantized variants go
  // here; absolute after parsing. Created on first use.
  std::string model_cache;
  // The largest synth model this agent generates (bytes of its GGUF); a larger
  // recipe's runs are refused before anything is written.
  std::uint64_t synth_max_bytes = model::kDefaultSynthMaxBytes;
  std::chrono::milliseconds run_timeout{600000};
  // CPU threads a driver uses when the job's coordinate has no `threads` axis
  // (sent as the job's resources.threads); 0: the driver's default (all cores).
  // Lets several agents share a machine without oversubscribing it.
  std::int32_t driver_threads = 0;
  // Warm engines (docs/agent.md, "Warm sessions"): at most this many driver
  // processes started as `DRIVER session` stay alive between jobs, each with
  // its model loaded, for the next job with the same driver, model and load-axis
  // values; the least recently used is closed at the limit. 0: every job starts
  // its driver afresh. A session idle for warm_idle is closed.
  std::int32_t warm_sessions = 2;
  std::chrono::milliseconds warm_idle{300000};
  // On SIGTERM the agent drains for up to this long (no new work, running runs
  // go on to their end and are acknowledged), then cancels what still runs and
  // stops. 0: cancel at once. A service manager's stop timeout must exceed it.
  std::chrono::milliseconds stop_drain{0};
  // CurveZMQ (docs/security.md): the agent's secret key file, whose name must be
  // its id, and the coordinator's public key file; both absolute, or both empty
  // (plain sockets).
  std::string key;
  std::string coordinator_key;
  // The agent's own Prometheus metrics (docs/metrics-endpoint.md, "Agent metrics"):
  // "HOST:PORT" to serve them on (port 0: a free one), empty: off. A non-loopback
  // address needs a viewer token file (absolute after parsing).
  std::string metrics_listen;
  std::string metrics_viewer_token_file;
  std::vector<DriverConfig> drivers;
  std::vector<ServerConfig> servers;  // at most one per engine
};

// Parses `text`; `file_name` is used in messages, `base_dir` resolves relative
// paths. Errors: kInvalidArgument naming file:line:col, the field and the
// value.
Result<AgentConfig> ParseAgentConfig(std::string_view text, const std::string& file_name,
                                     const std::string& base_dir);

// Reads and parses the file at `path`. kIoError when it cannot be read.
Result<AgentConfig> LoadAgentConfig(const std::string& path);

}  // namespace orch::agent
