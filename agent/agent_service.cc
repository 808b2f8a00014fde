#include "agent/agent_service.h"

#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <utility>  // before Boost.Asio under C++20 (Debian 12)

#include "agent/driver_job.h"
#include "fingerprint/canonical_json.h"
#include "agent/driver_run.h"
#include "protocol/codec.h"

namespace orch::agent {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

// 64 random bits in hex, fresh for every agent process.
std::string NewIncarnation() {
  std::random_device device;
  std::uint64_t bits = (std::uint64_t{device()} << 32) ^ device();
  return fmt::format("{:016x}", bits);
}

}  // namespace

struct AgentService::Impl {
  struct Running {
    explicit Running(DriverRun r) : run(std::move(r)) {}
    DriverRun run;
    std::string experiment;
    std::unique_ptr<Process> process;
    std::string log_path;  // the driver's whole stderr; kept when the run fails
    std::ofstream log;
    std::string driver;    // its name in the config
    Clock::time_point launched = Clock::now();
  };

  Impl(asio::io_context& io, ProcessLauncher& launcher, Spool& spool,
       ModelResolver& models, spdlog::logger& log, AgentServiceOptions options,
       SendFn send)
      : io(io),
        launcher(launcher),
        spool(spool),
        models(models),
        log(log),
        options(std::move(options)),
        send(std::move(send)),
        timer(io),
        quarantine(this->options.quarantine) {}

  ~Impl() {
    alive.reset();  // a scan that completes now posts a handler that does nothing
    if (workers) workers->join();
  }

  asio::io_context& io;
  ProcessLauncher& launcher;
  Spool& spool;
  ModelResolver& models;
  spdlog::logger& log;
  AgentServiceOptions options;
  SendFn send;
  asio::steady_timer
      timer;  // heartbeats, Hello retries, stall checks, shutdown grace
  std::map<std::string, std::unique_ptr<Running>> runs;
  std::function<void()> on_stopped;
  bool welcomed = false;
  bool draining = false;  // no new work; stop once everything is acknowledged
  bool stopping = false;  // Stop(): as draining, but with a deadline
  bool stopped = false;
  std::chrono::milliseconds heartbeat{1000};
  DriverQuarantine quarantine;  // drivers no longer offered
  Clock::time_point last_progress = Clock::now();  // last ack, or last resend
  // When each unacknowledged message ("RUN/SEQ") was first seen unacknowledged
  // (or last resent): one left unacknowledged for resend_after is resent, even
  // while acks for other messages keep arriving (a write the coordinator
  // refused, e.g. on a full disk, is never acknowledged).
  std::map<std::string, Clock::time_point> unacked_since;
  Clock::time_point last_fingerprint_check = Clock::now();
  Clock::time_point stop_deadline;
  // Drain(grace): when it passes with runs still going, they are cancelled (Stop).
  std::optional<Clock::time_point> drain_deadline;
  // This process's Hello::incarnation: a restart is a new agent to the coordinator.
  const std::string incarnation = NewIncarnation();
  // Model scans (options.model_scan) run here, one at a time.
  std::unique_ptr<asio::thread_pool> workers;
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);
  bool scanning = false;
  bool scanned_once = false;
  Clock::time_point last_scan = Clock::now();

  const std::string& id() const { return options.config.id; }

  void SendMessage(const protocol::Message& message) {
    Status status = send(protocol::Encode(message));
    if (!status.ok()) {
      log.warn(fmt::runtime("send {}: {}"), protocol::MessageName(message),
               status.message());
    }
  }

  void SendFrame(const std::string& frame) {
    Status status = send(frame);
    if (!status.ok()) log.warn(fmt::runtime("resend: {}"), status.message());
  }

  std::vector<std::string> RunIds() const {
    std::vector<std::string> ids;
    for (const auto& [run_id, running] : runs) ids.push_back(run_id);
    return ids;
  }

  void SayHello() {
    protocol::Hello hello;
    hello.agent_id = id();
    for (const DriverConfig& driver : options.config.drivers) {
      if (!quarantine.quarantined(driver.name))
        hello.capabilities.engines.push_back(driver.engine);
    }
    hello.capabilities.hardware_class = options.config.hardware;
    hello.capabilities.gpus = options.config.gpus;
    hello.capabilities.slots = options.config.slots;
    hello.capabilities.model_hashes = options.model_hashes;
    hello.fingerprint_id = options.fingerprint_id;
    hello.fingerprint_json = options.fingerprint_json;
    hello.host_facts = options.host_facts;
    if (std::string quarantined = QuarantinedDrivers(); !quarantined.empty())
      hello.host_facts.push_back({"quarantined_drivers", quarantined});
    hello.running_runs = RunIds();
    hello.incarnation = incarnation;
    for (const std::string& run_id : spool.FinishedUnacked()) {
      if (!runs.contains(run_id)) hello.delivering_runs.push_back(run_id);
    }
    welcomed = false;
    SendMessage(hello);
    Arm(options.hello_retry);
  }

  void Arm(std::chrono::milliseconds after) {
    timer.expires_after(after);
    timer.async_wait([this](const boost::system::error_code& error) {
      if (!error) OnTimer();
    });
  }

  void OnTimer() {
    if (stopped) return;
    if (stopping && Clock::now() >= stop_deadline) return Finish();
    if (draining && !stopping && drain_deadline && Clock::now() >= *drain_deadline) {
      log.info(fmt::runtime("drain time is up: cancelling {} runs"), runs.size());
      return BeginStop();
    }
    if (!welcomed) return SayHello();
    if (OldestUnackedIsStale()) {
      log.info(
          fmt::runtime("a message unacknowledged for {} ms, {} spooled: "
                       "registering again"),
          options.resend_after.count(), spool.unacked());
      last_progress = Clock::now();
      for (auto& [key, since] : unacked_since) since = last_progress;
      return SayHello();
    }
    if (FingerprintChanged()) return SayHello();
    if (options.model_scan && !scanning &&
        Clock::now() - last_scan >= options.model_rescan) {
      StartScan();
    }
    protocol::Heartbeat beat{id(), RunIds(), FreeSlots()};
    SendMessage(beat);
    ArmHeartbeat();
  }

  // The next heartbeat, or the end of a drain when that comes first.
  void ArmHeartbeat() {
    auto after = heartbeat;
    if (draining && drain_deadline) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(*drain_deadline - Clock::now());
      after = std::max(std::chrono::milliseconds(0), std::min(after, left));
    }
    Arm(after);
  }

  // Rechecks the fingerprint when it is due; true (with the new one adopted) when it
  // changed since the last Hello.
  bool FingerprintChanged() {
    if (!options.fingerprint_json_provider ||
        Clock::now() - last_fingerprint_check < options.fingerprint_check) {
      return false;
    }
    last_fingerprint_check = Clock::now();
    std::string json = options.fingerprint_json_provider();
    if (json.empty() || json == options.fingerprint_json) return false;
    std::string id = fingerprint::FingerprintIdOfJson(json);
    log.info(fmt::runtime("fingerprint changed: {} -> {}; registering again"),
             options.fingerprint_id, id);
    options.fingerprint_json = std::move(json);
    options.fingerprint_id = std::move(id);
    return true;
  }

  // Hashes the model folders on the worker thread; OnScanned gets the result on
  // the loop.
  void StartScan() {
    if (!workers) workers = std::make_unique<asio::thread_pool>(1);
    scanning = true;
    std::weak_ptr<bool> token = alive;
    asio::post(*workers, [this, token] {
      std::vector<std::string> hashes = options.model_scan();
      asio::post(io, [this, token, hashes = std::move(hashes)]() mutable {
        if (!token.expired()) OnScanned(std::move(hashes));
      });
    });
  }

  void OnScanned(std::vector<std::string> hashes) {
    scanning = false;
    last_scan = Clock::now();
    bool first = !scanned_once;
    scanned_once = true;
    if (stopped || (!first && hashes == options.model_hashes)) return;
    log.info(fmt::runtime("{} model files offered ({} before); registering"),
             hashes.size(), options.model_hashes.size());
    options.model_hashes = std::move(hashes);
    SayHello();
  }

  std::int32_t FreeSlots() const {
    if (draining || stopping) return 0;
    return std::max<std::int32_t>(
        0, options.config.slots - static_cast<std::int32_t>(runs.size()));
  }

  // Updates unacked_since from the spool; true when some message has waited
  // for its acknowledgement resend_after or longer.
  bool OldestUnackedIsStale() {
    Clock::time_point now = Clock::now();
    std::map<std::string, Clock::time_point> still;
    bool stale = false;
    for (std::string& key : spool.UnackedKeys()) {
      auto it = unacked_since.find(key);
      Clock::time_point since = it == unacked_since.end() ? now : it->second;
      stale = stale || now - since >= options.resend_after;
      still.emplace(std::move(key), since);
    }
    unacked_since = std::move(still);
    return stale;
  }

  void OnWelcome(const protocol::Welcome& welcome) {
    welcomed = true;
    heartbeat = welcome.heartbeat_interval;
    last_progress = Clock::now();
    std::vector<std::string> frames = spool.UnackedFrames();
    log.info(fmt::runtime("welcomed by {}; resending {} spooled messages"),
             welcome.coordinator_id, frames.size());
    for (const std::string& frame : frames) SendFrame(frame);
    Arm(heartbeat);
  }

  // `code`: why, for the coordinator (protocol/messages.h, kRefused*).
  void Refuse(const protocol::Assign& assign, std::string_view code, const std::string& reason) {
    log.warn(fmt::runtime("run {}: refused: {}"), assign.run_id, reason);
    nlohmann::json summary = {{"error", {{"code", code}, {"message", reason}}}};
    protocol::RunFinished finished{
        assign.run_id, protocol::RunStatus::kFailed, summary.dump(),
        "agent " + id() + " refused the run: " + reason, 0};
    Spooled(finished);
  }

  // Writes `message` to the spool, then sends it. A spool failure still sends
  // (the coordinator may store it) but is logged: the message is not durable.
  void Spooled(const protocol::DigestChunk& chunk) {
    Status status = spool.AddChunk(chunk);
    if (!status.ok()) log.error(fmt::runtime("spool: {}"), status.message());
    SendMessage(chunk);
  }
  void Spooled(const protocol::RunFinished& finished) {
    Status status = spool.AddFinished(finished);
    if (!status.ok()) log.error(fmt::runtime("spool: {}"), status.message());
    SendMessage(finished);
  }

  // The first driver for `engine` that is not quarantined.
  const DriverConfig* DriverFor(const std::string& engine) const {
    for (const DriverConfig& driver : options.config.drivers) {
      if (driver.engine == engine && !quarantine.quarantined(driver.name)) return &driver;
    }
    return nullptr;
  }

  std::string Engines() const {
    std::string engines;
    for (const DriverConfig& driver : options.config.drivers) {
      if (quarantine.quarantined(driver.name)) continue;
      engines += (engines.empty() ? "" : ", ") + driver.engine;
    }
    return engines.empty() ? "none" : engines;
  }

  // "NAME (ENGINE): WHY; ..." for every quarantined driver; empty when none is.
  std::string QuarantinedDrivers() const {
    std::string out;
    for (const DriverConfig& driver : options.config.drivers) {
      if (!quarantine.quarantined(driver.name)) continue;
      out += (out.empty() ? "" : "; ") + driver.name + " (" + driver.engine +
             "): " + quarantine.reason(driver.name);
    }
    return out;
  }

  // Why an Assign for `engine` found no driver.
  std::string NoDriverReason(const std::string& engine) const {
    for (const DriverConfig& driver : options.config.drivers) {
      if (driver.engine == engine && quarantine.quarantined(driver.name)) {
        return "driver " + driver.name + " for engine \"" + engine +
               "\" is quarantined on this agent (" + quarantine.reason(driver.name) +
               "); fix it and restart the agent";
      }
    }
    return "no driver for engine \"" + engine + "\" (this agent has: " + Engines() + ")";
  }

  static RunEnding EndingOf(const Running& running, const protocol::RunFinished& finished) {
    return {finished.status, running.run.records(), running.run.error_code(),
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() -
                                                                  running.launched),
            finished.error};
  }

  // Counts a run's ending towards its driver's quarantine; registers again
  // without the driver's engine when this run quarantined it.
  void NoteRunEnding(const std::string& driver, const RunEnding& ending) {
    if (!quarantine.Observe(driver, ending)) return;
    log.error(fmt::runtime("driver {} quarantined: {}; engine(s) offered now: {}. Fix "
                           "the driver and restart the agent"),
              driver, quarantine.reason(driver), Engines());
    if (!stopped && !stopping) SayHello();
  }

  void OnAssign(const protocol::Assign& assign) {
    if (runs.contains(assign.run_id)) return;  // a duplicate Assign
    if (draining || stopping) return Refuse(assign, protocol::kRefusedDraining, "the agent is draining");
    const DriverConfig* driver = DriverFor(assign.requirements.engine);
    if (driver == nullptr) {
      return Refuse(assign, protocol::kRefusedNoEngine,
                    NoDriverReason(assign.requirements.engine));
    }
    if (FreeSlots() <= 0) return Refuse(assign, protocol::kRefusedBusy, "no free slot");
    // Resolving may hash or generate a model file on this thread (see
    // agent/model_resolver.h).
    Result<DriverJob> job = BuildDriverJob(assign, models, options.config.driver_threads);
    if (!job.ok()) return Refuse(assign, protocol::kRefusedJob, job.status().message());
    Status begun = spool.BeginRun(assign.run_id);
    if (!begun.ok()) return Refuse(assign, protocol::kRefusedSpool, "spool: " + begun.message());
    auto running = std::make_unique<Running>(
        DriverRun(assign.run_id, driver->name, kRecordsPerChunk));
    running->experiment = job->experiment;
    running->driver = driver->name;
    Running* raw = running.get();
    OpenLog(assign.run_id, *raw);
    runs[assign.run_id] = std::move(running);
    SendMessage(protocol::RunStarted{assign.run_id});
    log.info(fmt::runtime("run {}: job {} on driver {}"), assign.run_id,
             assign.job_id, driver->name);
    Launch(*driver, assign.run_id, std::move(job->json), *raw);
  }

  void Launch(const DriverConfig& driver, const std::string& run_id,
              std::string job, Running& running) {
    LaunchRequest request{
        driver.executable, {}, std::move(job), options.config.run_timeout};
    ProcessHandlers handlers{
        [this, run_id](std::string_view bytes) { OnStdout(run_id, bytes); },
        [this, run_id](ProcessExit exit) { OnExit(run_id, std::move(exit)); },
        [&running](std::string_view bytes) {
          running.log.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        }};
    Result<std::unique_ptr<Process>> process =
        launcher.Launch(request, std::move(handlers));
    if (process.ok()) {
      running.process = std::move(process).value();
      return;
    }
    ProcessExit failed{ProcessExit::Reason::kExited, 127, 0,
                       process.status().message()};
    asio::post(io, [this, run_id, failed] { OnExit(run_id, failed); });
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
      log.warn(fmt::runtime("run {}: cannot write the driver log {}"), run_id,
               running.log_path);
      running.log_path.clear();
    }
  }

  void OnStdout(const std::string& run_id, std::string_view bytes) {
    auto it = runs.find(run_id);
    if (it == runs.end()) return;
    std::vector<protocol::DigestChunk> chunks;
    Status status = it->second->run.Feed(bytes, &chunks);
    for (const protocol::DigestChunk& chunk : chunks) Spooled(chunk);
    if (!status.ok() && it->second->process) {
      log.warn(fmt::runtime("run {}: {}; killing the driver"), run_id,
               status.message());
      it->second->process->Cancel();
    }
  }

  void OnExit(const std::string& run_id, ProcessExit exit) {
    auto it = runs.find(run_id);
    if (it == runs.end()) return;
    DriverRun& run = it->second->run;
    if (std::optional<protocol::DigestChunk> last = run.Flush()) Spooled(*last);
    it->second->log.close();
    protocol::RunFinished finished = run.Finish(exit, it->second->log_path);
    if (finished.status == protocol::RunStatus::kSucceeded) {
      log.info(fmt::runtime("run {}: succeeded, {} records"), run_id,
               run.records());
      std::error_code ignored;
      std::filesystem::remove(it->second->log_path, ignored);
    } else {
      log.warn(fmt::runtime("run {}: {}"), run_id, finished.error);
    }
    Spooled(finished);
    RunEnding ending = EndingOf(*it->second, finished);
    std::string driver = it->second->driver;
    // The Process may be the caller: destroy it after this handler returns.
    std::shared_ptr<Process> process = std::move(it->second->process);
    runs.erase(it);
    asio::post(io, [process] {});
    NoteRunEnding(driver, ending);
    MaybeStop();
  }

  void OnAck(const protocol::Ack& ack) {
    Status status = spool.Ack(ack.run_id, ack.seq);
    if (!status.ok()) log.warn(fmt::runtime("spool ack: {}"), status.message());
    last_progress = Clock::now();
    MaybeStop();
  }

  void OnCancel(const protocol::Cancel& cancel) {
    for (auto& [run_id, running] : runs) {
      bool match = cancel.run_id.empty()
                       ? running->experiment == cancel.experiment
                       : run_id == cancel.run_id;
      if (match && running->process) {
        log.info(fmt::runtime("run {}: cancelled by the coordinator"), run_id);
        running->process->Cancel();
      }
    }
  }

  // No new work, running drivers cancelled, up to shutdown_grace for the acks.
  void BeginStop() {
    if (stopping || stopped) return;
    stopping = true;
    stop_deadline = Clock::now() + options.shutdown_grace;
    for (auto& [run_id, running] : runs) {
      if (running->process) running->process->Cancel();
    }
    Arm(options.shutdown_grace);
    MaybeStop();
  }

  void MaybeStop() {
    if (stopped || !(draining || stopping) || !runs.empty() ||
        spool.unacked() > 0)
      return;
    Finish();
  }

  void Finish() {
    if (stopped) return;
    stopped = true;
    timer.cancel();
    log.info(fmt::runtime("agent {} stopped; {} messages left in the spool"),
             id(), spool.unacked());
    if (on_stopped) asio::post(io, on_stopped);
  }

  void OnMessage(const protocol::Message& message) {
    if (const auto* welcome = std::get_if<protocol::Welcome>(&message))
      return OnWelcome(*welcome);
    if (const auto* reject = std::get_if<protocol::Reject>(&message)) {
      log.error(fmt::runtime("coordinator rejected agent {}: {}"), id(),
                reject->reason);
      welcomed = false;
      return Arm(options.hello_retry);
    }
    if (const auto* assign = std::get_if<protocol::Assign>(&message))
      return OnAssign(*assign);
    if (const auto* ack = std::get_if<protocol::Ack>(&message))
      return OnAck(*ack);
    if (const auto* cancel = std::get_if<protocol::Cancel>(&message))
      return OnCancel(*cancel);
    if (std::holds_alternative<protocol::Drain>(message)) {
      log.info(fmt::runtime("draining: finishing {} runs"), runs.size());
      draining = true;
      return MaybeStop();
    }
    log.warn(fmt::runtime("ignoring {} from the coordinator"),
             protocol::MessageName(message));
  }
};

AgentService::AgentService(asio::io_context& io, ProcessLauncher& launcher,
                           Spool& spool, ModelResolver& models,
                           spdlog::logger& log, AgentServiceOptions options,
                           SendFn send)
    : impl_(std::make_unique<Impl>(io, launcher, spool, models, log,
                                   std::move(options), std::move(send))) {}

AgentService::~AgentService() = default;

Status AgentService::Start() {
  for (const std::string& run_id : impl_->spool.UnfinishedRuns()) {
    protocol::RunFinished finished{
        run_id, protocol::RunStatus::kFailed, "{}",
        "agent " + impl_->id() + " restarted while the run was in progress",
        impl_->spool.ChunkCount(run_id)};
    ORCH_RETURN_IF_ERROR(impl_->spool.AddFinished(finished));
  }
  if (impl_->options.model_scan) {
    impl_->log.info(fmt::runtime("hashing the model files in {} model_dirs "
                                 "entries before registering"),
                    impl_->options.config.model_dirs.size());
    impl_->StartScan();  // Hello follows the first scan
    return Status::Ok();
  }
  impl_->SayHello();
  return Status::Ok();
}

void AgentService::Reconnect(SendFn send) {
  impl_->send = std::move(send);
  if (!impl_->options.model_scan || impl_->scanned_once) impl_->SayHello();
}

void AgentService::OnEvent(const protocol::TransportEvent& event) {
  if (event.kind != protocol::TransportEvent::Kind::kFrame || impl_->stopped)
    return;
  Result<protocol::Message> message = protocol::Decode(event.frame);
  if (!message.ok()) {
    impl_->log.warn(
        fmt::runtime("dropping a bad frame from the coordinator: {}"),
        message.status().message());
    return;
  }
  impl_->OnMessage(*message);
}

void AgentService::Stop() { impl_->BeginStop(); }

void AgentService::Drain(std::chrono::milliseconds grace) {
  if (impl_->stopping || impl_->stopped) return;
  impl_->log.info(fmt::runtime("draining for up to {} ms: finishing {} runs"),
                  grace.count(), impl_->runs.size());
  impl_->draining = true;
  impl_->drain_deadline = Clock::now() + grace;
  impl_->MaybeStop();
  if (!impl_->stopped && impl_->welcomed) impl_->ArmHeartbeat();
}

void AgentService::SetOnStopped(std::function<void()> on_stopped) {
  impl_->on_stopped = std::move(on_stopped);
}

bool AgentService::welcomed() const { return impl_->welcomed; }
std::size_t AgentService::running() const { return impl_->runs.size(); }
bool AgentService::stopped() const { return impl_->stopped; }

}  // namespace orch::agent
