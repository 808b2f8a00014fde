#include "cli/agent_command.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <functional>
#include <filesystem>
#include <iostream>
#include <memory>
#include <utility>  // before Boost.Asio under C++20 (Debian 12)

#include "agent/agent_service.h"
#include "agent/config.h"
#include "agent/driver_check.h"
#include "agent/host_fingerprinter.h"
#include "agent/model_inventory.h"
#include "agent/model_resolver.h"
#include "agent/posix_process_launcher.h"
#include "agent/slurm_allocation.h"
#include "agent/spool.h"
#include "base/spawn.h"
#include "cli/command.h"
#include "cli/files.h"
#include "cli/security_keys.h"
#include "fingerprint/fingerprint_json.h"
#include "fingerprint/file_hash_cache.h"
#include "fingerprint/libgit2_commit_resolver.h"
#include "fingerprint/locked_hash_cache.h"
#include "fingerprint/memory_hash_cache.h"
#include "fingerprint/posix_command_runner.h"
#include "protocol/zmq_asio_driver.h"
#include "protocol/zmq_transport.h"
#include "telemetry/exposition.h"
#include "telemetry/http_listener.h"

namespace orch::cli {
namespace {

namespace fp = orch::fingerprint;

// The driver executables, and the programs of launched [[servers]] entries (as
// "server:ENGINE"), whose files the host fingerprint hashes.
std::vector<agent::DriverConfig> FingerprintedPrograms(const agent::AgentConfig& config,
                                                       const std::string& search_path) {
  std::vector<agent::DriverConfig> programs = config.drivers;
  for (const agent::ServerConfig& server : config.servers) {
    if (!server.launched()) continue;
    Result<std::string> path = FindProgram(server.launch[0], search_path);
    if (path.ok()) programs.push_back({"server:" + server.engine, *path, server.engine});
  }
  return programs;
}

// The real parts of the agent's host fingerprint (agent/host_fingerprinter.h), with
// the configured driver executables (and launched servers' programs) as its engines. Kept for the agent's life: the
// hash cache remembers the driver files, so a refresh re-reads only those that
// changed.
struct HostFingerprint {
  explicit HostFingerprint(const agent::AgentConfig& config)
      : runner(fp::MakePosixCommandRunner(
            {.search_path = SearchPath(), .environment = {"PATH=" + SearchPath(), "LC_ALL=C"}})),
        resolver(fp::MakeLibgit2CommitResolver()),
        root("/"),
        fingerprinter(root, *runner, *resolver, cache,
                      FingerprintedPrograms(config, SearchPath())) {}

  static std::string SearchPath() {
    const char* env_path = std::getenv("PATH");
    return env_path != nullptr ? env_path : "/usr/local/bin:/usr/bin:/bin";
  }

  std::unique_ptr<fp::CommandRunner> runner;
  std::unique_ptr<fp::CommitResolver> resolver;
  fp::RootFs root;
  fp::MemoryHashCache cache;
  agent::HostFingerprinter fingerprinter;
};

// How long a driver may take to answer `version` before the agent gives up on it. A
// Python driver imports torch first: 2-3 s on an idle 2-core machine, past 10 s on a
// loaded one (seen), so the bound is generous; a hung driver costs it once, at start.
constexpr std::chrono::milliseconds kDriverCheckTimeout{60'000};

// The agent's environment, which its drivers inherit, as "NAME=value" entries.
std::vector<std::string> OwnEnvironment() {
  std::vector<std::string> entries;
  for (char** entry = environ; *entry != nullptr; ++entry) entries.emplace_back(*entry);
  return entries;
}

std::string EnginesOf(const std::vector<agent::DriverConfig>& drivers) {
  std::string engines;
  for (const agent::DriverConfig& driver : drivers)
    engines += (engines.empty() ? "" : ", ") + driver.engine;
  return engines;
}

// Checks every configured driver (agent/driver_check.h) before the event loop
// starts and keeps those that pass in `config`; logs each one that fails. False
// when none passes: the agent would have nothing to offer.
bool KeepWorkingDrivers(agent::AgentConfig& config, const std::string& config_path,
                        spdlog::logger& log, std::vector<protocol::KeyValue>& host_facts) {
  if (config.drivers.empty()) {
    std::cerr << "orch agent: " << config_path
              << " configures no [[drivers]]: add one (docs/agent.md)\n";
    return false;
  }
  auto runner = fp::MakePosixCommandRunner(
      {.search_path = "", .environment = OwnEnvironment(), .timeout = kDriverCheckTimeout});
  std::vector<agent::DriverConfig> working;
  std::string unavailable;  // "NAME (ENGINE): why; ...", for the coordinator (Hello)
  for (const agent::DriverVerdict& verdict : agent::CheckDrivers(config.drivers, *runner)) {
    if (verdict.status.ok()) {
      working.push_back(verdict.driver);
      if (const auto& axes = verdict.driver.session_load_axes) {
        std::string names;
        for (const std::string& axis : *axes) names += (names.empty() ? "" : ", ") + axis;
        log.info(fmt::runtime("driver {} runs warm sessions (load axes: {}); warm_sessions = {}"),
                 verdict.driver.name, names.empty() ? "none" : names, config.warm_sessions);
      }
      continue;
    }
    log.error(fmt::runtime("{}; engine {} is not offered"), verdict.status.message(),
              verdict.driver.engine);
    unavailable += (unavailable.empty() ? "" : "; ") + verdict.driver.name + " (" +
                   verdict.driver.engine + "): " + verdict.status.message();
  }
  // The coordinator says it for the jobs of those engines (docs/coordinator.md).
  if (!unavailable.empty()) host_facts.push_back({"unavailable_drivers", unavailable});
  if (working.empty()) {
    std::cerr << "orch agent: none of the " << config.drivers.size() << " drivers in "
              << config_path << " works (see above); fix them and start the agent again\n";
    return false;
  }
  if (working.size() < config.drivers.size()) {
    log.error(fmt::runtime("{} of {} drivers failed their check; offering only: {}"),
              config.drivers.size() - working.size(), config.drivers.size(), EnginesOf(working));
  }
  config.drivers = std::move(working);
  return true;
}

// Checks every launched [[servers]] entry's program (agent/driver_check.h); an
// entry that fails is logged and its engine no longer offered (its drivers are
// dropped). False when no driver is left.
bool KeepWorkingServers(agent::AgentConfig& config, const std::string& config_path,
                        spdlog::logger& log) {
  std::vector<agent::ServerConfig> working;
  for (agent::ServerConfig& server : config.servers) {
    Status status = agent::CheckServerLaunch(server, HostFingerprint::SearchPath());
    if (status.ok()) {
      working.push_back(std::move(server));
      continue;
    }
    log.error(fmt::runtime("{}; engine {} is not offered"), status.message(), server.engine);
    std::erase_if(config.drivers, [&](const agent::DriverConfig& driver) {
      return driver.engine == server.engine;
    });
  }
  config.servers = std::move(working);
  if (!config.drivers.empty()) return true;
  std::cerr << "orch agent: no engine of " << config_path
            << " is left to offer (see above); fix it and start the agent again\n";
  return false;
}

// The agent's own persistent hash cache, in its model cache folder (one file
// per agent id: one agent and the drivers it starts write it). An in-memory one
// when it cannot be opened (`*path` is then cleared): a cache only saves time.
std::unique_ptr<fp::HashCache> OpenAgentHashCache(const agent::AgentConfig& config,
                                                  spdlog::logger& log, std::string* path) {
  std::error_code error;
  std::filesystem::create_directories(config.model_cache, error);
  *path = config.model_cache + "/file-sha256-" + config.id + ".tsv";
  Result<std::unique_ptr<fp::HashCache>> cache = fp::OpenFileHashCache(*path);
  if (cache.ok()) return std::move(cache).value();
  log.warn(fmt::runtime("hash cache not used: {}"), cache.status().message());
  path->clear();
  return std::make_unique<fp::MemoryHashCache>();
}

struct AgentOptions {
  std::string config;
  std::string id;  // overrides agent.id (pilots: one config, an id per job)
  bool verify_models = false;
};

// --verify-models: every model file read again and compared with what the hash
// cache and the sidecars say; the agent does not start. 0 sound, 1 a mismatch or
// an unreadable file.
int VerifyModels(const agent::AgentConfig& config, spdlog::logger& log) {
  std::string cache_path;
  std::unique_ptr<fp::HashCache> cache = OpenAgentHashCache(config, log, &cache_path);
  std::vector<agent::ModelFileCheck> checks =
      agent::VerifyModelFiles(config.model_dirs, config.model_cache, *cache);
  std::size_t bad = 0;
  for (const agent::ModelFileCheck& check : checks) {
    if (check.problem.empty()) {
      std::cout << "ok       " << check.sha256 << "  " << check.path << "\n";
    } else {
      ++bad;
      std::cout << "MISMATCH " << check.path << ": " << check.problem << "\n";
    }
  }
  std::cout << checks.size() << " model files read, " << bad << " with a problem\n";
  return bad == 0 ? kExitOk : kExitError;
}

// What the agent service is given: the config, the host's fingerprint (recomputed
// through `fingerprint` while it runs), the host facts and the model scan.
agent::AgentServiceOptions ServiceOptions(const agent::AgentConfig& config,
                                          HostFingerprint& fingerprint, fp::LockedHashCache& hashes,
                                          spdlog::logger& log,
                                          const std::vector<protocol::KeyValue>& host_facts) {
  agent::AgentServiceOptions options;
  options.config = config;
  options.fingerprint_json = fingerprint.fingerprinter.Json();
  options.fingerprint_id = fp::FingerprintIdOfJson(options.fingerprint_json);
  if (char name[256] = {}; ::gethostname(name, sizeof name - 1) == 0 && name[0] != '\0') {
    options.host_facts.push_back({"hostname", name});
  }
  options.host_facts.insert(options.host_facts.end(), host_facts.begin(), host_facts.end());
  options.fingerprint_json_provider = [&fingerprint] { return fingerprint.fingerprinter.Json(); };
  if (!config.model_dirs.empty()) {
    options.model_scan = [dirs = config.model_dirs, &hashes, &log] {
      return agent::ScanModelHashes(dirs, hashes, log);
    };
  }
  return options;
}

// Says `status` as orch agent's error; returns `exit_code`.
int Failed(const Status& status, int exit_code) {
  std::cerr << "orch agent: " << status.message() << "\n";
  return exit_code;
}

// The agent's CurveZMQ keys (none: plain mode); refused when its key is not its id's.
Result<std::optional<protocol::CurveClientKeys>> AgentKeys(const agent::AgentConfig& config) {
  ORCH_ASSIGN_OR_RETURN(std::optional<protocol::CurveClientKeys> curve,
                        LoadClientKeys(config.key, config.coordinator_key, "agent.key"));
  if (!curve) return curve;
  Result<protocol::SecretIdentity> own = protocol::ReadSecretKeyFile(config.key);
  if (!own.ok() || protocol::SpeaksAs(own->identity.role, own->identity.name, config.id)) {
    return curve;
  }
  return InvalidArgument("agent.id is " + config.id + " but its key " + config.key + " is named " +
                         own->identity.name + " (role " + own->identity.role +
                         "); an agent speaks only as its key's name, a pilot key's also as "
                         "NAME.SUFFIX (orch keygen " +
                         config.id + ")");
}

Result<agent::AgentConfig> AgentConfigOf(const AgentOptions& flags) {
  ORCH_ASSIGN_OR_RETURN(agent::AgentConfig config, agent::LoadAgentConfig(flags.config));
  if (!flags.id.empty()) config.id = flags.id;
  return config;
}

// SIGTERM/SIGINT: stop (or, with stop_drain_ms, drain first); a second one stops at
// once. `signals` must outlive the waits armed here.
void StopOnSignals(boost::asio::signal_set& signals, agent::AgentService& service,
                   std::chrono::milliseconds stop_drain, spdlog::logger& log) {
  auto signalled = std::make_shared<bool>(false);
  signals.async_wait([&signals, &service, stop_drain, &log, signalled](
                         const boost::system::error_code& error, int signal) {
    if (error) return;
    if (!*signalled && stop_drain.count() > 0) {
      log.info(fmt::runtime("signal {}: draining (a second signal stops at once)"), signal);
      service.Drain(stop_drain);
    } else {
      log.info(fmt::runtime("signal {}: stopping"), signal);
      service.Stop();
    }
    *signalled = true;
    StopOnSignals(signals, service, stop_drain, log);
  });
}

// The agent's metrics listener (docs/metrics-endpoint.md, "Agent metrics") when the
// config asks for one (null otherwise); its URL is logged and written to
// SPOOL_DIR/metrics.endpoint (the port 0 picked).
Result<std::unique_ptr<telemetry::HttpListener>> ServeMetrics(boost::asio::io_context& io,
                                                              const agent::AgentConfig& config,
                                                              const agent::AgentService& service,
                                                              spdlog::logger& log) {
  if (config.metrics_listen.empty()) return std::unique_ptr<telemetry::HttpListener>();
  ORCH_ASSIGN_OR_RETURN(telemetry::ListenAddress address,
                        telemetry::ParseListenAddress(config.metrics_listen));
  std::string token;
  if (!config.metrics_viewer_token_file.empty()) {
    ORCH_ASSIGN_OR_RETURN(token, telemetry::ReadViewerToken(config.metrics_viewer_token_file));
  }
  auto serve = [&service](const telemetry::HttpRequest& request) -> telemetry::HttpReply {
    std::string path = request.target.substr(0, request.target.find('?'));
    if (path == "/metrics") return {200, telemetry::kExpositionContentType, service.MetricsText()};
    return {404, "text/plain; charset=utf-8",
            "not found: " + path + " (an agent serves /metrics only)\n"};
  };
  ORCH_ASSIGN_OR_RETURN(std::unique_ptr<telemetry::HttpListener> listener,
                        telemetry::HttpListener::Start(io, address, token, serve));
  ORCH_RETURN_IF_ERROR(
      WriteFileAtomically((std::filesystem::path(config.spool_dir) / "metrics.endpoint").string(),
                          listener->url() + "\n"));
  log.info(fmt::runtime("metrics on {}"), listener->url());
  return listener;
}

// Starts the service, then its metrics listener when the config asks for one; false
// (logged) when either fails.
bool StartServing(agent::AgentService& service, boost::asio::io_context& io,
                  const agent::AgentConfig& config, spdlog::logger& log,
                  std::unique_ptr<telemetry::HttpListener>& listener) {
  Status started = service.Start();
  if (!started.ok()) {
    log.error(fmt::runtime("{}"), started.message());
    return false;
  }
  Result<std::unique_ptr<telemetry::HttpListener>> serving = ServeMetrics(io, config, service, log);
  if (!serving.ok()) {
    log.error(fmt::runtime("{}"), serving.status().message());
    return false;
  }
  listener = std::move(serving).value();
  return true;
}

int RunAgent(const AgentOptions& flags) {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  spdlog::logger log("agent", sink);
  Result<agent::AgentConfig> config = AgentConfigOf(flags);
  if (!config.ok()) return Failed(config.status(), kExitInvalidInput);
  if (flags.verify_models) return VerifyModels(*config, log);
  // Inside a Slurm job: the allocation's GPUs, a spool of its own, the job's identity.
  std::vector<protocol::KeyValue> host_facts =
      agent::ApplySlurmAllocation(agent::SlurmEnvironment(), *config);
  // First: the spool's lock says whether another agent already runs on it, before
  // this one checks drivers or reads anything there.
  Result<std::unique_ptr<agent::Spool>> spool = agent::Spool::Open(config->spool_dir);
  if (!spool.ok()) return Failed(spool.status(), kExitError);
  if (!KeepWorkingDrivers(*config, flags.config, log, host_facts)) return kExitInvalidInput;
  if (!KeepWorkingServers(*config, flags.config, log)) return kExitInvalidInput;
  std::string cache_path;
  std::unique_ptr<fp::HashCache> cache = OpenAgentHashCache(*config, log, &cache_path);
  fp::LockedHashCache hashes(*cache);  // shared by the model scans' thread
  agent::ModelResolver models({.model_dirs = config->model_dirs,
                               .cache_dir = config->model_cache,
                               .hash_cache_file = cache_path,
                               .synth_max_bytes = config->synth_max_bytes},
                              hashes, log);
  HostFingerprint fingerprint(*config);  // outlives the service and its worker
  agent::AgentServiceOptions options =
      ServiceOptions(*config, fingerprint, hashes, log, host_facts);
  log.info(fmt::runtime("agent {}: fingerprint {}, coordinator {}"), config->id,
           options.fingerprint_id, config->coordinator);

  Result<std::optional<protocol::CurveClientKeys>> curve = AgentKeys(*config);
  if (!curve.ok()) return Failed(curve.status(), kExitInvalidInput);
  boost::asio::io_context io;
  protocol::ZmqContext zmq;
  Result<std::unique_ptr<protocol::ZmqTransport>> transport =
      *curve ? protocol::ConnectZmqClient(zmq, config->coordinator, config->id, **curve)
             : protocol::ConnectZmqClient(zmq, config->coordinator, config->id);
  if (!transport.ok()) {
    log.error(fmt::runtime("connect {}: {}"), config->coordinator, transport.status().message());
    return kExitError;
  }
  std::unique_ptr<agent::AgentService> service;  // built below; used by the driver's handler
  protocol::ZmqAsioDriver driver(io, **transport, [&service](protocol::TransportEvent event) {
    if (service) service->OnEvent(event);
  });
  auto launcher = agent::MakePosixProcessLauncher(io);
  service = std::make_unique<agent::AgentService>(
      io, *launcher, **spool, models, log, options,
      [&driver](std::string_view frame) { return driver.Send(protocol::kServerPeer, frame); });
  service->SetOnStopped([&io] { io.stop(); });
  boost::asio::signal_set signals(io, SIGTERM, SIGINT);
  StopOnSignals(signals, *service, config->stop_drain, log);
  std::unique_ptr<telemetry::HttpListener> listener;  // destroyed before the service
  if (!StartServing(*service, io, *config, log, listener)) return kExitError;
  driver.Start();
  io.run();
  return kExitOk;
}

}  // namespace

void RegisterAgentCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<AgentOptions>();  // shared with the callback below
  CLI::App* cmd =
      app.add_subcommand("agent",
                         "Run an agent: register with the coordinator, run assigned jobs through "
                         "the drivers\n"
                         "named in the config file, stream their digests back (spooled to disk "
                         "until\n"
                         "acknowledged). SIGTERM/SIGINT stop it cleanly. See docs/agent.md.");
  cmd->add_option("--config", options->config, "FILE: the agent's TOML configuration")->required();
  cmd->add_option("--id", options->id,
                  "agent id instead of the config's agent.id (a pilot job's: "
                  "KEY_NAME.slurm-JOBID, docs/slurm.md)");
  cmd->add_flag("--verify-models", options->verify_models,
                "read every file of model_dirs and model_cache again, compare it with the hash "
                "cache and its .sha256 sidecar, print each, and exit (0 all sound, 1 a "
                "mismatch; the agent does not start)");
  cmd->callback([options, &exit_code] { exit_code = RunAgent(*options); });
}

}  // namespace orch::cli
