// Protocol messages as plain C++ values: what coordinator, agents and the CLI
// exchange.
//
// These mirror protocol/orch.capnp field for field; the wire format never
// leaves protocol/. A Message holds exactly one message; protocol/codec.h turns
// it into one frame and back, validating at decode. Field comments give the
// rules Decode enforces.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "plan_document/plan_document.h"

namespace orch::protocol {

// Version spoken by this build. Hello and Welcome carry it; a mismatch is
// refused. Version 2: DigestChunk's records are a Cap'n Proto list (version 1
// framed them by hand in one Data field; Decode refuses such a chunk).
inline constexpr std::uint32_t kProtocolVersion = 2;

// Largest frame Decode accepts and a Transport sends, in bytes. Digest chunks are
// sized well below it; plans and bundles larger than that travel in parts (Submit,
// ImportRequest).
inline constexpr std::size_t kMaxFrameBytes = std::size_t{16} << 20;

// Longest upload id of a message sent in parts (Submit, ImportRequest).
inline constexpr std::size_t kMaxUploadIdBytes = 64;

struct KeyValue {
  std::string key;    // non-empty
  std::string value;  // may be empty
  friend bool operator==(const KeyValue&, const KeyValue&) = default;
};

struct Capabilities {
  std::vector<std::string> engines;       // engine labels, e.g. "llama.cpp@b8390"
  std::string hardware_class;             // required: "cpu", "gpu:h100", ...
  std::int32_t gpus = 0;                  // >= 0
  std::int32_t slots = 1;                 // >= 1
  std::vector<std::string> model_hashes;  // "sha256:<hex>"
  friend bool operator==(const Capabilities&, const Capabilities&) = default;
};

// agent -> coordinator, first message on a connection.
// An idle warm engine on an agent (a driver session with its model loaded,
// docs/agent.md): a job with this engine, model requirement and these load-axis
// values runs there without a load. The coordinator prefers such a job for the
// agent (coordinator/matchmaker.h).
struct WarmSession {
  std::string engine;          // required
  std::string model;           // the model requirement; may be empty
  std::vector<KeyValue> axes;  // load axis -> value
  friend bool operator==(const WarmSession&, const WarmSession&) = default;
};

struct Hello {
  std::uint32_t protocol_version = kProtocolVersion;  // must equal kProtocolVersion
  std::string agent_id;                               // required
  Capabilities capabilities;
  std::string fingerprint_id;  // may be empty
  std::vector<KeyValue> host_facts;
  std::vector<std::string> running_runs;  // runs still in flight (re-adoption)
  std::string fingerprint_json;           // canonical JSON whose id is fingerprint_id; may be empty
  // Runs that finished on the agent whose RunFinished is not acknowledged yet:
  // they hold no slot, and are kept (not released) while their results arrive.
  std::vector<std::string> delivering_runs = {};
  // Chosen at random when the agent process starts: a Hello with another one is a
  // restarted agent, whose drain (`orch drain`) ended with its old process.
  std::string incarnation = {};
  std::vector<WarmSession> warm_sessions = {};  // idle ones
  friend bool operator==(const Hello&, const Hello&) = default;
};

// coordinator -> agent: Hello accepted.
struct Welcome {
  std::uint32_t protocol_version = kProtocolVersion;  // must equal kProtocolVersion
  std::string coordinator_id;                         // required
  std::chrono::milliseconds heartbeat_interval{0};    // required: > 0
  friend bool operator==(const Welcome&, const Welcome&) = default;
};

// coordinator -> agent: Hello refused. Decoded whatever its version.
struct Reject {
  std::uint32_t protocol_version = kProtocolVersion;
  std::string reason;  // required
  friend bool operator==(const Reject&, const Reject&) = default;
};

struct Heartbeat {
  std::string agent_id;  // required
  std::vector<std::string> running_runs;
  std::int32_t free_slots = 0;                  // >= 0
  std::vector<WarmSession> warm_sessions = {};  // idle ones, as in Hello
  friend bool operator==(const Heartbeat&, const Heartbeat&) = default;
};

// A job's needs (engine, hardware, gpus >= 0, model): the plan document's type, which the
// planner uses too.
using Requirements = plan_document::Requirements;

// coordinator -> agent: run one job.
struct Assign {
  std::string run_id;                // required
  std::string job_id;                // required
  std::vector<KeyValue> coordinate;  // axis -> value; axis names non-empty
  std::string workload;              // required
  Requirements requirements;
  std::chrono::milliseconds lease{0};  // required: > 0, counted from receipt
  std::string job_spec;                // JSON; may be empty
  friend bool operator==(const Assign&, const Assign&) = default;
};

struct RunStarted {
  std::string run_id;  // required
  friend bool operator==(const RunStarted&, const RunStarted&) = default;
};

// One digest record of a run: its position, and bytes that are opaque here
// (digest/record_codec.h gives them meaning); the coordinator stores each
// record under its run and position.
struct ChunkRecord {
  std::uint64_t position = 0;
  std::string bytes;
  friend bool operator==(const ChunkRecord&, const ChunkRecord&) = default;
};

// At most one record per this many bytes of a DigestChunk's frame: what one
// record takes on the wire at least (a position word and a pointer). Decode
// refuses a larger count before allocating anything for it.
inline constexpr std::size_t kMinChunkRecordBytes = 16;

struct DigestChunk {
  std::string run_id;                // required
  std::uint64_t seq = 0;             // from 0 within a run; storage is idempotent on (run_id, seq)
  std::vector<ChunkRecord> records;  // in the order the driver wrote them
  friend bool operator==(const DigestChunk&, const DigestChunk&) = default;
};

enum class RunStatus { kSucceeded, kFailed, kCancelled, kTimedOut };
// "succeeded", "failed", "cancelled", "timed_out".
std::string_view RunStatusName(RunStatus status);

struct RunFinished {
  std::string run_id;  // required
  RunStatus status = RunStatus::kSucceeded;
  std::string summary;
  std::string error;              // required when status is kFailed or kTimedOut
  std::uint64_t chunk_count = 0;  // DigestChunks sent: seq 0 .. chunk_count-1
  friend bool operator==(const RunFinished&, const RunFinished&) = default;
};

// An agent that refuses an Assign answers RunFinished{kFailed, chunk_count 0}
// before any RunStarted, with summary {"error": {"code": CODE}} naming why.
// Transient: no free slot, draining. The others: it has no
// driver for the engine, or could not prepare the job (its model).
inline constexpr std::string_view kRefusedBusy = "agent_busy";
inline constexpr std::string_view kRefusedDraining = "agent_draining";
inline constexpr std::string_view kRefusedNoEngine = "agent_no_engine";
inline constexpr std::string_view kRefusedJob = "agent_cannot_prepare";

// Ack of RunFinished uses this seq.
inline constexpr std::uint64_t kRunFinishedSeq = std::numeric_limits<std::uint64_t>::max();

struct Ack {
  std::string run_id;  // required
  std::uint64_t seq = 0;
  friend bool operator==(const Ack&, const Ack&) = default;
};

// Coordinator -> agent: stop one run. On the wire, the Envelope's `cancel` with
// only runId set.
struct CancelRun {
  std::string run_id;  // required
  friend bool operator==(const CancelRun&, const CancelRun&) = default;
};

// CLI -> coordinator: stop an experiment's unfinished jobs (an agent given one stops
// every run of it). On the wire, the Envelope's `cancel` with only experiment set.
struct CancelExperiment {
  std::string experiment;  // required
  friend bool operator==(const CancelExperiment&, const CancelExperiment&) = default;
};

struct Drain {
  std::string agent_id;  // required
  friend bool operator==(const Drain&, const Drain&) = default;
};

// A plan larger than one frame is sent in parts, as ImportRequest sends a bundle (the
// same rules on upload_id, offset and total_size); the coordinator assembles them.
struct Submit {
  std::string plan_json;  // required (non-empty): the plan, or the part at `offset`
  std::string upload_id = {};
  std::uint64_t offset = 0;
  std::uint64_t total_size = 0;
  friend bool operator==(const Submit&, const Submit&) = default;
};

struct StatusRequest {
  std::string experiment;  // empty: all experiments
  // Every job in StatusReply::jobs; otherwise only running jobs and pending jobs
  // that no connected agent can run.
  bool all_jobs = false;
  friend bool operator==(const StatusRequest&, const StatusRequest&) = default;
};

// An agent as `orch status` and `orch agents` show it (AgentStateName): up (connected,
// taking runs), draining (asked to drain, runs still in flight), drained (asked to
// drain, none in flight, connected or not), down (disconnected: its heartbeats or its
// connection stopped) and never seen (ran jobs stored before the coordinator started,
// has not registered since).
enum class AgentState { kConnected, kDraining, kDisconnected, kDrained, kNeverSeen };
std::string_view AgentStateName(AgentState state);

struct ExperimentProgress {
  std::string experiment;  // required
  std::uint32_t total = 0;
  std::uint32_t succeeded = 0;
  std::uint32_t running = 0;
  std::uint32_t pending = 0;
  std::uint32_t failed = 0;
  std::chrono::milliseconds eta{0};  // until every job is done (see eta_known)
  std::uint32_t cancelled = 0;       // not counted in failed
  bool eta_known = false;            // false: no estimate yet
  std::uint32_t unrunnable = 0;      // pending jobs no connected agent can run
  // What the ETA rests on: succeeded runs measured, the cells they ran, and the cells
  // of jobs left that no run measured yet (estimated at the mean of all runs).
  std::uint32_t eta_runs = 0;
  std::uint32_t eta_cells = 0;
  std::uint32_t eta_cells_unmeasured = 0;
  friend bool operator==(const ExperimentProgress&, const ExperimentProgress&) = default;
};

struct AgentSummary {
  std::string agent_id;  // required
  std::string host;
  std::string hardware_class;
  std::vector<std::string> engines;
  AgentState state = AgentState::kConnected;
  std::vector<std::string> current_runs;
  std::chrono::milliseconds heartbeat_age{0};
  double positions_per_second = 0;  // digest records stored/s over the last 30 s
  std::int32_t slots = 1;
  std::uint32_t model_count = 0;  // model files it advertised
  // Drivers it stopped offering, "NAME (ENGINE): WHY; ..." (docs/agent.md,
  // "Quarantine"); empty when none.
  std::string quarantined = {};
  // Of current_runs, those that ended on the agent and whose results it is still
  // sending: they hold no slot, so runs can exceed slots by this many.
  std::uint32_t delivering_runs = 0;
  friend bool operator==(const AgentSummary&, const AgentSummary&) = default;
};

// "1/2" (runs holding a slot / slots), "2/2 +1 delivering" when runs that ended
// are still being delivered: the one way `orch status`, `orch agents` and the
// status page show an agent's runs.
std::string AgentRunsText(const AgentSummary& agent);

struct JobStatus {
  std::string job_id;  // required
  std::string experiment;
  std::string cell;
  std::string workload;
  std::uint32_t repeat = 0;
  std::string state;  // store::JobStateName
  std::string agent_id;
  std::string host;
  std::int32_t attempts = 0;
  std::chrono::milliseconds elapsed{0};
  std::string reason;  // pending: why it waits; failed: why it failed
  bool runnable = true;
  std::string run_id;
  // What it requires (protocol::Requirements): for `orch slurm`, which sizes pilot jobs.
  std::string hardware = {};
  std::int32_t gpus = 0;
  std::string engine = {};
  friend bool operator==(const JobStatus&, const JobStatus&) = default;
};

// The most jobs one StatusReply lists (a few MiB, well inside a frame); the rest are
// counted in jobs_omitted.
inline constexpr std::size_t kMaxStatusJobs = 10'000;

struct StatusReply {
  std::vector<ExperimentProgress> experiments;
  std::vector<AgentSummary> agents;
  std::vector<std::string> recent_failures;  // newest first, "run-id: reason"
  std::vector<JobStatus> jobs;               // plan order, at most kMaxStatusJobs
  std::string security = {};                 // how the coordinator's sockets are protected
  std::uint32_t jobs_omitted = 0;            // jobs the request asked for beyond kMaxStatusJobs
  friend bool operator==(const StatusReply&, const StatusReply&) = default;
};

// CLI -> coordinator: run failed and/or cancelled jobs of an experiment again.
struct Retry {
  std::string experiment;  // required
  bool failed = true;
  bool cancelled = false;
  friend bool operator==(const Retry&, const Retry&) = default;
};

// coordinator -> CLI: answer to Submit, Cancel and Drain.
struct CommandReply {
  bool ok = false;
  std::string message;  // required
  friend bool operator==(const CommandReply&, const CommandReply&) = default;
};

struct ExportRequest {
  std::string experiment;          // required
  std::vector<std::string> cells;  // empty: every cell
  std::uint64_t valid_for_ms = 0;  // > 0
  friend bool operator==(const ExportRequest&, const ExportRequest&) = default;
};

struct ExportReply {
  bool ok = false;
  std::string message;  // required
  std::string bundle;   // the plan bundle file; empty unless ok
  friend bool operator==(const ExportReply&, const ExportReply&) = default;
};

struct ImportRequest {
  std::string bundle;  // required (non-empty): the file, or the part at `offset`
  std::string name;    // the file name, for messages; may be empty
  // Parts of one file larger than a frame (orch.capnp): all of them share upload_id
  // (1..64 bytes); offset + bundle.size() <= total_size. Empty: one whole file.
  std::string upload_id = {};
  std::uint64_t offset = 0;
  std::uint64_t total_size = 0;
  friend bool operator==(const ImportRequest&, const ImportRequest&) = default;
};

// The order matches the Envelope union in orch.capnp, except that its one `cancel`
// is two messages here, told apart by which of its fields is set: CancelRun, and
// CancelExperiment at the end.
using Message =
    std::variant<Hello, Welcome, Reject, Heartbeat, Assign, RunStarted, DigestChunk, RunFinished,
                 Ack, CancelRun, Drain, Submit, StatusRequest, StatusReply, CommandReply, Retry,
                 ExportRequest, ExportReply, ImportRequest, CancelExperiment>;

// "hello", "digestChunk", ...: the Envelope member name, for logs and errors.
const char* MessageName(const Message& message);

}  // namespace orch::protocol
