// Decode: one frame -> a validated Message. Every check of peer input lives
// here.
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "protocol/codec.h"
#include "protocol/orch.capnp.h"

namespace orch::protocol {
namespace {

namespace w = wire;

// Deep enough for the schema (Envelope -> StatusReply -> AgentSummary -> List
// -> Text); anything deeper is malformed.
constexpr int kNestingLimit = 16;

// A lease longer than 30 days is a bug on the sender's side.
constexpr std::uint64_t kMaxLeaseMs = 30ull * 24 * 3600 * 1000;

Status Malformed(std::string what) {
  return Status(StatusCode::kDataLoss, "malformed frame: " + std::move(what));
}

Status FieldError(const std::string& field, std::string_view rule) {
  return InvalidArgument(field + ": " + std::string(rule));
}

std::string Str(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }

std::string Bytes(capnp::Data::Reader d) {
  return std::string(reinterpret_cast<const char*>(d.begin()), d.size());
}

Status Required(const std::string& field, capnp::Text::Reader t) {
  return t.size() == 0 ? FieldError(field, "required, but empty") : Status::Ok();
}

Status AtLeast(const std::string& field, std::int64_t value, std::int64_t min) {
  if (value >= min) return Status::Ok();
  return FieldError(field, std::to_string(value) + " is below the minimum " + std::to_string(min));
}

template <typename Enum>
Status EnumInRange(const std::string& field, Enum value, Enum last) {
  // The wire carries any 16-bit value: one this build does not know must not be
  // cast into the enum class unchecked.
  auto raw = static_cast<std::uint16_t>(value);
  if (raw <= static_cast<std::uint16_t>(last)) return Status::Ok();
  return FieldError(field, "unknown enum value " + std::to_string(raw));
}

Status SameVersion(const std::string& field, std::uint32_t version) {
  if (version == kProtocolVersion) return Status::Ok();
  return Status(StatusCode::kFailedPrecondition,
                field + ": peer speaks protocol version " + std::to_string(version) +
                    ", this build speaks version " + std::to_string(kProtocolVersion));
}

std::vector<std::string> Texts(capnp::List<capnp::Text>::Reader list) {
  std::vector<std::string> out;
  out.reserve(list.size());
  for (auto t : list) out.push_back(Str(t));
  return out;
}

Result<std::vector<KeyValue>> Pairs(const std::string& field,
                                    capnp::List<w::KeyValue>::Reader list) {
  std::vector<KeyValue> out;
  out.reserve(list.size());
  for (unsigned i = 0; i < list.size(); ++i) {
    ORCH_RETURN_IF_ERROR(Required(field + "[" + std::to_string(i) + "].key", list[i].getKey()));
    out.push_back({Str(list[i].getKey()), Str(list[i].getValue())});
  }
  return out;
}

Result<Capabilities> ReadCapabilities(w::Capabilities::Reader r) {
  ORCH_RETURN_IF_ERROR(Required("hello.capabilities.hardwareClass", r.getHardwareClass()));
  ORCH_RETURN_IF_ERROR(AtLeast("hello.capabilities.gpus", r.getGpus(), 0));
  ORCH_RETURN_IF_ERROR(AtLeast("hello.capabilities.slots", r.getSlots(), 1));
  return Capabilities{Texts(r.getEngines()), Str(r.getHardwareClass()), r.getGpus(), r.getSlots(),
                      Texts(r.getModelHashes())};
}

// `field` names the list in messages ("hello.warmSessions").
Result<std::vector<WarmSession>> ReadWarm(const std::string& field,
                                          capnp::List<w::WarmSession>::Reader list) {
  std::vector<WarmSession> out;
  out.reserve(list.size());
  for (unsigned i = 0; i < list.size(); ++i) {
    std::string item = field + "[" + std::to_string(i) + "]";
    ORCH_RETURN_IF_ERROR(Required(item + ".engine", list[i].getEngine()));
    ORCH_ASSIGN_OR_RETURN(auto axes, Pairs(item + ".axes", list[i].getAxes()));
    out.push_back({Str(list[i].getEngine()), Str(list[i].getModel()), std::move(axes)});
  }
  return out;
}

Result<Hello> Read(w::Hello::Reader r) {
  ORCH_RETURN_IF_ERROR(SameVersion("hello.protocolVersion", r.getProtocolVersion()));
  ORCH_RETURN_IF_ERROR(Required("hello.agentId", r.getAgentId()));
  if (!r.hasCapabilities()) return FieldError("hello.capabilities", "required, but absent");
  ORCH_ASSIGN_OR_RETURN(Capabilities capabilities, ReadCapabilities(r.getCapabilities()));
  ORCH_ASSIGN_OR_RETURN(auto facts, Pairs("hello.hostFacts", r.getHostFacts()));
  ORCH_ASSIGN_OR_RETURN(auto warm, ReadWarm("hello.warmSessions", r.getWarmSessions()));
  return Hello{r.getProtocolVersion(),
               Str(r.getAgentId()),
               std::move(capabilities),
               Str(r.getFingerprintId()),
               std::move(facts),
               Texts(r.getRunningRuns()),
               Str(r.getFingerprintJson()),
               Texts(r.getDeliveringRuns()),
               Str(r.getIncarnation()),
               std::move(warm)};
}

Result<Welcome> Read(w::Welcome::Reader r) {
  ORCH_RETURN_IF_ERROR(SameVersion("welcome.protocolVersion", r.getProtocolVersion()));
  ORCH_RETURN_IF_ERROR(Required("welcome.coordinatorId", r.getCoordinatorId()));
  // 0 would have the agent heartbeat in a busy loop.
  ORCH_RETURN_IF_ERROR(AtLeast("welcome.heartbeatIntervalMs", r.getHeartbeatIntervalMs(), 1));
  return Welcome{r.getProtocolVersion(), Str(r.getCoordinatorId()),
                 std::chrono::milliseconds(r.getHeartbeatIntervalMs())};
}

// No version check: a Reject is how a peer of another version says so, and must
// be readable whatever version sent it.
Result<Reject> Read(w::Reject::Reader r) {
  ORCH_RETURN_IF_ERROR(Required("reject.reason", r.getReason()));
  return Reject{r.getProtocolVersion(), Str(r.getReason())};
}

Result<Heartbeat> Read(w::Heartbeat::Reader r) {
  ORCH_RETURN_IF_ERROR(Required("heartbeat.agentId", r.getAgentId()));
  ORCH_RETURN_IF_ERROR(AtLeast("heartbeat.freeSlots", r.getFreeSlots(), 0));
  ORCH_ASSIGN_OR_RETURN(auto warm, ReadWarm("heartbeat.warmSessions", r.getWarmSessions()));
  return Heartbeat{Str(r.getAgentId()), Texts(r.getRunningRuns()), r.getFreeSlots(),
                   std::move(warm)};
}

Result<Assign> Read(w::Assign::Reader r) {
  ORCH_RETURN_IF_ERROR(Required("assign.runId", r.getRunId()));
  ORCH_RETURN_IF_ERROR(Required("assign.jobId", r.getJobId()));
  ORCH_RETURN_IF_ERROR(Required("assign.workload", r.getWorkload()));
  if (r.getLeaseMs() == 0 || r.getLeaseMs() > kMaxLeaseMs) {
    return FieldError("assign.leaseMs", std::to_string(r.getLeaseMs()) + " is outside 1.." +
                                            std::to_string(kMaxLeaseMs));
  }
  auto q = r.getRequirements();
  ORCH_RETURN_IF_ERROR(AtLeast("assign.requirements.gpus", q.getGpus(), 0));
  ORCH_ASSIGN_OR_RETURN(auto coordinate, Pairs("assign.coordinate", r.getCoordinate()));
  Requirements requirements{Str(q.getEngine()), Str(q.getHardware()), q.getGpus(),
                            Str(q.getModel())};
  return Assign{Str(r.getRunId()),       Str(r.getJobId()),
                std::move(coordinate),   Str(r.getWorkload()),
                std::move(requirements), std::chrono::milliseconds(r.getLeaseMs()),
                Str(r.getJobSpec())};
}

Result<RunStarted> Read(w::RunStarted::Reader r) {
  ORCH_RETURN_IF_ERROR(Required("runStarted.runId", r.getRunId()));
  return RunStarted{Str(r.getRunId())};
}

// Protocol version 1 framed the records by hand in recordsV1: a chunk that sets
// it comes from a peer of that version. A list of zero-sized structs costs no
// bytes on the wire, so the record count is bounded by the frame's size before
// anything is allocated for it.
Result<DigestChunk> Read(w::DigestChunk::Reader r, std::size_t frame_bytes) {
  if (r.hasRecordsV1()) {
    return Status(StatusCode::kFailedPrecondition,
                  "digestChunk.recordsV1: peer speaks protocol version 1 (records framed "
                  "in one Data field), this build speaks version " +
                      std::to_string(kProtocolVersion));
  }
  auto list = r.getRecords();
  if (list.size() > frame_bytes / kMinChunkRecordBytes) {
    return Malformed("digestChunk.records: " + std::to_string(list.size()) +
                     " records do not fit in a frame of " + std::to_string(frame_bytes) +
                     " bytes (each takes at least " + std::to_string(kMinChunkRecordBytes) + ")");
  }
  ORCH_RETURN_IF_ERROR(Required("digestChunk.runId", r.getRunId()));
  DigestChunk chunk{Str(r.getRunId()), r.getSeq(), {}};
  chunk.records.reserve(list.size());
  for (auto record : list) {
    chunk.records.push_back({record.getPosition(), Bytes(record.getBytes())});
  }
  return chunk;
}

Result<RunFinished> Read(w::RunFinished::Reader r) {
  ORCH_RETURN_IF_ERROR(Required("runFinished.runId", r.getRunId()));
  ORCH_RETURN_IF_ERROR(EnumInRange("runFinished.status", r.getStatus(), w::RunStatus::TIMED_OUT));
  auto status = static_cast<RunStatus>(r.getStatus());
  // The error is what the coordinator records as the reason a job failed or
  // runs again.
  if (status == RunStatus::kFailed || status == RunStatus::kTimedOut) {
    ORCH_RETURN_IF_ERROR(Required("runFinished.error", r.getError()));
  }
  return RunFinished{Str(r.getRunId()), status, Str(r.getSummary()), Str(r.getError()),
                     r.getChunkCount()};
}

Result<Ack> Read(w::Ack::Reader r) {
  ORCH_RETURN_IF_ERROR(Required("ack.runId", r.getRunId()));
  return Ack{Str(r.getRunId()), r.getSeq()};
}

// A run's cancel or an experiment's, by which field is set.
Result<Message> Read(w::Cancel::Reader r) {
  bool has_run = r.getRunId().size() > 0;
  bool has_experiment = r.getExperiment().size() > 0;
  if (has_run == has_experiment) {
    return FieldError("cancel", "exactly one of runId and experiment must be set");
  }
  if (has_run) return Message(CancelRun{Str(r.getRunId())});
  return Message(CancelExperiment{Str(r.getExperiment())});
}

Result<Drain> Read(w::Drain::Reader r) {
  ORCH_RETURN_IF_ERROR(Required("drain.agentId", r.getAgentId()));
  return Drain{Str(r.getAgentId())};
}

// The rules a message sent in parts keeps (Submit, ImportRequest): `prefix` names the
// message, `bytes` is the size of the part it carries.
Status CheckPart(const std::string& prefix, const std::string& upload_id, std::uint64_t offset,
                 std::uint64_t total_size, std::size_t bytes) {
  if (upload_id.empty()) {
    if (offset != 0 || total_size != 0) {
      return FieldError(prefix + ".uploadId", "required for a part (offset, totalSize)");
    }
    return Status::Ok();
  }
  // The coordinator keeps upload ids as map keys while parts arrive: bounded.
  if (upload_id.size() > kMaxUploadIdBytes) {
    return FieldError(prefix + ".uploadId",
                      "longer than " + std::to_string(kMaxUploadIdBytes) + " bytes");
  }
  // Written as a subtraction, after checking offset <= total_size, so that a large
  // offset cannot wrap the sum around.
  if (offset > total_size || bytes > total_size - offset) {
    return FieldError(prefix + ".offset",
                      "the part ends past totalSize " + std::to_string(total_size));
  }
  return Status::Ok();
}

Result<Submit> Read(w::Submit::Reader r) {
  ORCH_RETURN_IF_ERROR(Required("submit.planJson", r.getPlanJson()));
  Submit submit{Str(r.getPlanJson()), Str(r.getUploadId()), r.getOffset(), r.getTotalSize()};
  ORCH_RETURN_IF_ERROR(CheckPart("submit", submit.upload_id, submit.offset, submit.total_size,
                                 submit.plan_json.size()));
  return submit;
}

Result<StatusRequest> Read(w::StatusRequest::Reader r) {
  return StatusRequest{Str(r.getExperiment()), r.getAllJobs()};
}

Result<AgentSummary> ReadAgent(const std::string& field, w::AgentSummary::Reader r) {
  ORCH_RETURN_IF_ERROR(Required(field + ".agentId", r.getAgentId()));
  ORCH_RETURN_IF_ERROR(EnumInRange(field + ".state", r.getState(), w::AgentState::NEVER_SEEN));
  AgentSummary agent{Str(r.getAgentId()),
                     Str(r.getHost()),
                     Str(r.getHardwareClass()),
                     Texts(r.getEngines()),
                     static_cast<AgentState>(r.getState()),
                     Texts(r.getCurrentRuns()),
                     std::chrono::milliseconds(r.getHeartbeatAgeMs())};
  agent.positions_per_second = r.getPositionsPerSecond();
  agent.slots = r.getSlots();
  agent.model_count = r.getModelCount();
  agent.quarantined = Str(r.getQuarantined());
  agent.delivering_runs = r.getDeliveringRuns();
  return agent;
}

Result<ExperimentProgress> ReadProgress(const std::string& field, w::ExperimentProgress::Reader e) {
  ORCH_RETURN_IF_ERROR(Required(field + ".experiment", e.getExperiment()));
  ExperimentProgress progress{Str(e.getExperiment()),
                              e.getTotal(),
                              e.getSucceeded(),
                              e.getRunning(),
                              e.getPending(),
                              e.getFailed(),
                              std::chrono::milliseconds(e.getEtaMs())};
  progress.cancelled = e.getCancelled();
  progress.eta_known = e.getEtaKnown();
  progress.eta_runs = e.getEtaRuns();
  progress.eta_cells = e.getEtaCells();
  progress.eta_cells_unmeasured = e.getEtaCellsUnmeasured();
  progress.unrunnable = e.getUnrunnable();
  return progress;
}

Result<JobStatus> ReadJob(const std::string& field, w::JobStatus::Reader j) {
  ORCH_RETURN_IF_ERROR(Required(field + ".jobId", j.getJobId()));
  return JobStatus{Str(j.getJobId()),   Str(j.getExperiment()),
                   Str(j.getCell()),    Str(j.getWorkload()),
                   j.getRepeat(),       Str(j.getState()),
                   Str(j.getAgentId()), Str(j.getHost()),
                   j.getAttempts(),     std::chrono::milliseconds(j.getElapsedMs()),
                   Str(j.getReason()),  j.getRunnable(),
                   Str(j.getRunId()),   Str(j.getHardware()),
                   j.getGpus(),         Str(j.getEngine())};
}

Result<StatusReply> Read(w::StatusReply::Reader r) {
  // Each list is fetched once: every fetch counts against the traversal limit.
  StatusReply reply;
  auto experiments = r.getExperiments();
  for (unsigned i = 0; i < experiments.size(); ++i) {
    std::string field = "statusReply.experiments[" + std::to_string(i) + "]";
    ORCH_ASSIGN_OR_RETURN(ExperimentProgress progress, ReadProgress(field, experiments[i]));
    reply.experiments.push_back(std::move(progress));
  }
  auto agents = r.getAgents();
  for (unsigned i = 0; i < agents.size(); ++i) {
    std::string field = "statusReply.agents[" + std::to_string(i) + "]";
    ORCH_ASSIGN_OR_RETURN(AgentSummary agent, ReadAgent(field, agents[i]));
    reply.agents.push_back(std::move(agent));
  }
  reply.recent_failures = Texts(r.getRecentFailures());
  auto jobs = r.getJobs();
  for (unsigned i = 0; i < jobs.size(); ++i) {
    std::string field = "statusReply.jobs[" + std::to_string(i) + "]";
    ORCH_ASSIGN_OR_RETURN(JobStatus job, ReadJob(field, jobs[i]));
    reply.jobs.push_back(std::move(job));
  }
  reply.security = Str(r.getSecurity());
  reply.jobs_omitted = r.getJobsOmitted();
  return reply;
}

Result<Retry> Read(w::Retry::Reader r) {
  ORCH_RETURN_IF_ERROR(Required("retry.experiment", r.getExperiment()));
  if (!r.getFailed() && !r.getCancelled()) {
    return FieldError("retry", "at least one of failed and cancelled must be set");
  }
  return Retry{Str(r.getExperiment()), r.getFailed(), r.getCancelled()};
}

Result<CommandReply> Read(w::CommandReply::Reader r) {
  ORCH_RETURN_IF_ERROR(Required("commandReply.message", r.getMessage()));
  return CommandReply{r.getOk(), Str(r.getMessage())};
}

Result<ExportRequest> Read(w::ExportRequest::Reader r) {
  ORCH_RETURN_IF_ERROR(Required("exportRequest.experiment", r.getExperiment()));
  if (r.getValidForMs() == 0) return FieldError("exportRequest.validForMs", "must be above 0");
  ExportRequest request{Str(r.getExperiment()), {}, r.getValidForMs()};
  auto cells = r.getCells();
  for (unsigned i = 0; i < cells.size(); ++i) {
    ORCH_RETURN_IF_ERROR(Required("exportRequest.cells[" + std::to_string(i) + "]", cells[i]));
    request.cells.push_back(Str(cells[i]));
  }
  return request;
}

Result<ExportReply> Read(w::ExportReply::Reader r) {
  ORCH_RETURN_IF_ERROR(Required("exportReply.message", r.getMessage()));
  ExportReply reply{r.getOk(), Str(r.getMessage()), Bytes(r.getBundle())};
  if (reply.ok && reply.bundle.empty()) return FieldError("exportReply.bundle", "empty");
  return reply;
}

Result<ImportRequest> Read(w::ImportRequest::Reader r) {
  if (r.getBundle().size() == 0) return FieldError("importRequest.bundle", "empty");
  ImportRequest request{Bytes(r.getBundle()), Str(r.getName()), Str(r.getUploadId()), r.getOffset(),
                        r.getTotalSize()};
  ORCH_RETURN_IF_ERROR(CheckPart("importRequest", request.upload_id, request.offset,
                                 request.total_size, request.bundle.size()));
  return request;
}

template <typename T>
Result<Message> Wrap(Result<T> read) {
  if (!read.ok()) return read.status();
  return Message(std::move(read).value());
}

// `frame_bytes`: the size of the frame holding `e`.
Result<Message> ReadEnvelope(w::Envelope::Reader e, std::size_t frame_bytes) {
  using W = w::Envelope;
  switch (e.which()) {
    case W::HELLO:
      return Wrap(Read(e.getHello()));
    case W::WELCOME:
      return Wrap(Read(e.getWelcome()));
    case W::REJECT:
      return Wrap(Read(e.getReject()));
    case W::HEARTBEAT:
      return Wrap(Read(e.getHeartbeat()));
    case W::ASSIGN:
      return Wrap(Read(e.getAssign()));
    case W::RUN_STARTED:
      return Wrap(Read(e.getRunStarted()));
    case W::DIGEST_CHUNK:
      return Wrap(Read(e.getDigestChunk(), frame_bytes));
    case W::RUN_FINISHED:
      return Wrap(Read(e.getRunFinished()));
    case W::ACK:
      return Wrap(Read(e.getAck()));
    case W::CANCEL:
      return Wrap(Read(e.getCancel()));
    case W::DRAIN:
      return Wrap(Read(e.getDrain()));
    case W::SUBMIT:
      return Wrap(Read(e.getSubmit()));
    case W::STATUS_REQUEST:
      return Wrap(Read(e.getStatusRequest()));
    case W::STATUS_REPLY:
      return Wrap(Read(e.getStatusReply()));
    case W::COMMAND_REPLY:
      return Wrap(Read(e.getCommandReply()));
    case W::RETRY:
      return Wrap(Read(e.getRetry()));
    case W::EXPORT_REQUEST:
      return Wrap(Read(e.getExportRequest()));
    case W::EXPORT_REPLY:
      return Wrap(Read(e.getExportReply()));
    case W::IMPORT_REQUEST:
      return Wrap(Read(e.getImportRequest()));
  }
  // A union member this build lacks (a newer peer's message) lands here.
  return Malformed("unknown message kind " + std::to_string(static_cast<int>(e.which())));
}

// Precondition: `words` holds the whole frame, word-aligned.
Result<Message> DecodeWords(kj::ArrayPtr<const capnp::word> words) {
  capnp::ReaderOptions options;
  // Reading a field twice counts twice; the factor leaves room for that and
  // still bounds the work a hostile frame can cause.
  options.traversalLimitInWords = 4 * kMaxFrameBytes / sizeof(capnp::word);
  options.nestingLimit = kNestingLimit;
  capnp::FlatArrayMessageReader reader(words, options);
  if (reader.getEnd() != words.end()) return Malformed("trailing bytes after the message");
  return ReadEnvelope(reader.getRoot<w::Envelope>(), words.asBytes().size());
}

}  // namespace

Result<Message> Decode(std::span<const std::byte> frame) {
  if (frame.empty()) return Malformed("empty");
  if (frame.size() > kMaxFrameBytes) {
    return Malformed(std::to_string(frame.size()) + " bytes exceeds the limit of " +
                     std::to_string(kMaxFrameBytes));
  }
  if (frame.size() % sizeof(capnp::word) != 0) {
    return Malformed(std::to_string(frame.size()) + " bytes is not a whole number of words");
  }
  // Cap'n Proto reads words in place; peer bytes may sit at any address.
  auto words = kj::heapArray<capnp::word>(frame.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), frame.data(), frame.size());
  // Cap'n Proto reports malformed input by throwing when a field is read; the
  // exceptions end here, as a Status (no caller catches).
  try {
    return DecodeWords(words);
  } catch (const kj::Exception& e) {
    return Malformed(std::string(e.getDescription().cStr()));
  } catch (const std::exception& e) {
    return Malformed(e.what());
  }
}

Result<Message> Decode(std::string_view frame) {
  return Decode(std::as_bytes(std::span<const char>(frame.data(), frame.size())));
}

}  // namespace orch::protocol
