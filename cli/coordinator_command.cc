#include "cli/coordinator_command.h"

// clang-format off
#include <utility>  // before Boost.Asio under C++20 (Debian 12)
#include <boost/asio.hpp>
// clang-format on

#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <random>

#include "cli/command.h"
#include "cli/security_keys.h"
#include "cli/files.h"
#include "coordinator/config.h"
#include "coordinator/coordinator_daemon.h"
#include "protocol/zmq_transport.h"
#include "report/render.h"
#include "report/report.h"
#include "report/summary_token_decoder.h"
#include "store/rocksdb_store.h"
#include "telemetry/http_listener.h"

namespace orch::cli {
namespace {

namespace fs = std::filesystem;

std::string RandomSalt() {
  std::random_device device;
  std::uniform_int_distribution<unsigned> hex(0, 15);
  std::string salt;
  for (int i = 0; i < 6; ++i) salt.push_back("0123456789abcdef"[hex(device)]);
  return salt;
}

int Fail(const std::string& what) {
  std::cerr << "orch coordinator: " << what << "\n";
  return kExitError;
}

// The HTML report of one experiment, as `orch report --html` writes it, from the
// coordinator's own store (read on its event loop: a large experiment holds it up).
Result<std::string> ReportHtml(store::Store& store, const std::string& experiment) {
  ORCH_ASSIGN_OR_RETURN(report::ExperimentInput input, report::LoadExperiment(store, experiment));
  std::unique_ptr<report::RunSource> source = report::MakeStoreRunSource(store);
  std::unique_ptr<report::TokenDecoder> decoder = report::MakeSummaryTokenDecoder(input.runs);
  ORCH_ASSIGN_OR_RETURN(report::Report built,
                        report::BuildReport(input, *source, report::ReportOptions{decoder.get()}));
  return report::RenderHtml(built);
}

// The metrics listener the config asks for (docs/metrics-endpoint.md), if any.
Result<std::optional<coordinator::MetricsOptions>> MetricsFromConfig(
    const coordinator::CoordinatorConfig& config, store::Store& store) {
  if (config.metrics_listen.empty()) return std::optional<coordinator::MetricsOptions>();
  coordinator::MetricsOptions metrics;
  ORCH_ASSIGN_OR_RETURN(metrics.listen, telemetry::ParseListenAddress(config.metrics_listen));
  if (!config.metrics_viewer_token_file.empty()) {
    ORCH_ASSIGN_OR_RETURN(metrics.viewer_token,
                          telemetry::ReadViewerToken(config.metrics_viewer_token_file));
  }
  metrics.store_dir = store::RocksDbPathInDataDir(config.data_dir);
  metrics.report_html = [&store](const std::string& experiment) {
    return ReportHtml(store, experiment);
  };
  return std::optional<coordinator::MetricsOptions>(std::move(metrics));
}

// Re-reads the allowed-keys folder whenever its files change (checked every
// kAllowedKeysPoll): a key added or removed takes effect without a restart for the
// next handshake and request. A folder that fails to read keeps the keys in force,
// and says why once per change.
constexpr std::chrono::seconds kAllowedKeysPoll{2};

void WatchAllowedKeys(boost::asio::steady_timer& timer, const std::string& dir,
                      protocol::ZmqTransport& transport, coordinator::CoordinatorDaemon& daemon,
                      spdlog::logger& log, std::string seen = {}) {
  if (seen.empty()) seen = AllowedKeysState(dir);
  timer.expires_after(kAllowedKeysPoll);
  timer.async_wait([&timer, dir, &transport, &daemon, &log,
                    seen](const boost::system::error_code& failed) mutable {
    if (failed) return;
    std::string now = AllowedKeysState(dir);
    if (now != seen) {
      seen = now;
      Result<AllowedKeys> keys = LoadAllowedKeys(dir);
      if (!keys.ok()) {
        log.error(fmt::runtime("allowed_keys changed but cannot be read; the keys in force "
                               "stay: {}"),
                  keys.status().message());
      } else {
        std::size_t count = keys->curve.size();
        transport.SetAllowedKeys(std::move(keys->curve));
        coordinator::AccessPolicy policy;
        policy.authenticated = true;
        policy.roles = std::move(keys->roles);
        daemon.SetAccessPolicy(std::move(policy));
        log.info(fmt::runtime("allowed_keys re-read: {} keys admitted from {}"), count, dir);
      }
    }
    WatchAllowedKeys(timer, dir, transport, daemon, log, seen);
  });
}

// The sockets' protection the config asks for: CurveZMQ with its keys (nullopt in plain
// mode), said in the log and in the options `orch status` shows.
Result<std::optional<ServerSecurity>> SecurityFromConfig(
    coordinator::CoordinatorConfig& config, const std::shared_ptr<spdlog::logger>& log) {
  if (config.key.empty()) {
    if (config.insecure) {
      config.options.security =
          coordinator::IsLoopbackEndpoint(config.listen)
              ? "plain (loopback)"
              : "INSECURE (plain sockets on " + config.listen + "; insecure = true)";
      log->warn(fmt::runtime("INSECURE: plain sockets on {}: anyone who can reach it may "
                             "submit, cancel, drain and forge results"),
                config.listen);
    }
    return std::optional<ServerSecurity>();
  }
  ORCH_ASSIGN_OR_RETURN(ServerSecurity security,
                        LoadServerSecurity(config.key, config.allowed_keys));
  // Once per client address and key (protocol/zap_handler.h), from the ZAP thread.
  security.curve.on_refused = [log](const protocol::RefusedHandshake& refused) {
    log->warn(fmt::runtime("refused a handshake from {}: {} (key {}); admit it by putting "
                           "its public key file in allowed_keys"),
              refused.address, refused.reason, refused.key.empty() ? "none" : refused.key);
  };
  security.bundles.max_bundle_bytes = config.max_bundle_bytes;
  config.options.security = "curve";
  log->info(fmt::runtime("CurveZMQ on; {} keys admitted from {}"), security.curve.allowed.size(),
            config.allowed_keys);
  return std::optional<ServerSecurity>(std::move(security));
}

// The data directory and its store, opened for the coordinator; what the open dropped (a
// last WAL record cut off when an earlier process died during the write) is logged.
Result<std::unique_ptr<store::Store>> OpenStore(coordinator::CoordinatorConfig& config,
                                                spdlog::logger& log) {
  std::error_code error;
  fs::create_directories(config.data_dir, error);
  if (error) return IoError("create " + config.data_dir + ": " + error.message());
  // Group commit: one WAL sync per burst of messages, before any of them is
  // acknowledged (coordinator/options.h), instead of one per message.
  config.options.group_commit = true;
  std::vector<std::string> dropped;
  Result<std::unique_ptr<store::Store>> store = store::OpenRocksDbStore(
      store::RocksDbPathInDataDir(config.data_dir), store::RocksDbOptions{.create_if_missing = true,
                                                                          .sync_chunks = false,
                                                                          .sync_state = false,
                                                                          .dropped = &dropped});
  for (const std::string& what : dropped) {
    log.warn(fmt::runtime("store {}: {}"), store::RocksDbPathInDataDir(config.data_dir), what);
  }
  return store;
}

// Writes where the coordinator listens (and serves its metrics) into its data directory,
// for the CLI and for people, and logs it.
Status AnnounceEndpoints(const coordinator::CoordinatorConfig& config,
                         const coordinator::CoordinatorDaemon& daemon, const std::string& endpoint,
                         spdlog::logger& log) {
  if (std::string url = daemon.metrics_url(); !url.empty()) {
    ORCH_RETURN_IF_ERROR(
        WriteFileAtomically((fs::path(config.data_dir) / "metrics.endpoint").string(), url + "\n"));
    log.info(fmt::runtime("metrics and status page on {}"), url);
  }
  ORCH_RETURN_IF_ERROR(WriteFileAtomically(
      (fs::path(config.data_dir) / "coordinator.endpoint").string(), endpoint + "\n"));
  log.info(fmt::runtime("coordinator {} listening on {}, data in {}"), config.options.id, endpoint,
           config.data_dir);
  return Status::Ok();
}

int RunCoordinator(const std::string& config_path) {
  Result<std::string> text = ReadFile(config_path);
  if (!text.ok()) return Fail(text.status().message());
  Result<coordinator::CoordinatorConfig> config =
      coordinator::ParseCoordinatorConfig(*text, config_path);
  if (!config.ok()) {
    std::cerr << "orch coordinator: " << config.status().message() << "\n";
    return kExitInvalidInput;
  }
  config->options.run_id_salt = RandomSalt();
  auto log = std::make_shared<spdlog::logger>("coordinator",
                                              std::make_shared<spdlog::sinks::stderr_sink_mt>());
  log->flush_on(spdlog::level::info);
  Result<std::unique_ptr<store::Store>> store = OpenStore(*config, *log);
  if (!store.ok()) return Fail(store.status().message());
  Result<std::optional<ServerSecurity>> security = SecurityFromConfig(*config, log);
  if (!security.ok()) return Fail(security.status().message());

  protocol::ZmqContext zmq;
  Result<std::unique_ptr<protocol::ZmqTransport>> transport =
      *security ? protocol::BindZmqServer(zmq, config->listen, (*security)->curve)
                : protocol::BindZmqServer(zmq, config->listen);
  if (!transport.ok()) {
    return Fail("listen on " + config->listen + ": " + transport.status().message());
  }
  boost::asio::io_context io;
  coordinator::CoordinatorDaemon daemon(io, **transport, **store, config->options, *log);
  if (*security) {
    daemon.SetAccessPolicy((*security)->policy);
    daemon.SetBundleKeys((*security)->bundles);
  }
  Result<std::optional<coordinator::MetricsOptions>> metrics = MetricsFromConfig(*config, **store);
  if (!metrics.ok()) return Fail(metrics.status().message());
  if (*metrics) daemon.ServeMetrics(std::move(**metrics));
  Status started = daemon.Start();
  if (started.ok()) started = AnnounceEndpoints(*config, daemon, (*transport)->endpoint(), *log);
  if (!started.ok()) return Fail(started.message());

  boost::asio::steady_timer keys_timer(io);
  if (*security) WatchAllowedKeys(keys_timer, config->allowed_keys, **transport, daemon, *log);
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& failed, int signal) {
    if (failed) return;
    log->info(fmt::runtime("signal {}: shutting down"), signal);
    daemon.Stop();  // every write so far has completed: each runs to its end on
                    // this thread
    io.stop();
  });
  io.run();
  log->info("coordinator stopped");
  return kExitOk;
}

}  // namespace

void RegisterCoordinatorCommand(CLI::App& app, int& exit_code) {
  auto config = std::make_shared<std::string>();  // shared with the callback below
  CLI::App* cmd = app.add_subcommand("coordinator",
                                     "Run the coordinator daemon: hands the submitted "
                                     "plans' jobs to agents and stores\n"
                                     "their results (RocksDB under data_dir). Stops "
                                     "cleanly on SIGTERM/SIGINT.");
  cmd->add_option("--config", *config, "coordinator config (TOML, see docs/coordinator.md)")
      ->required();
  cmd->callback([config, &exit_code] { exit_code = RunCoordinator(*config); });
}

}  // namespace orch::cli
