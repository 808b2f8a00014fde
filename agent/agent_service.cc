#include "agent/agent_service.h"

#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <utility>  // before Boost.Asio under C++20 (Debian 12)

#include "agent/driver_check.h"
#include "agent/driver_job.h"
#include "driver_protocol/frames.h"
#include "agent/server_keeper.h"
#include "agent/agent_metrics.h"
#include "agent/spool_writer.h"
#include "protocol/codec.h"

namespace orch::agent {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using driver_protocol::DriverFrameType;
using driver_protocol::EncodeJobFrame;

// A closed warm session's process group is killed when it has not exited
// this long after end of file on its stdin.
constexpr std::chrono::milliseconds kSessionCloseGrace{5000};

// 64 random bits in hex, fresh for every agent process.
// The coordinator compares it across Hellos to tell a restarted agent process
// from a reconnect: a drained agent stays drained only within one incarnation.
std::string NewIncarnation() {
  std::random_device device;
  std::uint64_t bits = (std::uint64_t{device()} << 32) ^ device();
  return fmt::format("{:016x}", bits);
}

}  // namespace

struct AgentService::Impl {
  // What the shell holds for a run the core runs.
  struct Running {
    std::unique_ptr<Process> process;
    std::string log_path;  // the driver's whole stderr; kept when the run fails
    std::ofstream log;
  };

  Impl(asio::io_context& io, ProcessLauncher& launcher, Spool& spool, ModelResolver& models,
       spdlog::logger& log, AgentServiceOptions options, SendFn send)
      : io(io),
        launcher(launcher),
        spool(spool),
        models(models),
        log(log),
        send(std::move(send)),
        // Copied before `options` moves into the core: members are initialised in
        // declaration order, and `config` is declared before `core`.
        config(options.config),
        fingerprint_json_provider(std::move(options.fingerprint_json_provider)),
        model_scan(std::move(options.model_scan)),
        core(static_cast<AgentCoreOptions&&>(options),
             AgentCoreFeatures{NewIncarnation(), static_cast<bool>(model_scan),
                               static_cast<bool>(fingerprint_json_provider)}),
        timer(io),
        servers(io, config.servers, (std::filesystem::path(spool.dir()) / "servers").string(),
                log) {}

  ~Impl() {
    alive.reset();  // a worker job that completes now posts a handler that does nothing
    // Waits for a scan or fingerprint check in progress (they are not interrupted).
    if (workers) workers->join();
  }

  asio::io_context& io;
  ProcessLauncher& launcher;
  Spool& spool;
  ModelResolver& models;
  spdlog::logger& log;
  SendFn send;
  const AgentConfig config;  // the core's too; the shell reads the driver settings
  std::function<std::string()> fingerprint_json_provider;
  std::function<std::vector<std::string>()> model_scan;
  AgentCore core;
  asio::steady_timer timer;  // armed at core.NextDeadline()
  std::optional<AgentTime> armed;
  std::map<std::string, Running> runs;
  // A warm session's process (the core's session id): lives across runs; its
  // output and exit go to the run in hand.
  struct SessionProcess {
    std::unique_ptr<Process> process;
    std::string run_id;    // empty while idle
    bool closing = false;  // stdin closed, killed after kSessionCloseGrace
  };
  std::map<std::uint64_t, SessionProcess> sessions;
  // Launched and attached inference servers ([[servers]]); destroyed (stopping
  // what it launched) before the runs' processes.
  ServerKeeper servers;
  std::function<void()> on_stopped;
  // Spool writes, acks and resends run here, in order; declared after what their
  // results use, so it is destroyed (finishing its writes) first.
  SpoolWriter spool_writer{io, spool, kMaxSpoolQueuedBytes};
  AgentShellMeasures measures;  // spool_queued_bytes is read when asked
  // Model scans and fingerprint checks run here, one at a time.
  std::unique_ptr<asio::thread_pool> workers;
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);

  // Performs `effects` in order, then re-arms the timer.
  void Perform(AgentEffects effects) {
    for (AgentEffect& effect : effects) PerformOne(effect);
    Arm();
  }

  void Arm() {
    std::optional<AgentTime> deadline = core.NextDeadline();
    // Re-arming cancels the wait in progress; its handler sees the error and returns.
    if (deadline == armed) return;
    armed = deadline;
    if (!deadline) {
      timer.cancel();
      return;
    }
    timer.expires_at(*deadline);
    timer.async_wait([this](const boost::system::error_code& error) {
      if (error) return;
      // Reset first, so that Arm() after the Tick arms again even for the same deadline.
      armed.reset();
      Perform(core.Tick(Clock::now()));
    });
  }

  void PerformOne(AgentEffect& effect) {
    std::visit([this](auto& e) { Do(e); }, effect);
  }

  void Do(SendEffect& e) {
    SendFrame(protocol::Encode(e.message), protocol::MessageName(e.message));
  }

  // Sends an encoded message (`name` for the log).
  void SendFrame(std::string_view frame, std::string_view name) {
    Status status = send(frame);
    if (!status.ok()) log.warn(fmt::runtime("send {}: {}"), name, status.message());
  }

  // Written and fsync'd on the spool's thread (agent/spool_writer.h), sent once
  // written. A spool failure still sends (the coordinator may store it) but is
  // logged: the message is not durable.
  void Do(SpoolAndSendEffect& e) {
    std::size_t bytes = SpooledBytes(e.message);
    spool_writer.Post(bytes, [this, message = std::move(e.message)](Spool& disk) {
      std::string frame = protocol::Encode(message);
      Status status = Status::Ok();
      if (const auto* chunk = std::get_if<protocol::DigestChunk>(&message)) {
        status = disk.AddChunk(*chunk, frame);
      } else if (const auto* finished = std::get_if<protocol::RunFinished>(&message)) {
        status = disk.AddFinished(*finished, frame);
      }
      std::optional<SpoolLedger> ledger;
      if (!status.ok()) ledger = disk.Ledger();
      return std::function<void()>([this, frame = std::move(frame),
                                    name = protocol::MessageName(message), status,
                                    ledger = std::move(ledger)] {
        if (!status.ok()) log.error(fmt::runtime("spool: {}"), status.message());
        SendFrame(frame, name);
        if (ledger) Perform(core.OnSpoolFailed(*ledger, Clock::now()));
      });
    });
  }

  void Do(SpoolAckEffect& e) {
    spool_writer.Post(0, [this, run_id = std::move(e.run_id), seq = e.seq](Spool& disk) {
      Status status = disk.Ack(run_id, seq);
      if (status.ok()) return std::function<void()>();
      return std::function<void()>([this, status, ledger = disk.Ledger()] {
        log.warn(fmt::runtime("spool ack: {}"), status.message());
        Perform(core.OnSpoolFailed(ledger, Clock::now()));
      });
    });
  }

  void Do(ResendSpoolEffect&) {
    spool_writer.Post(0, [this](Spool& disk) {
      return std::function<void()>([this, frames = disk.UnackedFrames()] {
        for (const std::string& frame : frames) {
          Status status = send(frame);
          if (!status.ok()) log.warn(fmt::runtime("resend: {}"), status.message());
        }
      });
    });
  }

  void Do(PrepareRunEffect& e) {
    const protocol::Assign& assign = e.assign;
    // Resolving may hash or generate a model file on this thread (see
    // agent/model_resolver.h).
    Result<DriverJob> job = BuildDriverJob(assign, models, config.driver_threads);
    if (!job.ok()) {
      return Perform(core.OnRunNotPrepared(assign, protocol::kRefusedJob, job.status().message(),
                                           Clock::now()));
    }
    if (!IsServerEngine(assign.requirements.engine)) return Prepared(assign, std::move(*job));
    AxisValues coordinate;
    for (const protocol::KeyValue& kv : assign.coordinate) coordinate[kv.key] = kv.value;
    // Copied first: the callback below takes the job.
    std::string model = job->model_path;
    // May finish at once (attached, reused) or once a launched server is healthy.
    servers.Acquire(assign.run_id, assign.requirements.engine, model, coordinate,
                    [this, assign, job = std::move(*job)](ServerOutcome outcome) mutable {
                      if (!outcome.code.empty()) {
                        return Perform(core.OnRunNotPrepared(assign, outcome.code, outcome.message,
                                                             Clock::now()));
                      }
                      if (outcome.server) AddServer(job, *outcome.server);
                      Prepared(assign, std::move(job));
                    });
  }

  // The job is ready (its model resolved, its server up): the run begins.
  void Prepared(const protocol::Assign& assign, DriverJob job) {
    // Only after the job is built: the spool records a run once it can start, and a
    // restarted agent reports every recorded, unfinished run as failed (Start). On
    // the spool's thread, in order with the run's results and without waiting for
    // the last run's to be durable: an agent that dies before this record is
    // durable leaves the run to the coordinator, which fails it as lost when the
    // agent registers again without it.
    spool_writer.Post(0, [this, run_id = assign.run_id](Spool& disk) {
      Status begun = disk.BeginRun(run_id);
      if (begun.ok()) return std::function<void()>();
      return std::function<void()>([this, run_id, begun, ledger = disk.Ledger()] {
        log.error(fmt::runtime("spool: run {}: {}"), run_id, begun.message());
        Perform(core.OnSpoolFailed(ledger, Clock::now()));
      });
    });
    Running& running = runs[assign.run_id];
    OpenLog(assign.run_id, running);
    Perform(core.OnRunPrepared(assign.run_id, job.experiment, std::move(job.json), running.log_path,
                               Clock::now()));
  }

  // The driver's stderr goes to SPOOL/logs/RUN.log (removed when the run
  // succeeds). A log that cannot be opened costs only the log.
  void OpenLog(const std::string& run_id, Running& running) {
    std::filesystem::path dir = std::filesystem::path(spool.dir()) / "logs";
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    running.log_path = (dir / (run_id + ".log")).string();
    running.log.open(running.log_path, std::ios::binary | std::ios::trunc);
    if (!running.log) {
      log.warn(fmt::runtime("run {}: cannot write the driver log {}"), run_id, running.log_path);
      running.log_path.clear();
    }
  }

  void Do(LaunchEffect& e) {
    if (e.session != 0) return LaunchSession(e);
    Running& running = runs[e.run_id];
    // `running` is captured by reference below: std::map entries do not move, and
    // this one lives until RunEndedEffect, which follows the driver's exit.
    LaunchRequest request{e.driver.executable, {}, std::move(e.job), config.run_timeout};
    std::string run_id = e.run_id;
    ProcessHandlers handlers{[this, run_id](std::string_view bytes) {
                               Perform(core.OnDriverOutput(run_id, bytes, Clock::now()));
                             },
                             [this, run_id](ProcessExit exit) {
                               Perform(core.OnDriverExit(run_id, exit, Clock::now()));
                             },
                             [&running](std::string_view bytes) {
                               running.log.write(bytes.data(),
                                                 static_cast<std::streamsize>(bytes.size()));
                             }};
    Result<std::unique_ptr<Process>> process = launcher.Launch(request, std::move(handlers));
    if (process.ok()) {
      running.process = std::move(process).value();
      return;
    }
    // 127, as a shell reports a command it could not run. Posted, not called: the
    // core is still handing out effects, and must see the exit as a later event.
    ProcessExit failed{ProcessExit::Reason::kExited, 127, 0, process.status().message()};
    asio::post(
        io, [this, run_id, failed] { Perform(core.OnDriverExit(run_id, failed, Clock::now())); });
  }

  // `DRIVER session` with the run's job as its first job frame.
  void LaunchSession(LaunchEffect& e) {
    std::uint64_t id = e.session;
    sessions[id].run_id = e.run_id;
    LaunchRequest request{e.driver.executable,
                          {kDriverSessionCommand},
                          EncodeJobFrame(e.job),
                          config.run_timeout,
                          /*keep_stdin_open=*/true};
    ProcessHandlers handlers{[this, id](std::string_view bytes) {
                               auto it = sessions.find(id);
                               if (it == sessions.end()) return;
                               if (it->second.run_id.empty()) {
                                 return Perform(core.OnIdleSessionOutput(id, Clock::now()));
                               }
                               Perform(core.OnDriverOutput(it->second.run_id, bytes, Clock::now()));
                             },
                             [this, id](ProcessExit exit) { SessionExited(id, std::move(exit)); },
                             [this, id](std::string_view bytes) {
                               auto it = sessions.find(id);
                               if (it == sessions.end()) return;
                               auto run = runs.find(it->second.run_id);
                               if (run == runs.end()) return;
                               run->second.log.write(bytes.data(),
                                                     static_cast<std::streamsize>(bytes.size()));
                             }};
    Result<std::unique_ptr<Process>> process = launcher.Launch(request, std::move(handlers));
    if (process.ok()) {
      sessions[id].process = std::move(process).value();
      return;
    }
    sessions.erase(id);
    ProcessExit failed{ProcessExit::Reason::kExited, 127, 0, process.status().message()};
    asio::post(io, [this, run_id = e.run_id, failed] {
      Perform(core.OnDriverExit(run_id, failed, Clock::now()));
    });
  }

  void SessionExited(std::uint64_t id, ProcessExit exit) {
    auto it = sessions.find(id);
    if (it == sessions.end()) return;
    std::string run_id = it->second.run_id;
    // The Process is the caller: destroyed after this handler returns.
    std::shared_ptr<Process> process = std::move(it->second.process);
    sessions.erase(it);
    asio::post(io, [process] {});
    if (!run_id.empty()) return Perform(core.OnDriverExit(run_id, exit, Clock::now()));
    Perform(core.OnSessionExit(id, exit, Clock::now()));
  }

  void Do(FeedSessionEffect& e) {
    auto it = sessions.find(e.session);
    if (it == sessions.end() || !it->second.process) {  // its exit is on its way to the core
      ProcessExit gone{ProcessExit::Reason::kExited, 127, 0, "the warm session had ended"};
      asio::post(io, [this, run_id = e.run_id, gone] {
        Perform(core.OnDriverExit(run_id, gone, Clock::now()));
      });
      return;
    }
    it->second.run_id = e.run_id;
    it->second.process->Write(EncodeJobFrame(e.job));
    it->second.process->SetTimeout(config.run_timeout);
  }

  void Do(CloseSessionEffect& e) {
    auto it = sessions.find(e.session);
    if (it == sessions.end() || !it->second.process) return;
    it->second.closing = true;
    it->second.process->CloseStdin();
    it->second.process->SetTimeout(kSessionCloseGrace);
  }

  void Do(CancelRunEffect& e) {
    auto it = runs.find(e.run_id);
    if (it != runs.end() && it->second.process) it->second.process->Cancel();
    for (auto& [id, session] : sessions) {
      // The run's driver is the session's process: killed with its group.
      if (session.run_id == e.run_id && session.process) session.process->Cancel();
    }
  }

  void Do(RunEndedEffect& e) {
    servers.Release(e.run_id);
    for (auto& [id, session] : sessions) {
      if (session.run_id != e.run_id) continue;
      session.run_id.clear();
      // Idle now: the core closes it after warm_idle; this is only a backstop.
      if (!session.closing && session.process) {
        session.process->SetTimeout(config.warm_idle + kSessionCloseGrace);
      }
    }
    auto it = runs.find(e.run_id);
    if (it == runs.end()) return;
    it->second.log.close();
    if (e.succeeded) {
      std::error_code ignored;
      std::filesystem::remove(it->second.log_path, ignored);
    }
    // The Process may be the caller: destroy it after this handler returns.
    std::shared_ptr<Process> process = std::move(it->second.process);
    runs.erase(it);
    asio::post(io, [process] {});
  }

  // Runs `job` on the worker thread and `done` with its result on the loop
  // (nothing when the service is gone by then).
  template <typename T>
  void OnWorker(std::function<T()> job, std::function<void(T)> done) {
    if (!workers) workers = std::make_unique<asio::thread_pool>(1);
    std::weak_ptr<bool> token = alive;
    asio::post(*workers, [this, token, job = std::move(job), done = std::move(done)] {
      T result = job();
      asio::post(io, [token, done, result = std::move(result)]() mutable {
        if (!token.expired()) done(std::move(result));
      });
    });
  }

  void Do(ScanModelsEffect&) {
    OnWorker<std::vector<std::string>>(model_scan, [this](std::vector<std::string> hashes) {
      Perform(core.OnModelsScanned(std::move(hashes), Clock::now()));
    });
  }

  void Do(CheckFingerprintEffect&) {
    OnWorker<std::string>(fingerprint_json_provider, [this](std::string json) {
      Perform(core.OnFingerprint(std::move(json), Clock::now()));
    });
  }

  void Do(StoppedEffect&) {
    if (on_stopped) asio::post(io, on_stopped);
  }

  void Do(LogEffect& e) {
    switch (e.level) {
      case LogEffect::Level::kInfo:
        return log.info(fmt::runtime("{}"), e.line);
      case LogEffect::Level::kWarn:
        return log.warn(fmt::runtime("{}"), e.line);
      case LogEffect::Level::kError:
        return log.error(fmt::runtime("{}"), e.line);
    }
  }
};

AgentService::AgentService(asio::io_context& io, ProcessLauncher& launcher, Spool& spool,
                           ModelResolver& models, spdlog::logger& log, AgentServiceOptions options,
                           SendFn send)
    : impl_(std::make_unique<Impl>(io, launcher, spool, models, log, std::move(options),
                                   std::move(send))) {}

AgentService::~AgentService() = default;

Status AgentService::Start() {
  // Runs an earlier process of this agent began and never finished. Their chunk
  // count is what the spool holds, so the coordinator can tell when it has them all.
  for (const std::string& run_id : impl_->spool.UnfinishedRuns()) {
    protocol::RunFinished finished{
        run_id, protocol::RunStatus::kFailed, "{}",
        "agent " + impl_->config.id + " restarted while the run was in progress",
        impl_->spool.ChunkCount(run_id)};
    ORCH_RETURN_IF_ERROR(impl_->spool.AddFinished(finished));
  }
  impl_->Perform(impl_->core.Start(impl_->spool.Ledger(), Clock::now()));
  return Status::Ok();
}

void AgentService::Reconnect(SendFn send) {
  impl_->send = std::move(send);
  impl_->Perform(impl_->core.OnReconnected(Clock::now()));
}

void AgentService::OnEvent(const protocol::TransportEvent& event) {
  if (event.kind == protocol::TransportEvent::Kind::kRefused) {
    ++impl_->measures.refused_handshakes;
    // Once per streak: the transport keeps connecting again (backing off up to
    // 30 s), and the agent registers as soon as its key is admitted.
    impl_->log.error(fmt::runtime("{}; still trying: this agent registers as soon as the "
                                  "coordinator admits its key (docs/security.md)"),
                     event.frame);
    return;
  }
  if (event.kind != protocol::TransportEvent::Kind::kFrame || impl_->core.stopped()) return;
  Result<protocol::Message> message = protocol::Decode(event.frame);
  if (!message.ok()) {
    ++impl_->measures.bad_frames;
    impl_->log.warn(fmt::runtime("dropping a bad frame from the coordinator: {}"),
                    message.status().message());
    return;
  }
  impl_->Perform(impl_->core.OnMessage(*message, Clock::now()));
}

void AgentService::Stop() {
  // A run waiting for its server to start is refused (agent_draining) first.
  impl_->servers.AbortStarts();
  impl_->Perform(impl_->core.Stop(Clock::now()));
}

void AgentService::Drain(std::chrono::milliseconds grace) {
  impl_->Perform(impl_->core.Drain(grace, Clock::now()));
}

void AgentService::SetOnStopped(std::function<void()> on_stopped) {
  impl_->on_stopped = std::move(on_stopped);
}

void AgentService::WaitForSpool() { impl_->spool_writer.WaitIdle(); }

std::string AgentService::MetricsText() const {
  AgentShellMeasures shell = impl_->measures;
  shell.spool_queued_bytes = impl_->spool_writer.QueuedBytes();
  return AgentMetricsText({impl_->config.id, impl_->config.hardware, impl_->core.fingerprint_id()},
                          impl_->core.counters(), impl_->core.Gauges(), shell);
}

bool AgentService::welcomed() const { return impl_->core.welcomed(); }
std::size_t AgentService::running() const { return impl_->core.running(); }
bool AgentService::stopped() const { return impl_->core.stopped(); }

}  // namespace orch::agent
