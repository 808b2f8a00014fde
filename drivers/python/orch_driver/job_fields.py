"""The non-axis integer fields of a job document: their limits and defaults,
owned by plan_document/job_fields.h (the planner checks specs against the same
table). The table between the markers is a copy of JobIntegerFields() that
tests/plan_document/job_fields_test.cc keeps equal; change the header, then
paste the text that test prints.
"""

# path: (min, max, default)
# BEGIN job_fields
INTEGER_FIELDS = {
    "capture.top_logits": (1, 1024, 20),
    "capture.full_every": (0, 16777216, 0),
    "capture.full_row_budget_bytes": (0, 4294967296, 67108864),
    "resources.threads": (0, 4096, 0),
}
# END job_fields


def limits(path):
    """(min, max, default) of the field at `path`, e.g. "capture.top_logits"."""
    return INTEGER_FIELDS[path]
