"""The process shell of a Python driver (docs/driver-protocol.md, "Process").

An engine implements `Engine` (its axis table, its hello, how it runs a job)
and calls `main(engine)`:

  DRIVER                      run the job document on stdin
  DRIVER session              run job frames from stdin until end of file
                              (docs/driver-protocol.md, "Sessions")
  DRIVER version              the hello object (JSON) on stdout, exit 0;
                              with session.load_axes
  DRIVER capabilities --json  the capability declaration

A run writes exactly one hello, the records, then done or error, and exits 0
(done), 2 (invalid job, combination or model) or 3 (engine error). Errors
the engine raises as orch_driver.errors types keep their code; any other
exception is an engine_error whose message is the exception, traceback on
stderr.

Sessions: every engine runs in session mode. An engine that splits loading
from running (load_key, load, run_loaded, unload) keeps its loaded state
while consecutive jobs have an equal load key (and model path and sha256);
one that does not (load_key None, the default) runs each job with run(),
loading whatever it needs per job, and its hellos say warm false. A session
ends at end of file (exit 0) or after an engine_error (exit 3: the engine's
state is suspect); every other typed error ends only its job.
"""

from __future__ import annotations

import ctypes
import json
import sys
import time
import traceback
from typing import Any, BinaryIO, Hashable, Sequence

from orch_driver import axes as axes_mod
from orch_driver import digest as digest_mod
from orch_driver import frames as frames_mod
from orch_driver import pipeline as pipeline_mod
from orch_driver import records
from orch_driver.errors import EXIT_ENGINE, EXIT_OK, DriverError, EngineError, InvalidJob
from orch_driver.job import Capture, Job, parse_job


class Engine:
    """What a driver supplies. Subclasses set the attributes and override the
    methods."""

    family = ""         # "torch": the engine label before '@'
    driver_name = ""    # "orch-driver-torch"
    axes = ()           # axes.Axis table
    rules = ()          # axes.Rule list

    def hello(self, job: Job | None) -> dict[str, Any]:
        """The hello object; `job` is None for `version` and before a job
        parsed."""
        raise NotImplementedError

    def check(self, job: Job) -> None:
        """Validates the parsed job beyond its axis values (combination
        rules with defaults filled in, what the running engine lacks). Raises
        DriverError types. Called before hello."""

    def run(self, job: Job, sink: RecordSink) -> dict[str, Any] | None:
        """Evaluates the job, calling sink.emit(...) once per position in
        increasing order; returns the engine's part of the done object.
        Called only when load_key(job) is None."""
        raise NotImplementedError

    # Sessions (docs/driver-protocol.md, "Sessions"). `load_axes`: the
    # coordinate axes whose values load_key depends on, declared in the hello
    # of `version`; the agent keeps a session per model and values of these.
    load_axes = ()

    def load_key(self, job: Job) -> Hashable | None:
        """A hashable value naming what load(job) loads beyond the model file
        (whose path and sha256 the SDK adds): jobs with equal keys share one
        handle. None (the default): nothing is kept between jobs and run()
        runs each job."""
        return None

    def load(self, job: Job) -> Any:
        """Loads what jobs with this job's load key share (called after the
        hello; may raise orch_driver.errors types); returns the handle passed
        to run_loaded."""
        raise NotImplementedError

    def run_loaded(self, job: Job, handle: Any, sink: RecordSink) -> dict[str, Any] | None:
        """run() on a loaded handle: must give the same records and done as
        the job on a freshly loaded handle (no state from earlier jobs)."""
        raise NotImplementedError

    def unload(self, handle: Any) -> None:
        """Frees a handle no job will use again (another load key came or the
        session ended)."""

    def digest_workers(self, job: Job) -> int:
        """Threads that digest rows while run() goes on (pipeline.py); 0: each
        row is digested inside sink.emit, on the engine's thread."""
        return 0

    def declaration_json(self) -> str:
        return axes_mod.declaration_json(self.family, self.driver_name,
                                         self.axes, self.rules)


class RecordSink:
    """Digests rows through the C ABI, frames them as records and keeps the
    counts done reports (positions, nan_rows, the token ids named). With
    `workers` > 0 and rows of at least `min_pipelined_row` logits, the rows
    are digested on that many threads (pipeline.py), started at the first
    such row, and the records written in emit order; finish() writes the
    last ones. Shorter rows are digested in turn, on the emitting thread.
    `positions` (the rows the run emits at most) and the first row's size
    settle the capture policy's byte budget (job.Capture.for_run)."""

    def __init__(self, writer: frames_mod.FrameWriter, library: digest_mod.DigestLibrary,
                 capture: Capture, workers: int = 0,
                 min_pipelined_row: int = pipeline_mod.MIN_PIPELINED_ROW,
                 positions: int = 0) -> None:
        self._writer = writer
        self._library = library
        self._capture = capture
        self._planned_positions = positions
        self.positions = 0
        self.nan_rows = 0
        self.first_nan_position = -1
        self.token_ids = set()
        self._workers = workers
        self._min_pipelined_row = min_pipelined_row
        self._pipeline = None
        self._first_row = True
        self._last_position = None

    def _start_pipeline(self, vocab_size):
        """At the first row (every row of a run has its size): the pipeline,
        when there are workers and the rows are long enough for it."""
        if self._workers > 0 and vocab_size >= self._min_pipelined_row:
            self._pipeline = pipeline_mod.DigestPipeline(
                [digest_mod.DigestLibrary(self._library.path)
                 for _ in range(self._workers)],
                self._library, self._written, pipeline_mod.rows_in_flight(self._workers))

    def plan_positions(self, positions: int) -> None:
        """The rows the run emits, when the engine knows them only once the
        workload is tokenized (a teacher-forced text without `positions`, a
        context + continuation): the byte budget is then judged on them, as
        the llama.cpp driver does. Call before the first emit."""
        if self._first_row:
            self._planned_positions = positions

    def emit(self, position: int, address: int, vocab_size: int, input_token: int,
             output_token: int, target_id: int = digest_mod.NO_TARGET,
             owner: object | None = None) -> int | None:
        """One position: `address` points at `vocab_size` contiguous float32
        logits in host memory, valid for the duration of the call, or while
        `owner` (an object holding that memory, e.g. a CPU tensor) lives.
        In turn (no workers, or rows shorter than min_pipelined_row) the row
        is digested and written at once and emit returns its argmax; with
        workers it is queued (copied unless `owner` is given) and emit
        returns None."""
        if self._first_row:
            self._first_row = False
            self._capture = self._capture.for_run(self._planned_positions, vocab_size)
            self._start_pipeline(vocab_size)
        full_row = self._capture.wants_full_row(position)
        if self._pipeline is not None:
            self._pipeline.submit(address, vocab_size, self._capture.top_logits, target_id,
                                  position, input_token, output_token, full_row, owner)
            return None
        payload, flags, argmax = self._library.record_at(
            address, vocab_size, self._capture.top_logits, target_id, position,
            input_token, output_token, full_row)
        self._count(position, input_token, output_token, payload, flags, argmax)
        return argmax

    def emit_digest(self, position: int, digest: digest_mod.RowDigest, input_token: int,
                    output_token: int) -> int:
        """One position from a ready digest.RowDigest (e.g. a server's
        returned top-k, DigestLibrary.digest_top_logprobs): written as its
        record at once, after every row emitted before it (rows still in the
        digest pipeline are written first). Positions must increase across
        everything this sink wrote; a repeated or earlier position is a
        ValueError naming both."""
        self.finish()
        if self._last_position is not None and position <= self._last_position:
            raise ValueError("emit_digest: position %d after position %d"
                             % (position, self._last_position))
        payload = records.encode_position_record(position, input_token,
                                                 output_token, digest)
        self._count(position, input_token, output_token, payload,
                    digest.flags, digest.argmax)
        return digest.argmax

    def finish(self) -> None:
        """Writes the records still in flight and stops the workers; raises
        the first failure among them. Idempotent."""
        if self._pipeline is not None:
            pipeline, self._pipeline = self._pipeline, None
            pipeline.finish()

    def _written(self, args, payload, flags, argmax):
        self._count(args[4], args[5], args[6], payload, flags, argmax)

    def _count(self, position, input_token, output_token, payload, flags, argmax):
        self._writer.record(payload)
        ids = self.token_ids
        if input_token >= 0:
            ids.add(input_token)
        if output_token >= 0:
            ids.add(output_token)
        if argmax >= 0:
            ids.add(argmax)
        self._last_position = position
        if flags & digest_mod.ROW_NOT_DISTRIBUTION:  # a top-k-only row is a distribution
            if self.nan_rows == 0:
                self.first_nan_position = position
            self.nan_rows += 1
        self.positions += 1


def _log(engine, text):
    sys.stderr.write("%s: %s\n" % (engine.driver_name, text))
    sys.stderr.flush()


class SessionState:
    """What a driver process keeps between jobs: the loaded handle and its
    key, and how many jobs ran before. `announce`: hellos carry the session
    object (session mode); a single run's hello does not."""

    def __init__(self, announce=True):
        self.announce = announce
        self.jobs_before = 0
        self.key = None
        self.handle = None

    def hello(self, hello, warm):
        if self.announce:
            hello = dict(hello, session={"warm": warm, "jobs_before": self.jobs_before})
        return hello

    def handle_for(self, engine, job, key):
        """The loaded handle for `key`: the one in hand when equal, else the
        old one unloaded and the job's loaded."""
        if self.key is not None and self.key == key:
            return self.handle
        self.close(engine)
        self.handle = engine.load(job)
        self.key = key
        return self.handle

    def close(self, engine):
        if self.key is not None:
            handle, self.key, self.handle = self.handle, None, None
            engine.unload(handle)


def _load_key(engine, job):
    key = engine.load_key(job)
    return None if key is None else (job.model.path, job.model.sha256, key)


def _fail(engine, writer, error, session):
    _log(engine, "%s: %s" % (error.code, error.message))
    if not writer.hello_sent:
        writer.hello(session.hello(engine.hello(None), False))
    writer.error(error.code, error.message)
    return error.exit_status


def run_job(engine: Engine, stdin_bytes: bytes, writer: frames_mod.FrameWriter,
            session: SessionState | None = None) -> int:
    """One run: parse, hello, records, done; returns the exit status.
    `session`: the SessionState of session mode (None: a single run)."""
    session = SessionState(announce=False) if session is None else session
    try:
        job = parse_job(stdin_bytes, engine.axes)
        engine.check(job)
        hello = engine.hello(job)
        key = _load_key(engine, job)
    except DriverError as error:
        return _fail(engine, writer, error, session)
    except Exception as error:  # the engine's own failures, before any work
        traceback.print_exc(file=sys.stderr)
        return _fail(engine, writer, EngineError("%s: %s" % (type(error).__name__, error)),
                     session)
    writer.hello(session.hello(hello, key is not None and key == session.key))
    try:
        library = digest_mod.load()
        sink = RecordSink(writer, library, job.capture, engine.digest_workers(job),
                          positions=job.workload.planned_positions())
        start = time.monotonic()
        done = {"positions": 0}
        try:
            if key is None:
                done.update(engine.run(job, sink) or {})
            else:
                handle = session.handle_for(engine, job, key)
                done.update(engine.run_loaded(job, handle, sink) or {})
        finally:
            # The records of rows emitted before a failure go out before its
            # error frame; a failure among them (an earlier position) wins.
            sink.finish()
        done["positions"] = sink.positions
        done["nan_rows"] = sink.nan_rows
        if sink.nan_rows:
            done["first_nan_position"] = sink.first_nan_position
            _log(engine, "%d rows are not distributions (NaN or +inf logits), "
                 "first at position %d" % (sink.nan_rows,
                                           sink.first_nan_position))
        done.setdefault("wall_ms", (time.monotonic() - start) * 1000.0)
    except DriverError as error:
        return _fail(engine, writer, error, session)
    except digest_mod.LibraryNotFound as error:
        return _fail(engine, writer, EngineError(str(error)), session)
    except Exception as error:  # the engine's own failures
        traceback.print_exc(file=sys.stderr)
        return _fail(engine, writer, EngineError(
            "%s: %s" % (type(error).__name__, error)), session)
    writer.done(done)
    return EXIT_OK


def run_session(engine: Engine, stdin: BinaryIO, writer: frames_mod.FrameWriter) -> int:
    """Session mode: job frames from `stdin` (a binary stream), each run as
    run_job does, until end of file (EXIT_OK). An engine_error ends the
    session with its status; a frame that is not a job is answered with
    invalid_job and ends it (EXIT_INVALID)."""
    session = SessionState()
    try:
        while True:
            try:
                payload = frames_mod.read_job_frame(stdin)
            except ValueError as error:
                return _fail(engine, writer, InvalidJob(str(error)), session)
            if payload is None:
                return EXIT_OK
            status = run_job(engine, payload, writer, session)
            session.jobs_before += 1
            if status == EXIT_ENGINE:
                return status
            writer.next_job()
    finally:
        session.close(engine)


def _usage(engine, name):
    return ("usage: %s                 run the job document on stdin (driver "
            "protocol)\n       %s session         job frames on stdin until end of "
            "file, the engine kept loaded\n"
            "       %s version         the hello object (JSON)\n"
            "       %s capabilities --json   axes, values, invalid "
            "combinations\n" % (name, name, name, name))


def main(engine: Engine, argv: Sequence[str] | None = None) -> int:
    argv = sys.argv if argv is None else argv
    if len(argv) == 1:
        writer = frames_mod.FrameWriter.take_stdout()
        status = run_job(engine, sys.stdin.buffer.read(), writer)
        sys.stderr.flush()
        return status
    command = argv[1]
    if command == "session" and len(argv) == 2:
        writer = frames_mod.FrameWriter.take_stdout()
        status = run_session(engine, sys.stdin.buffer, writer)
        sys.stderr.flush()
        return status
    if command == "version" and len(argv) == 2:
        hello = dict(engine.hello(None), session={"load_axes": list(engine.load_axes)})
        sys.stdout.write(json.dumps(hello, indent=1) + "\n")
        return EXIT_OK
    if command == "capabilities" and (len(argv) == 2 or argv[2:] == ["--json"]):
        sys.stdout.write(engine.declaration_json())
        return EXIT_OK
    if command in ("--help", "-h", "help"):
        sys.stdout.write(_usage(engine, argv[0]))
        return EXIT_OK
    sys.stderr.write("%s: unknown command '%s' (try --help)\n"
                     % (argv[0], command))
    return 2
