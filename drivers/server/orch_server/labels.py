"""Engine labels (FAMILY@VERSION) and the job document's `server` object
(docs/driver-protocol.md, "The job": url, api_key_file, mode, jobs_before,
log, coordinate)."""

import json

from orch_driver.errors import InvalidCombination, InvalidJob

FAMILIES = ("llama-server", "vllm", "sglang", "ollama")


class ServerRef:
    def __init__(self):
        self.url = ""
        self.api_key = ""
        self.mode = "attached"
        self.jobs_before = 0
        self.log = ""
        self.coordinate = {}
        self.model = ""


def label_version(engine, family):
    """The VERSION of `engine` ("vllm@0.11.0" -> "0.11.0"); InvalidJob when the
    label is of another family or has none."""
    name, _, version = engine.partition("@")
    if name != family or not version:
        raise InvalidJob('requirements.engine: expected "%s@VERSION", got "%s"' % (family, engine))
    return version


def check_version(family, label, reported, url):
    """invalid_combination when the server is not the version the label names."""
    expected = label_version(label, family)
    if reported != expected:
        raise InvalidCombination(
            'engine "%s" names %s %s, but the server at %s reports version "%s"; run the job '
            'on a server of that version or plan it as %s@%s' % (
                label, family, expected, url, reported, family, reported))


def _text(obj, key, where):
    value = obj.get(key, "")
    if not isinstance(value, str):
        raise InvalidJob("%s.%s: expected a string, got %s" % (where, key, json.dumps(value)[:80]))
    return value


def parse_server(doc, family):
    """The ServerRef of a job document (a dict); InvalidJob without a url."""
    server = doc.get("server")
    if server is None or (isinstance(server, dict) and not server.get("url")):
        raise InvalidJob("server: no server for this %s job (no server.url): configure "
                         "[[servers]] for engine %s in the agent's config" % (family, family))
    if not isinstance(server, dict):
        raise InvalidJob("server: expected an object, got %s" % json.dumps(server)[:80])
    out = ServerRef()
    out.url = _text(server, "url", "server")
    if not out.url.startswith(("http://", "https://")):
        raise InvalidJob('server.url: expected "http://HOST:PORT", got "%s"' % out.url)
    key_file = _text(server, "api_key_file", "server")
    if key_file:
        try:
            with open(key_file, encoding="utf-8") as f:
                out.api_key = f.read().strip()
        except OSError as error:
            raise InvalidJob("server.api_key_file: cannot read %s (%s)" % (key_file,
                                                                           error.strerror))
    out.mode = _text(server, "mode", "server") or "attached"
    if out.mode not in ("launched", "attached"):
        raise InvalidJob('server.mode: expected "launched" or "attached", got "%s"' % out.mode)
    jobs = server.get("jobs_before", 0)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 0:
        raise InvalidJob("server.jobs_before: expected a non-negative integer, got %s"
                         % json.dumps(jobs))
    out.jobs_before = jobs
    out.log = _text(server, "log", "server")
    coordinate = server.get("coordinate", {})
    if not isinstance(coordinate, dict):
        raise InvalidJob("server.coordinate: expected an object, got %s"
                         % json.dumps(coordinate)[:80])
    out.coordinate = {k: v if isinstance(v, str) else json.dumps(v) for k, v in coordinate.items()}
    out.model = _text(server, "model", "server")
    return out
