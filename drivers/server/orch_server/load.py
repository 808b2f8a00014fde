"""Background load (axis load.concurrency = N): N-1 other generation requests
in flight on the same server while the measured job runs.

The prompts are a seeded, deterministic mix drawn from a small built-in list
of texts (load.seed, default derived from the job id); background stream i
sends mix[i], mix[i + N-1], ... (cycling), each a greedy generation with every
sampling field set, and re-issues as soon as one finishes until the measured
job is done. The driver records what ran (`load` in hello and done):
concurrency, seed, the mix (sha256 prefix and a preview of each prompt), the
requests each stream completed and failed. A failed background request is
logged and counted; the job fails only when none succeeded (an engine_error
naming the URL).
"""

import hashlib
import random
import sys
import threading

from orch_driver.errors import EngineError

# Public-domain texts of other kinds than the measured workloads, so that the
# background rows differ from the measured ones.
TEXTS = (
    "In the beginning God created the heaven and the earth.",
    "Blessed are the meek: for they shall inherit the earth.",
    "To every thing there is a season, and a time to every purpose under the heaven:",
    "The LORD is my shepherd; I shall not want.",
    "And the light shineth in darkness; and the darkness comprehended it not.",
    "Vanity of vanities, saith the Preacher, vanity of vanities; all is vanity.",
    "Ask, and it shall be given you; seek, and ye shall find;",
    "For now we see through a glass, darkly; but then face to face:",
    "The heavens declare the glory of God; and the firmament sheweth his handywork.",
    "A soft answer turneth away wrath: but grievous words stir up anger.",
    "Cast thy bread upon the waters: for thou shalt find it after many days.",
    "And they shall beat their swords into plowshares, and their spears into pruninghooks:",
)
MIX_SIZE = 8
PREVIEW = 32
MIN_TOKENS = 16
SENT_WAIT_S = 30.0     # bound on waiting for the background requests to be sent
JOIN_WAIT_S = 120.0    # bound on waiting for the last background answers


def seed_of(job):
    """load.seed when the job sets it, else the first 32 bits of the job id's
    sha256 (so each repeat, a job of its own, draws its own mix)."""
    if "load.seed" in job.settings:
        return int(job.settings["load.seed"])
    return int(hashlib.sha256(job.job_id.encode("utf-8")).hexdigest()[:8], 16)


def mix(seed, size=MIX_SIZE):
    """`size` prompts drawn from TEXTS by a generator seeded with `seed`: the
    same seed gives the same prompts in the same order."""
    rng = random.Random(seed)
    order = list(TEXTS)
    rng.shuffle(order)
    return [order[i % len(order)] for i in range(size)]


def describe(prompt):
    return {"sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:16],
            "preview": prompt[:PREVIEW]}


def background_tokens(job):
    """max tokens of a background request: at least the measured request's, so
    that one overlaps it."""
    w = job.workload
    return max(MIN_TOKENS, w.max_tokens or 0, w.positions or 0)


class Background:
    """N-1 threads that send `send(prompt)` over the mix until stopped."""

    def __init__(self, concurrency, seed, send, url):
        self.concurrency = concurrency
        self.seed = seed
        self.streams = concurrency - 1
        self.prompts = mix(seed, max(MIX_SIZE, self.streams))
        self.send = send
        self.url = url
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.completed = [0] * self.streams
        self.failed = [0] * self.streams
        self.first_error = ""
        self.sent = [threading.Event() for _ in range(self.streams)]
        self.threads = [threading.Thread(target=self._loop, args=(i,), daemon=True,
                                         name="load-%d" % i) for i in range(self.streams)]
        self.unjoined = 0
        self.in_flight_at_start = None

    def start(self):
        for thread in self.threads:
            thread.start()
        for event in self.sent:
            event.wait(SENT_WAIT_S)

    def _loop(self, stream):
        k = 0
        while not self.stop_event.is_set():
            prompt = self.prompts[(stream + k * self.streams) % len(self.prompts)]
            k += 1
            self.sent[stream].set()
            try:
                self.send(prompt)
            except EngineError as error:
                self._failed(stream, error.message)
                self.stop_event.wait(0.05)  # a refusing server is not hammered
                continue
            with self.lock:
                self.completed[stream] += 1

    def _failed(self, stream, message):
        with self.lock:
            self.failed[stream] += 1
            if not self.first_error:
                self.first_error = message
        print("orch-driver: background request of stream %d failed: %s" % (stream, message),
              file=sys.stderr, flush=True)

    def stop(self):
        """Stops re-issuing and waits (bounded) for the requests in flight."""
        self.stop_event.set()
        for thread in self.threads:
            thread.join(JOIN_WAIT_S / max(1, len(self.threads)))
        self.unjoined = sum(1 for t in self.threads if t.is_alive())

    def check(self):
        """engine_error when background requests were sent and none succeeded."""
        with self.lock:
            if sum(self.completed) == 0 and sum(self.failed) > 0:
                raise EngineError("%s: load.concurrency = %d: every background request failed "
                                  "(%d); the first: %s" % (self.url, self.concurrency,
                                                           sum(self.failed), self.first_error))

    def record(self):
        with self.lock:
            out = {"concurrency": self.concurrency, "seed": self.seed,
                   "prompts": [describe(p) for p in self.prompts],
                   "completed": sum(self.completed), "failed": sum(self.failed),
                   "completed_per_stream": list(self.completed)}
        if self.in_flight_at_start is not None:
            out["in_flight_at_start"] = self.in_flight_at_start
        if self.unjoined:
            out["still_running_at_end"] = self.unjoined
        return out


def planned(job):
    """The load record of a job before it runs (hello)."""
    concurrency = int(job.settings.get("load.concurrency", 1))
    out = {"concurrency": concurrency}
    if concurrency > 1:
        seed = seed_of(job)
        out.update({"seed": seed, "prompts": [describe(p) for p in mix(
            seed, max(MIX_SIZE, concurrency - 1))]})
    return out


def run_under_load(job, client, request, measured, busy=None):
    """Runs `measured()` while load.concurrency - 1 background requests run:
    `request(prompt, max_tokens)` is the family's (path, body) of one
    background generation; `busy()` (optional) the requests the server reports
    in progress. Returns (measured's result, the load record)."""
    concurrency = int(job.settings.get("load.concurrency", 1))
    if concurrency <= 1:
        return measured(), {"concurrency": 1}
    tokens = background_tokens(job)

    def send(prompt):
        path, body = request(prompt, tokens)
        client.post(path, body)

    background = Background(concurrency, seed_of(job), send, client.base_url)
    background.start()
    try:
        if busy is not None:
            background.in_flight_at_start = wait_busy(busy, concurrency - 1, background)
        result = measured()
    finally:
        background.stop()
    background.check()
    return result, background.record()


def wait_busy(busy, wanted, background, tries=200):
    """Polls `busy()` (bounded) until the server reports `wanted` requests in
    progress; the last count seen (None when the server does not report it)."""
    seen = None
    for _ in range(tries):
        try:
            seen = busy()
        except EngineError:
            return None
        if seen is None or seen >= wanted or background.stop_event.is_set():
            return seen
        background.stop_event.wait(0.05)
    return seen
