"""What the adapters share: the sampling settings every request spells out,
the server-level axes (set when the server is launched, checked against what
it reports), and the messages of malformed answers."""

import json
import math

from orch_driver import axes
from orch_driver.errors import EngineError, InvalidCombination
from orch_driver.axes import Axis

# Server-level axes: the driver cannot change them per request; they are the
# server's launch settings ([servers.axes.NAME] in the agent's config), and a
# job whose coordinate contradicts what the server reports is refused.
LAUNCH = "server launch setting, checked against the server's report: "


def slots_axis(flag):
    return axes.count("slots", 1, LAUNCH + flag + " (requests the server runs at once)")


def switch(name, flag):
    return axes.switch(name, LAUNCH + flag)


# Per-job load (orch_server/load.py): other requests in flight on the server.
LOAD_AXES = [
    Axis("load.concurrency", axes.INTEGER, "count", min=1, max=4096,
         sets="requests in flight while the measured one runs: N-1 background generations "
         "of a seeded prompt mix"),
    Axis("load.seed", axes.INTEGER, "seed", min=0, max=0xffffffff,
         sets="seed of the background prompt mix (default: from the job id)"),
]

# The sampling of a background request: greedy, every field explicit.
BACKGROUND_SAMPLING = {"sampler.temperature": 0.0}

SAMPLER_AXES = [
    Axis("sampler.seed", axes.INTEGER, "seed", min=0, max=0xffffffff, sets="request seed"),
    axes.real("sampler.temperature", "request temperature (0 = greedy)"),
    Axis("sampler.top_k", axes.INTEGER, "count", min=-1, max=1 << 30,
         sets="request top_k (0 or -1 = off)"),
    axes.real("sampler.top_p", "request top_p"),
    axes.real("sampler.min_p", "request min_p"),
    axes.real("sampler.repeat_penalty", "request repetition penalty (1 = off)"),
]


class Sampling:
    """Every sampling field a request sets, with neutral values where the job
    gives none (servers' own defaults are not neutral: never relied upon)."""

    def __init__(self, settings):
        self.temperature = settings.get("sampler.temperature", 0.0)
        self.top_k = settings.get("sampler.top_k", 0)
        self.top_p = settings.get("sampler.top_p", 1.0)
        self.min_p = settings.get("sampler.min_p", 0.0)
        self.repeat_penalty = settings.get("sampler.repeat_penalty", 1.0)
        self.repeat_last_n = settings.get("sampler.repeat_last_n", 64)
        self.seed = settings.get("sampler.seed", 0)

    def greedy(self):
        return self.temperature <= 0.0

    def top_k_or_off(self, off):
        return self.top_k if self.top_k > 0 else off


def malformed(url, what):
    return EngineError("%s: malformed answer: %s" % (url, what))


def short(value):
    return json.dumps(value)[:120]


def number(value, url, where):
    """A JSON number as a float (NaN for null is the caller's choice)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise malformed(url, "%s: expected a number, got %s" % (where, short(value)))
    return float(value)


def token_id(value, url, where):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise malformed(url, "%s: expected a token id, got %s" % (where, short(value)))
    return value


def need(doc, key, kind, url, where):
    value = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise malformed(url, "%s.%s: missing or not %s (got %s)" % (
            where, key, {list: "an array", dict: "an object", str: "a string",
                         int: "an integer"}.get(kind, "valid"), short(value)))
    return value


def check_count(pairs, k, url, position):
    """engine_error when the server returned fewer than the K asked for."""
    if len(pairs) < k:
        raise EngineError("%s: asked for the top %d log-probabilities, the answer has %d at "
                          "position %d" % (url, k, len(pairs), position))


def best(pairs, k):
    """The k most likely of [(id, logprob)], most likely first (ties: lower id)."""
    return sorted(pairs, key=lambda p: (-p[1] if not math.isnan(p[1]) else math.inf, p[0]))[:k]


def contradiction(axis, requested, reported, url, where):
    return InvalidCombination(
        'coordinate %s = "%s", but the server at %s reports %s (%s): launch a server with '
        '%s = "%s" or plan the cell with %s = "%s"' % (axis, requested, url, reported, where,
                                                       axis, requested, axis, reported))


def check_axis(job, axis, reported, url, where, same=None):
    """Refuses a coordinate value of `axis` that is not what the server reports
    (`reported` None: the server does not say; nothing to check)."""
    if axis not in job.canonical or reported is None:
        return
    requested = job.canonical[axis]
    text = reported if isinstance(reported, str) else (
        ("on" if reported else "off") if isinstance(reported, bool) else str(reported))
    equal = same(requested, reported) if same else requested == text
    if not equal:
        raise contradiction(axis, requested, text, url, where)
