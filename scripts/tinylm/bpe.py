"""Byte-level BPE in the GPT-2 style, as llama.cpp runs it for tokenizer.ggml.model =
"gpt2" with tokenizer.ggml.pre = "gpt-2" (docs/models.md, "Tokenizer").

Vocabulary layout, like orch's synth vocabulary: ids 0-255 one per byte (spelled with
GPT-2's byte-to-code-point map), then one token per learned merge in merge order, then
the control tokens bos, eos, pad, unk. Merges are learned here from word counts of the
training text (most frequent adjacent pair first; ties by the pair's token ids, lower
first), so the same text always gives the same vocabulary.

Encoding is llama.cpp's: the gpt-2 pre-tokenizer splits text into words (the driver
SDK's, orch_driver.bpe.split_gpt2, which the torch driver tokenizes with), then in each
word the adjacent pair with the lowest merge rank is merged (leftmost among equals)
until no pair has a rank. Only ASCII text is accepted (the model's vocabulary has
bytes as tokens but training saw ASCII only).
"""
import collections

from orch_driver import bpe as sdk_bpe

CONTROL_TOKENS = ("<|begin_of_text|>", "<|end_of_text|>", "<|pad|>", "<|unk|>")
TOKEN_TYPE_NORMAL = 1
TOKEN_TYPE_CONTROL = 3

_ALLOWED = set(range(0x20, 0x7F)) | {0x09, 0x0A, 0x0D}


def byte_tokens():
    """GPT-2's printable stand-in for each byte, as a list of 256 strings."""
    table = sdk_bpe.bytes_to_unicode()
    return [table[b] for b in range(256)]


def pretokenize(text):
    """The words llama.cpp's gpt-2 pre-tokenizer makes of `text` (ASCII only)."""
    bad = {ord(c) for c in text} - _ALLOWED
    if bad:
        raise ValueError(f"text has characters outside printable ASCII: {sorted(bad)[:5]}")
    return sdk_bpe.split_gpt2(text)


class Vocab:
    """Tokens (strings), merges ("A B", highest priority first) and control ids."""

    def __init__(self, merges):
        self.tokens = byte_tokens()
        self.merges = []
        self.ranks = {}  # (left id, right id) -> rank
        index = {t: i for i, t in enumerate(self.tokens)}
        for a, b in merges:
            self.ranks[(index[a], index[b])] = len(self.merges)
            self.merges.append(f"{a} {b}")
            index[a + b] = len(self.tokens)
            self.tokens.append(a + b)
        self.merged = {pair: index[self.tokens[pair[0]] + self.tokens[pair[1]]]
                       for pair in self.ranks}
        self.bos = len(self.tokens)
        self.eos, self.pad, self.unk = self.bos + 1, self.bos + 2, self.bos + 3
        self.tokens += CONTROL_TOKENS
        self.token_types = ([TOKEN_TYPE_NORMAL] * (len(self.tokens) - len(CONTROL_TOKENS)) +
                            [TOKEN_TYPE_CONTROL] * len(CONTROL_TOKENS))
        self._cache = {}

    def encode_word(self, word):
        ids = self._cache.get(word)
        if ids is None:
            ids = _apply_merges(list(word.encode("ascii")), self.ranks, self.merged)
            self._cache[word] = ids
        return ids

    def encode(self, text, bos=False):
        """Token ids of `text`, with the bos id first when asked (llama.cpp's add_bos)."""
        ids = [self.bos] if bos else []
        for word in pretokenize(text):
            ids += self.encode_word(word)
        return ids

    def decode(self, ids):
        inverse = {t: b for b, t in enumerate(byte_tokens())}
        out = bytearray()
        for i in ids:
            if i >= self.bos:
                continue
            out += bytes(inverse[c] for c in self.tokens[i])
        return out.decode("ascii")


def _apply_merges(ids, ranks, merged):
    while len(ids) > 1:
        best, best_rank = -1, None
        for i in range(len(ids) - 1):
            rank = ranks.get((ids[i], ids[i + 1]))
            if rank is not None and (best_rank is None or rank < best_rank):
                best, best_rank = i, rank
        if best < 0:
            break
        ids[best:best + 2] = [merged[(ids[best], ids[best + 1])]]
    return ids


def train(texts, vocab_size, single_digits=False):
    """Learns up to vocab_size - 256 - 4 merges from `texts` (fewer when no pair is left);
    returns a Vocab. With single_digits, no merge is learned from a word of digits (the
    pre-tokenizer keeps digits apart from other characters), so every digit stays its own
    token: a model then copies numbers digit by digit."""
    n_merges = vocab_size - 256 - len(CONTROL_TOKENS)
    counts = collections.Counter()
    for text in texts:
        counts.update(w for w in pretokenize(text)
                      if not (single_digits and any(c.isdigit() for c in w)))
    names = byte_tokens()
    words = [list(w.encode("ascii")) for w in counts]  # symbols as token ids
    freq = list(counts.values())
    pairs = collections.Counter()
    where = collections.defaultdict(set)  # pair -> indices of words holding it
    for wi, symbols in enumerate(words):
        for pair in zip(symbols, symbols[1:]):
            pairs[pair] += freq[wi]
            where[pair].add(wi)
    merges = []
    for _ in range(n_merges):
        if not pairs:
            break
        pair = min(pairs, key=lambda p: (-pairs[p], p))
        new_id = len(names)
        names.append(names[pair[0]] + names[pair[1]])
        merges.append((names[pair[0]], names[pair[1]]))
        for wi in sorted(where.pop(pair)):
            _merge_in_word(words, wi, pair, new_id, freq[wi], pairs, where)
        pairs.pop(pair, None)
    return Vocab(merges)


def _merge_in_word(words, wi, pair, new_id, f, pairs, where):
    old = words[wi]
    for p in zip(old, old[1:]):
        pairs[p] -= f
        if pairs[p] <= 0:
            del pairs[p]
    new = []
    i = 0
    while i < len(old):
        if i + 1 < len(old) and (old[i], old[i + 1]) == pair:
            new.append(new_id)
            i += 2
        else:
            new.append(old[i])
            i += 1
    words[wi] = new
    for p in zip(new, new[1:]):
        pairs[p] += f
        where[p].add(wi)
