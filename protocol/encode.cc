// Encode: Message values -> Cap'n Proto Envelope frames. Mirrors decode.cc.
#include <capnp/message.h>
#include <capnp/serialize.h>

#include <string>
#include <vector>

#include "protocol/codec.h"
#include "protocol/orch.capnp.h"

namespace orch::protocol {
namespace {

namespace w = wire;

kj::StringPtr Txt(const std::string& s) { return kj::StringPtr(s.c_str(), s.size()); }

void SetTexts(capnp::List<capnp::Text>::Builder list, const std::vector<std::string>& v) {
  for (unsigned i = 0; i < v.size(); ++i) list.set(i, Txt(v[i]));
}

void SetPairs(capnp::List<w::KeyValue>::Builder list, const std::vector<KeyValue>& v) {
  for (unsigned i = 0; i < v.size(); ++i) {
    list[i].setKey(Txt(v[i].key));
    list[i].setValue(Txt(v[i].value));
  }
}

void Fill(w::Capabilities::Builder b, const Capabilities& m) {
  SetTexts(b.initEngines(m.engines.size()), m.engines);
  b.setHardwareClass(Txt(m.hardware_class));
  b.setGpus(m.gpus);
  b.setSlots(m.slots);
  SetTexts(b.initModelHashes(m.model_hashes.size()), m.model_hashes);
}

void SetWarm(capnp::List<w::WarmSession>::Builder list, const std::vector<WarmSession>& warm) {
  for (unsigned i = 0; i < warm.size(); ++i) {
    list[i].setEngine(Txt(warm[i].engine));
    list[i].setModel(Txt(warm[i].model));
    SetPairs(list[i].initAxes(warm[i].axes.size()), warm[i].axes);
  }
}

void Put(w::Envelope::Builder e, const Hello& m) {
  auto b = e.initHello();
  b.setProtocolVersion(m.protocol_version);
  b.setAgentId(Txt(m.agent_id));
  Fill(b.initCapabilities(), m.capabilities);
  b.setFingerprintId(Txt(m.fingerprint_id));
  SetPairs(b.initHostFacts(m.host_facts.size()), m.host_facts);
  SetTexts(b.initRunningRuns(m.running_runs.size()), m.running_runs);
  b.setFingerprintJson(Txt(m.fingerprint_json));
  SetTexts(b.initDeliveringRuns(m.delivering_runs.size()), m.delivering_runs);
  b.setIncarnation(Txt(m.incarnation));
  SetWarm(b.initWarmSessions(m.warm_sessions.size()), m.warm_sessions);
}

void Put(w::Envelope::Builder e, const Welcome& m) {
  auto b = e.initWelcome();
  b.setProtocolVersion(m.protocol_version);
  b.setCoordinatorId(Txt(m.coordinator_id));
  b.setHeartbeatIntervalMs(static_cast<std::uint32_t>(m.heartbeat_interval.count()));
}

void Put(w::Envelope::Builder e, const Reject& m) {
  auto b = e.initReject();
  b.setProtocolVersion(m.protocol_version);
  b.setReason(Txt(m.reason));
}

void Put(w::Envelope::Builder e, const Heartbeat& m) {
  auto b = e.initHeartbeat();
  b.setAgentId(Txt(m.agent_id));
  SetTexts(b.initRunningRuns(m.running_runs.size()), m.running_runs);
  b.setFreeSlots(m.free_slots);
  SetWarm(b.initWarmSessions(m.warm_sessions.size()), m.warm_sessions);
}

void Put(w::Envelope::Builder e, const Assign& m) {
  auto b = e.initAssign();
  b.setRunId(Txt(m.run_id));
  b.setJobId(Txt(m.job_id));
  SetPairs(b.initCoordinate(m.coordinate.size()), m.coordinate);
  b.setWorkload(Txt(m.workload));
  auto r = b.initRequirements();
  r.setEngine(Txt(m.requirements.engine));
  r.setHardware(Txt(m.requirements.hardware));
  r.setGpus(m.requirements.gpus);
  r.setModel(Txt(m.requirements.model));
  b.setLeaseMs(static_cast<std::uint64_t>(m.lease.count()));
  b.setJobSpec(Txt(m.job_spec));
}

void Put(w::Envelope::Builder e, const RunStarted& m) {
  e.initRunStarted().setRunId(Txt(m.run_id));
}

kj::ArrayPtr<const kj::byte> Bytes(const std::string& s) {
  return kj::ArrayPtr<const kj::byte>(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}

void Put(w::Envelope::Builder e, const DigestChunk& m) {
  auto b = e.initDigestChunk();
  b.setRunId(Txt(m.run_id));
  b.setSeq(m.seq);
  auto records = b.initRecords(static_cast<unsigned>(m.records.size()));
  for (unsigned i = 0; i < m.records.size(); ++i) {
    records[i].setPosition(m.records[i].position);
    records[i].setBytes(Bytes(m.records[i].bytes));
  }
}

void Put(w::Envelope::Builder e, const RunFinished& m) {
  auto b = e.initRunFinished();
  b.setRunId(Txt(m.run_id));
  b.setStatus(static_cast<w::RunStatus>(m.status));
  b.setSummary(Txt(m.summary));
  b.setError(Txt(m.error));
  b.setChunkCount(m.chunk_count);
}

void Put(w::Envelope::Builder e, const Ack& m) {
  auto b = e.initAck();
  b.setRunId(Txt(m.run_id));
  b.setSeq(m.seq);
}

void Put(w::Envelope::Builder e, const CancelRun& m) { e.initCancel().setRunId(Txt(m.run_id)); }

void Put(w::Envelope::Builder e, const CancelExperiment& m) {
  e.initCancel().setExperiment(Txt(m.experiment));
}

void Put(w::Envelope::Builder e, const Drain& m) { e.initDrain().setAgentId(Txt(m.agent_id)); }

void Put(w::Envelope::Builder e, const Submit& m) {
  auto b = e.initSubmit();
  b.setPlanJson(Txt(m.plan_json));
  b.setUploadId(Txt(m.upload_id));
  b.setOffset(m.offset);
  b.setTotalSize(m.total_size);
}

void Put(w::Envelope::Builder e, const StatusRequest& m) {
  auto b = e.initStatusRequest();
  b.setExperiment(Txt(m.experiment));
  b.setAllJobs(m.all_jobs);
}

void Fill(w::ExperimentProgress::Builder b, const ExperimentProgress& m) {
  b.setExperiment(Txt(m.experiment));
  b.setTotal(m.total);
  b.setSucceeded(m.succeeded);
  b.setRunning(m.running);
  b.setPending(m.pending);
  b.setFailed(m.failed);
  b.setEtaMs(static_cast<std::uint64_t>(m.eta.count()));
  b.setCancelled(m.cancelled);
  b.setEtaKnown(m.eta_known);
  b.setEtaRuns(m.eta_runs);
  b.setEtaCells(m.eta_cells);
  b.setEtaCellsUnmeasured(m.eta_cells_unmeasured);
  b.setUnrunnable(m.unrunnable);
}

void Fill(w::AgentSummary::Builder b, const AgentSummary& m) {
  b.setAgentId(Txt(m.agent_id));
  b.setHost(Txt(m.host));
  b.setHardwareClass(Txt(m.hardware_class));
  SetTexts(b.initEngines(m.engines.size()), m.engines);
  b.setState(static_cast<w::AgentState>(m.state));
  SetTexts(b.initCurrentRuns(m.current_runs.size()), m.current_runs);
  b.setHeartbeatAgeMs(static_cast<std::uint64_t>(m.heartbeat_age.count()));
  b.setPositionsPerSecond(m.positions_per_second);
  b.setSlots(m.slots);
  b.setModelCount(m.model_count);
  b.setQuarantined(Txt(m.quarantined));
  b.setDeliveringRuns(m.delivering_runs);
}

void Fill(w::JobStatus::Builder b, const JobStatus& m) {
  b.setJobId(Txt(m.job_id));
  b.setExperiment(Txt(m.experiment));
  b.setCell(Txt(m.cell));
  b.setWorkload(Txt(m.workload));
  b.setRepeat(m.repeat);
  b.setState(Txt(m.state));
  b.setAgentId(Txt(m.agent_id));
  b.setHost(Txt(m.host));
  b.setAttempts(m.attempts);
  b.setElapsedMs(static_cast<std::uint64_t>(m.elapsed.count()));
  b.setReason(Txt(m.reason));
  b.setRunnable(m.runnable);
  b.setRunId(Txt(m.run_id));
  b.setHardware(Txt(m.hardware));
  b.setGpus(m.gpus);
  b.setEngine(Txt(m.engine));
}

void Put(w::Envelope::Builder e, const StatusReply& m) {
  auto b = e.initStatusReply();
  auto experiments = b.initExperiments(m.experiments.size());
  for (unsigned i = 0; i < m.experiments.size(); ++i) Fill(experiments[i], m.experiments[i]);
  auto agents = b.initAgents(m.agents.size());
  for (unsigned i = 0; i < m.agents.size(); ++i) Fill(agents[i], m.agents[i]);
  SetTexts(b.initRecentFailures(m.recent_failures.size()), m.recent_failures);
  auto jobs = b.initJobs(m.jobs.size());
  for (unsigned i = 0; i < m.jobs.size(); ++i) Fill(jobs[i], m.jobs[i]);
  b.setSecurity(Txt(m.security));
  b.setJobsOmitted(m.jobs_omitted);
}

void Put(w::Envelope::Builder e, const Retry& m) {
  auto b = e.initRetry();
  b.setExperiment(Txt(m.experiment));
  b.setFailed(m.failed);
  b.setCancelled(m.cancelled);
}

void Put(w::Envelope::Builder e, const ExportRequest& m) {
  auto b = e.initExportRequest();
  b.setExperiment(Txt(m.experiment));
  SetTexts(b.initCells(m.cells.size()), m.cells);
  b.setValidForMs(m.valid_for_ms);
}

void Put(w::Envelope::Builder e, const ExportReply& m) {
  auto b = e.initExportReply();
  b.setOk(m.ok);
  b.setMessage(Txt(m.message));
  b.setBundle(Bytes(m.bundle));
}

void Put(w::Envelope::Builder e, const ImportRequest& m) {
  auto b = e.initImportRequest();
  b.setBundle(Bytes(m.bundle));
  b.setName(Txt(m.name));
  b.setUploadId(Txt(m.upload_id));
  b.setOffset(m.offset);
  b.setTotalSize(m.total_size);
}

void Put(w::Envelope::Builder e, const CommandReply& m) {
  auto b = e.initCommandReply();
  b.setOk(m.ok);
  b.setMessage(Txt(m.message));
}

}  // namespace

std::string Encode(const Message& message) {
  capnp::MallocMessageBuilder builder;
  auto envelope = builder.initRoot<w::Envelope>();
  std::visit([&](const auto& m) { Put(envelope, m); }, message);
  kj::Array<capnp::word> words = capnp::messageToFlatArray(builder);
  kj::ArrayPtr<const kj::byte> bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

}  // namespace orch::protocol
