"""Coordinate axes as data: the values a driver accepts for each axis, the
combinations it refuses, and the capability declaration (orch.capabilities/1,
docs/drivers.md "Capability declaration") printed from the same table, so
what the driver parses and what it declares to the planner cannot disagree.

Python twin of drivers/llamacpp/job_axes.h: the same value reading (lower
case, aliases, K/V pairs, comma lists, open strings of `chars`, integer
bounds, numbers, on/off switches) and the same messages.
"""

import json
import math

from orch_driver.errors import InvalidCombination, InvalidJob

STRING, INTEGER, NUMBER, BOOLEAN = "string", "integer", "number", "boolean"

COUNT_MAX = 1 << 24


class Axis:
    def __init__(self, name, kind=STRING, noun="value", values=(),
                 aliases=(), chars="", pair=False, list=False, min=0, max=0,
                 sets=""):
        self.name = name
        self.kind = kind
        self.noun = noun
        self.values = tuple(values)
        self.aliases = tuple(aliases)  # ((alias, meaning), ...)
        self.chars = chars
        self.pair = pair
        self.list = list
        self.min = min
        self.max = max
        self.sets = sets

    def declaration(self):
        out = {"name": self.name, "type": self.kind}
        if self.values:
            out["values"] = list(self.values)
        if self.aliases:
            out["aliases"] = {a: m for a, m in self.aliases}
        if self.chars:
            out["chars"] = self.chars
        if self.pair:
            out["pair"] = True
        if self.list:
            out["list"] = True
        if self.kind == INTEGER:
            out["min"] = self.min
            out["max"] = self.max
        out["sets"] = self.sets
        return out


def count(name, min, sets):
    return Axis(name, INTEGER, "count", min=min, max=COUNT_MAX, sets=sets)


def text(name, sets):
    return Axis(name, STRING, "value", sets=sets)


def real(name, sets):
    return Axis(name, NUMBER, "number", sets=sets)


def switch(name, sets):
    return Axis(name, BOOLEAN, "switch", sets=sets)


class Condition:
    """A test on one axis's canonical value; holds when every test given
    holds."""

    def __init__(self, axis, part="", in_=(), prefix="", min=None):
        self.axis = axis
        self.part = part
        self.in_ = tuple(in_)
        self.prefix = prefix
        self.min = min

    def holds(self, value):
        part = _part(value, self.part)
        if self.in_ and part not in self.in_:
            return False
        if not part.startswith(self.prefix):
            return False
        if self.min is not None:
            try:
                return int(part) >= self.min
            except ValueError:
                return False
        return True

    def describe(self):
        subject = self.axis if not self.part else "the %s half of %s" % (
            self.part.upper(), self.axis)
        tests = []
        if len(self.in_) == 1:
            tests.append('%s = "%s"' % (subject, self.in_[0]))
        elif self.in_:
            tests.append("%s one of %s" % (subject, ", ".join(self.in_)))
        if self.prefix:
            tests.append('%s = "%s..."' % (subject, self.prefix))
        if self.min is not None:
            tests.append("%s >= %d" % (subject, self.min))
        return " and ".join(tests)

    def declaration(self):
        out = {"axis": self.axis}
        if self.part:
            out["part"] = self.part
        if self.in_:
            out["in"] = list(self.in_)
        if self.prefix:
            out["prefix"] = self.prefix
        if self.min is not None:
            out["min"] = self.min
        return out


class Rule:
    """A coordinate where `when` holds and `needs` does not cannot run."""

    def __init__(self, when, needs, reason):
        self.when = when
        self.needs = needs
        self.reason = reason


def _part(value, part):
    if part == "k":
        return value.split("/", 1)[0]
    if part == "v":
        return value.split("/", 1)[-1]
    return value


def _field(axis):
    return "coordinate." + axis.name


def _enumerated(axis, value, whole):
    for alias, meaning in axis.aliases:
        if value == alias:
            value = meaning
    if not axis.values or value in axis.values:
        return value
    expected = ("T or K/V with T one of " if axis.pair else
                "a comma list of " if axis.list else "one of ")
    inside = "" if value == whole else ' in "%s"' % whole
    raise InvalidJob('%s: unknown %s "%s"%s (expected %s%s)' % (
        _field(axis), axis.noun, value, inside, expected,
        ", ".join(axis.values)))


def _pieces(axis, value, separator):
    return separator.join(_enumerated(axis, piece, value)
                          for piece in value.split(separator))


def _read_string(axis, raw):
    value = raw.lower()
    if axis.pair:
        halves = _pieces(axis, value, "/")
        if "/" not in halves:
            return halves + "/" + halves
        if halves.count("/") > 1:
            raise InvalidJob('%s: expected T or K/V, got "%s"' % (_field(axis),
                                                                 value))
        return halves
    if axis.list:
        return _pieces(axis, value, ",")
    if axis.chars and (not value or any(c not in axis.chars for c in value)):
        raise InvalidJob('%s: invalid %s "%s" (expected characters from %s)'
                         % (_field(axis), axis.noun, raw, axis.chars))
    return _enumerated(axis, value, value)


def _is_plain_integer(raw):
    body = raw[1:] if raw.startswith("-") else raw
    return body.isdigit() and body.isascii()


def read_value(axis, raw):
    """(canonical text, parsed value) of one coordinate value; InvalidJob names
    the field, the value and what is accepted."""
    if axis.kind == INTEGER:
        if not _is_plain_integer(raw) or not axis.min <= int(raw) <= axis.max:
            raise InvalidJob('%s: expected an integer in [%d, %d], got "%s"'
                             % (_field(axis), axis.min, axis.max, raw))
        return raw, int(raw)
    if axis.kind == NUMBER:
        try:
            number = float(raw)
        except ValueError:
            number = math.nan
        if math.isnan(number) or raw.strip() != raw or raw.lower() in (
                "inf", "-inf", "infinity", "-infinity", "+inf"):
            raise InvalidJob('%s: expected a number, got "%s"' % (_field(axis),
                                                                 raw))
        return raw, number
    if axis.kind == BOOLEAN:
        value = raw.lower()
        if value in ("on", "true", "1"):
            return "on", True
        if value in ("off", "false", "0"):
            return "off", False
        raise InvalidJob('%s: expected on or off, got "%s"' % (_field(axis),
                                                              raw))
    value = _read_string(axis, raw)
    return value, value


def _shown(axis, value):
    return "%s = %s" % (axis, value if value.isdigit() else '"%s"' % value)


def check_rules(rules, settings_text):
    """Raises InvalidCombination for the first violated rule. `settings_text`
    maps an axis name to its canonical value with the driver's defaults
    filled in."""
    for rule in rules:
        when = settings_text[rule.when.axis]
        needs = settings_text[rule.needs.axis]
        if not rule.when.holds(when) or rule.needs.holds(needs):
            continue
        raise InvalidCombination("%s needs %s, got %s: %s" % (
            _shown(rule.when.axis, when), rule.needs.describe(),
            _shown(rule.needs.axis, needs), rule.reason))


def declaration(engine, driver, axes, rules):
    """The orch.capabilities/1 object."""
    return {"schema": "orch.capabilities/1", "engine": engine,
            "driver": driver, "axes": [a.declaration() for a in axes],
            "rules": [{"when": r.when.declaration(),
                       "needs": r.needs.declaration(), "reason": r.reason}
                      for r in rules]}


def declaration_json(engine, driver, axes, rules):
    """The declaration as `capabilities --json` prints it (and as
    planner/declarations/ holds it)."""
    return json.dumps(declaration(engine, driver, axes, rules), indent=2,
                      ensure_ascii=False) + "\n"
