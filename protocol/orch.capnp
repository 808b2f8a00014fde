# Wire schema of the orch protocol: coordinator <-> agent and CLI <-> coordinator.
#
# One Envelope per transport frame. Evolution rules: field ordinals (@N) are
# append-only; never renumber, retype or reuse a field; add new union members and
# fields at the end. A peer that meets a union member it does not know rejects the
# frame (protocol/codec.h). The protocol version in Hello/Welcome changes only when a
# change cannot be expressed by appending (version 2: DigestChunk.records became a list).
@0xa99be7451a1c41b8;

$import "/capnp/c++.capnp".namespace("orch::protocol::wire");

# A string key with a string value (host facts, coordinate entries).
struct KeyValue {
  key @0 :Text;    # non-empty name, e.g. "cpu.model" or an axis name "kv"
  value @1 :Text;  # its value as text; may be empty
}

# What an agent can run. Matched against job requirements by the coordinator.
struct Capabilities {
  engines @0 :List(Text);      # engine labels, e.g. "llama.cpp@b8390"
  hardwareClass @1 :Text;      # required: "cpu", "gpu:h100", ...
  gpus @2 :Int32;              # GPUs usable by runs; >= 0
  slots @3 :Int32;             # runs the agent takes at once; >= 1
  modelHashes @4 :List(Text);  # models on local disk, "sha256:<hex>"
}

# agent -> coordinator, first message on a connection.
struct Hello {
  protocolVersion @0 :UInt32;     # must equal the receiver's version
  agentId @1 :Text;               # required: stable agent name, unique in the cluster
  capabilities @2 :Capabilities;  # required
  fingerprintId @3 :Text;         # id of the host fingerprint; may be empty
  hostFacts @4 :List(KeyValue);   # flat host facts from the fingerprint
  runningRuns @5 :List(Text);     # run ids still in flight on the agent (re-adoption)
  fingerprintJson @6 :Text;       # canonical JSON of that fingerprint; may be empty
  deliveringRuns @7 :List(Text);  # runs finished on the agent whose results it still sends
  incarnation @8 :Text;           # random per agent process: a new one ends a drain
  warmSessions @9 :List(WarmSession);  # idle warm engines (driver sessions) on the agent
}

# An idle warm engine on an agent: a driver session whose model is loaded. A job
# with this engine, model requirement and these load-axis values runs on it
# without loading anything.
struct WarmSession {
  engine @0 :Text;           # required: engine label, as in Capabilities.engines
  model @1 :Text;            # the model requirement ("sha256:..", "synth:.."); may be empty
  axes @2 :List(KeyValue);   # load axis -> value in the jobs it ran
}

# coordinator -> agent: Hello accepted.
struct Welcome {
  protocolVersion @0 :UInt32;      # must equal the receiver's version
  coordinatorId @1 :Text;          # required: name of the coordinator instance
  heartbeatIntervalMs @2 :UInt32;  # required (> 0): how often the agent sends Heartbeat
}

# coordinator -> agent: Hello refused. Decoded whatever the version, so the reason reaches
# an agent of another version.
struct Reject {
  protocolVersion @0 :UInt32;  # the coordinator's version
  reason @1 :Text;             # required: human-readable reason, names both versions
}

# agent -> coordinator, every heartbeat interval.
struct Heartbeat {
  agentId @0 :Text;            # required
  runningRuns @1 :List(Text);  # run ids in flight
  freeSlots @2 :Int32;         # slots not busy; >= 0
  warmSessions @3 :List(WarmSession);  # idle warm engines, as in Hello
}

# coordinator -> agent: run one job.
struct Assign {
  runId @0 :Text;                  # required: this attempt; unique per assignment
  jobId @1 :Text;                  # required: job id (hash of the canonical coordinate)
  coordinate @2 :List(KeyValue);   # axis -> value; axis names non-empty
  workload @3 :Text;               # required: workload name from the spec
  requirements @4 :Requirements;   # what the job needs (as matched)
  leaseMs @5 :UInt64;              # required (> 0): lease length from receipt, milliseconds
  jobSpec @6 :Text;                # the job spec as JSON (plan_document/job_spec.h); may be empty
}

# A job's needs; mirrors planner::Requirements.
struct Requirements {
  engine @0 :Text;    # engine label
  hardware @1 :Text;  # hardware class
  gpus @2 :Int32;     # minimum GPUs; >= 0
  model @3 :Text;     # "sha256:<hex>" or "synth:<recipe>"
}

# agent -> coordinator: the driver has started.
struct RunStarted {
  runId @0 :Text;  # required
}

# One digest record of a run.
struct ChunkRecord {
  position @0 :UInt64;  # the record's position in the run
  bytes @1 :Data;       # the encoded record; opaque here (format owned by digest/)
}

# agent -> coordinator: a batch of digest records of one run.
struct DigestChunk {
  runId @0 :Text;    # required
  seq @1 :UInt64;    # chunk sequence number within the run, from 0; storage is idempotent on (runId, seq)
  recordsV1 @2 :Data;  # deprecated: protocol version 1 framed the records here by hand;
                       # never set since version 2, and a frame that sets it is refused
  records @3 :List(ChunkRecord);  # the records, in the order the driver wrote them; at
                                  # most one per 16 bytes of the frame
}

enum RunStatus {
  succeeded @0;  # the driver finished and every chunk was sent
  failed @1;     # the driver or the agent failed; error says why
  cancelled @2;  # stopped by Cancel
  timedOut @3;   # the run exceeded its time limit
}

# agent -> coordinator: the run is over.
struct RunFinished {
  runId @0 :Text;         # required
  status @1 :RunStatus;   # outcome
  summary @2 :Text;       # short human summary; may be empty
  error @3 :Text;         # required when status is failed or timedOut
  chunkCount @4 :UInt64;  # number of DigestChunks sent (seq 0 .. chunkCount-1)
}

# coordinator -> agent: chunk (runId, seq) is durable; seq = max uint64 acknowledges RunFinished.
struct Ack {
  runId @0 :Text;  # required
  seq @1 :UInt64;  # acknowledged sequence number
}

# coordinator -> agent: stop a run (CancelRun in protocol/messages.h); CLI ->
# coordinator: stop an experiment (CancelExperiment). Exactly one field is set.
struct Cancel {
  runId @0 :Text;       # run to stop; or empty when experiment is set
  experiment @1 :Text;  # experiment to stop; or empty when runId is set
}

# CLI -> coordinator, coordinator -> agent: take no new runs, finish the current ones.
struct Drain {
  agentId @0 :Text;  # required
}

# CLI -> coordinator: a plan to run.
struct Submit {
  planJson @0 :Text;     # required: the expanded plan as JSON (planner/plan_to_json.h), or this
                         # part of it
  uploadId @1 :Text;     # parts of one plan share it; empty: the whole plan is here
  offset @2 :UInt64;     # where this part starts in the plan's JSON
  totalSize @3 :UInt64;  # the plan's JSON size in bytes (parts only)
}

# CLI -> coordinator: ask for progress.
struct StatusRequest {
  experiment @0 :Text;  # only this experiment; empty: all
  allJobs @1 :Bool;     # list every job in StatusReply.jobs; otherwise only running jobs
                        # and pending jobs that no connected agent can run
}

enum AgentState {
  connected @0;     # registered and taking runs
  draining @1;      # finishing its runs, taking no new ones
  disconnected @2;  # heartbeats stopped; its leases run out
  drained @3;       # asked to drain and no run left in flight
  neverSeen @4;     # known from stored runs, not registered since the coordinator started
}

# Progress of one experiment.
struct ExperimentProgress {
  experiment @0 :Text;  # required
  total @1 :UInt32;     # jobs in the plan
  succeeded @2 :UInt32; # jobs with a complete stored run
  running @3 :UInt32;   # jobs assigned or running
  pending @4 :UInt32;   # jobs waiting for an agent
  failed @5 :UInt32;    # jobs out of retries
  etaMs @6 :UInt64;     # estimated time until every job is done, milliseconds (see etaKnown)
  cancelled @7 :UInt32; # jobs cancelled (not counted in failed)
  etaKnown @8 :Bool;    # etaMs is an estimate; false: unknown (no finished run to go by)
  unrunnable @9 :UInt32;  # pending jobs that no connected agent can run
  etaRuns @10 :UInt32;    # succeeded runs the ETA is measured from
  etaCells @11 :UInt32;   # cells those runs ran
  etaCellsUnmeasured @12 :UInt32;  # cells of jobs left with no measured run yet
}

# One registered agent as the coordinator sees it.
struct AgentSummary {
  agentId @0 :Text;             # required
  host @1 :Text;                # host name
  hardwareClass @2 :Text;       # from its capabilities
  engines @3 :List(Text);       # from its capabilities
  state @4 :AgentState;         # registry state
  currentRuns @5 :List(Text);   # run ids in flight
  heartbeatAgeMs @6 :UInt64;    # time since its last heartbeat, milliseconds
  positionsPerSecond @7 :Float64;  # digest records stored per second over the last 30 s
  slots @8 :Int32;              # runs it takes at once
  modelCount @9 :UInt32;        # model files it advertised (modelHashes)
  quarantined @10 :Text;        # drivers it stopped offering and why (its
                                # "quarantined_drivers" host fact); empty when none
  deliveringRuns @11 :UInt32;   # of currentRuns, those that ended on the agent and whose
                                # results it is still sending: they hold no slot
}

# One job as the coordinator sees it (orch status --jobs).
struct JobStatus {
  jobId @0 :Text;        # required
  experiment @1 :Text;
  cell @2 :Text;         # "baseline", "kv=q8_0", ...
  workload @3 :Text;
  repeat @4 :UInt32;
  state @5 :Text;        # pending, assigned, running, succeeded, failed, cancelled
  agentId @6 :Text;      # agent holding its current run; empty when none
  host @7 :Text;         # that agent's host
  attempts @8 :Int32;    # runs started so far
  elapsedMs @9 :UInt64;  # since its current run was assigned; 0 when none
  reason @10 :Text;      # pending: why it waits; failed: why it failed; else empty
  runnable @11 :Bool;    # false: no connected agent can ever run it as things stand
  runId @12 :Text;       # its current run; empty when none
  hardware @13 :Text;    # what it requires: hardware class,
  gpus @14 :Int32;       # at least this many GPUs,
  engine @15 :Text;      # and this engine (orch slurm sizes pilot jobs from them)
}

# coordinator -> CLI: answer to StatusRequest.
struct StatusReply {
  experiments @0 :List(ExperimentProgress);  # in submission order
  agents @1 :List(AgentSummary);             # sorted by agent id
  recentFailures @2 :List(Text);             # newest first, "run-id: reason"
  jobs @3 :List(JobStatus);                  # see StatusRequest.allJobs; plan order
  security @4 :Text;                         # "curve", "plain (loopback)" or "INSECURE (...)"
  jobsOmitted @5 :UInt32;                    # jobs asked for beyond the 10,000 a reply lists
}

# CLI -> coordinator: run an experiment's failed and/or cancelled jobs again (fresh retry
# budget). Answered with CommandReply.
struct Retry {
  experiment @0 :Text;  # required
  failed @1 :Bool;      # retry failed jobs
  cancelled @2 :Bool;   # retry cancelled jobs
}

# CLI -> coordinator: a plan bundle for contributors' home rigs (docs/bundles.md): the
# experiment's plan (only the jobs of `cells`, when given), a nonce and an expiry, signed
# with the coordinator's key. Answered with ExportReply.
struct ExportRequest {
  experiment @0 :Text;      # required
  cells @1 :List(Text);     # cell labels ("baseline", "kv=q8_0"); empty: every cell
  validForMs @2 :UInt64;    # the bundle expires this long after it is made; > 0
}

# coordinator -> CLI: answer to ExportRequest.
struct ExportReply {
  ok @0 :Bool;
  message @1 :Text;   # required: what the bundle holds, or why there is none
  bundle @2 :Data;    # the plan bundle file; empty unless ok
}

# CLI -> coordinator: a contributor's result bundle to verify and store (docs/bundles.md).
# Answered with CommandReply. A file larger than one frame is sent in parts, in order:
# each carries the bytes at `offset` of a file of `totalSize` bytes under one random
# `uploadId`; every part but the last is answered "received ...", the last with the
# import's outcome. A single-part request leaves uploadId empty.
struct ImportRequest {
  bundle @0 :Data;       # required: the result bundle file, or this part of it
  name @1 :Text;         # its file name, for messages
  uploadId @2 :Text;     # parts of one file share it; empty: the whole file is here
  offset @3 :UInt64;     # where this part starts in the file
  totalSize @4 :UInt64;  # the file's size (parts only)
}

# coordinator -> CLI: answer to Submit, Cancel and Drain.
struct CommandReply {
  ok @0 :Bool;       # the command was carried out
  message @1 :Text;  # required: what was done, or why not
}

# The only top-level message. Exactly one member is set.
struct Envelope {
  union {
    hello @0 :Hello;
    welcome @1 :Welcome;
    reject @2 :Reject;
    heartbeat @3 :Heartbeat;
    assign @4 :Assign;
    runStarted @5 :RunStarted;
    digestChunk @6 :DigestChunk;
    runFinished @7 :RunFinished;
    ack @8 :Ack;
    cancel @9 :Cancel;
    drain @10 :Drain;
    submit @11 :Submit;
    statusRequest @12 :StatusRequest;
    statusReply @13 :StatusReply;
    commandReply @14 :CommandReply;
    retry @15 :Retry;
    exportRequest @16 :ExportRequest;
    exportReply @17 :ExportReply;
    importRequest @18 :ImportRequest;
  }
}
