"""One position's row as a server returns it, and the one place where it
becomes a digest and a record.

An adapter's parse_response returns a list of Row: the position, the ids and
log-probabilities of the server's top K tokens (raw log-softmax values, or
processed ones when `processed`), the target token and its log-probability
(NaN when the server did not return it: then the target lies outside the top
K; -1 when there is none), and the record's input and output tokens.

emit_rows digests each row with the SDK's top-k digest
(DigestLibrary.digest_top_logprobs: flag ROW_TOP_K_ONLY, the pairs sorted,
their bytes hashed) and writes it through RecordSink.emit_digest.
"""

import collections
import math

from orch_driver import digest as digest_mod

Row = collections.namedtuple(
    "Row", "position ids logprobs target_id target_logprob input_token output_token processed")

NO_TARGET = digest_mod.NO_TARGET
ROW_PROCESSED = digest_mod.ROW_PROCESSED


def row(position, pairs, target_id=NO_TARGET, target_logprob=math.nan, input_token=-1,
        output_token=-1, processed=False):
    """A Row from [(id, logprob), ...] in the server's order."""
    return Row(position, [p[0] for p in pairs], [p[1] for p in pairs], target_id,
               target_logprob, input_token, output_token, processed)


def digest_row(library, r, vocab_size=0):
    """The RowDigest of one row (the SDK's top-k digest)."""
    return library.digest_top_logprobs(r.ids, r.logprobs, vocab_size=vocab_size, target_id=r.target_id,
               target_logprob=r.target_logprob,
               extra_flags=ROW_PROCESSED if r.processed else 0)


def emit_row(sink, digest, r):
    sink.emit_digest(r.position, digest, r.input_token, r.output_token)


def emit_rows(sink, library, rows, vocab_size=0):
    for r in rows:
        emit_row(sink, digest_row(library, r, vocab_size), r)
