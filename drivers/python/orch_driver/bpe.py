"""llama.cpp's byte-level BPE tokenizer for GGUF vocabularies with
tokenizer.ggml.model = "gpt2" and tokenizer.ggml.pre = "gpt-2" (what orch's
models use), reimplemented to give the same ids as llama_tokenize(text,
add_special=true, parse_special=false):

  1. user-defined tokens (token type 4) are cut out of the text first,
     longest first (control and unknown tokens too when parse_special is
     true, as for a prompt rendered from chat messages);
  2. the rest is split by llama.cpp's GPT-2 pre-tokenizer
     ('s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+)
     with llama.cpp's character classes (letters L*, numbers N*, its own
     whitespace list);
  3. each piece is byte-encoded (GPT-2's bytes_to_unicode) and merged by
     rank, lowest rank first and leftmost among equals;
  4. BOS is prepended when tokenizer.ggml.add_bos_token is true (EOS
     likewise).

Other tokenizer models or pre-tokenizers raise Unsupported: a driver can then
still run workloads given as token ids.
"""

import heapq
import unicodedata

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

_WHITESPACE = set([0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680,
                   0x2028, 0x2029, 0x202F, 0x205F, 0x3000] +
                  list(range(0x2000, 0x200B)))


class Unsupported(Exception):
    pass


def bytes_to_unicode():
    printable = (list(range(ord("!"), ord("~") + 1)) +
                 list(range(ord("\xa1"), ord("\xac") + 1)) +
                 list(range(ord("\xae"), ord("\xff") + 1)))
    mapping = {}
    n = 0
    for b in range(256):
        if b in printable:
            mapping[b] = chr(b)
        else:
            mapping[b] = chr(256 + n)
            n += 1
    return mapping


_BYTE_TO_CHAR = bytes_to_unicode()
_CHAR_TO_BYTE = {c: b for b, c in _BYTE_TO_CHAR.items()}


def _flags(text, pos, end):
    """(letter, number, whitespace, in_range) of the code point at pos."""
    if pos >= end:
        return False, False, False, False
    c = text[pos]
    cat = unicodedata.category(c)
    return cat[0] == "L", cat[0] == "N", ord(c) in _WHITESPACE, True


def split_gpt2(text):
    """llama.cpp's unicode_regex_split_custom_gpt2 on one fragment."""
    words = []
    end = len(text)
    prev = 0
    pos = 0

    def add(stop):
        nonlocal prev
        if stop > prev:
            words.append(text[prev:stop])
        length = stop - prev
        prev = stop
        return length

    while pos < end:
        c = text[pos]
        if c == "'" and pos + 1 < end:
            nxt = text[pos + 1]
            if nxt in "stmd":
                pos += add(pos + 2)
                continue
            if pos + 2 < end and text[pos + 1:pos + 3] in ("re", "ve", "ll"):
                pos += add(pos + 3)
                continue
        f = _flags(text, pos + 1, end) if c == " " else _flags(text, pos, end)
        if f[0] or f[1]:
            kind = 0 if f[0] else 1
            pos += c == " "
            while _flags(text, pos, end)[kind]:
                pos += 1
            add(pos)
            continue
        if not (f[0] or f[1] or f[2]) and f[3]:
            pos += c == " "
            while True:
                g = _flags(text, pos, end)
                if (g[0] or g[1] or g[2]) or not g[3]:
                    break
                pos += 1
            add(pos)
            continue
        spaces = 0
        while _flags(text, pos + spaces, end)[2]:
            spaces += 1
        if spaces > 1 and pos + spaces < end:
            pos += spaces - 1
            add(pos)
            continue
        if spaces > 0:
            pos += spaces
            add(pos)
            continue
        pos += 1
        add(pos)
    return words


class BpeTokenizer:
    """Built from a GGUF file's tokenizer.ggml.* metadata (a dict)."""

    def __init__(self, kv):
        model = kv.get("tokenizer.ggml.model", "")
        pre = kv.get("tokenizer.ggml.pre", "")
        if model != "gpt2" or pre != "gpt-2":
            raise Unsupported(
                'tokenizer.ggml.model "%s" with tokenizer.ggml.pre "%s": this '
                'driver tokenizes text only for model "gpt2" with pre "gpt-2"; '
                "give the workload as tokens" % (model, pre))
        self.tokens = kv["tokenizer.ggml.tokens"]
        self.types = kv.get("tokenizer.ggml.token_type",
                            [NORMAL] * len(self.tokens))
        self.ids = {}
        for i, t in enumerate(self.tokens):
            self.ids.setdefault(t, i)
        self.ranks = {}
        for rank, merge in enumerate(kv.get("tokenizer.ggml.merges", [])):
            left, _, right = merge.partition(" ")
            self.ranks.setdefault((left, right), rank)
        self.bos = kv.get("tokenizer.ggml.bos_token_id", -1)
        self.eos = kv.get("tokenizer.ggml.eos_token_id", -1)
        self.add_bos = bool(kv.get("tokenizer.ggml.add_bos_token", False))
        self.add_eos = bool(kv.get("tokenizer.ggml.add_eos_token", False))
        eog = [self.eos] + [kv.get(k, -1) for k in
                            ("tokenizer.ggml.eot_token_id",
                             "tokenizer.ggml.eom_token_id")]
        self.end_of_generation = {t for t in eog if isinstance(t, int) and t >= 0}
        self.user_defined = sorted(
            (t for t, ty in zip(self.tokens, self.types) if ty == USER_DEFINED and t),
            key=len, reverse=True)
        # parse_special: control and unknown tokens are cut out too.
        self.special = sorted(
            (t for t, ty in zip(self.tokens, self.types)
             if ty in (USER_DEFINED, CONTROL, UNKNOWN) and t),
            key=len, reverse=True)

    def _partition(self, text, parse_special=False):
        """[(is_token, text)] with user-defined tokens (and with
        parse_special control and unknown tokens) cut out."""
        parts = [(False, text)]
        for special in self.special if parse_special else self.user_defined:
            out = []
            for is_token, piece in parts:
                if is_token or special not in piece:
                    out.append((is_token, piece))
                    continue
                chunks = piece.split(special)
                for k, chunk in enumerate(chunks):
                    if k:
                        out.append((True, special))
                    if chunk:
                        out.append((False, chunk))
            parts = out
        return parts

    def _merge(self, word):
        symbols = list(word)
        alive = [True] * len(symbols)
        nxt = list(range(1, len(symbols))) + [-1]
        prv = list(range(-1, len(symbols) - 1))
        queue = []

        def push(left, right):
            if left < 0 or right < 0:
                return
            rank = self.ranks.get((symbols[left], symbols[right]))
            if rank is not None:
                heapq.heappush(queue, (rank, left, right,
                                       symbols[left] + symbols[right]))

        for i in range(1, len(symbols)):
            push(i - 1, i)
        while queue:
            _, left, right, text = heapq.heappop(queue)
            if not alive[left] or not alive[right] or nxt[left] != right:
                continue
            if symbols[left] + symbols[right] != text:
                continue
            symbols[left] = text
            alive[right] = False
            nxt[left] = nxt[right]
            if nxt[right] >= 0:
                prv[nxt[right]] = left
            push(prv[left], left)
            push(left, nxt[left])
        return [s for s, a in zip(symbols, alive) if a]

    def _word_ids(self, word, out):
        encoded = "".join(_BYTE_TO_CHAR[b] for b in word.encode("utf-8"))
        for symbol in self._merge(encoded):
            token = self.ids.get(symbol)
            if token is not None:
                out.append(token)
                continue
            for byte in symbol.encode("utf-8"):  # llama.cpp's fallback
                single = self.ids.get(chr(byte))
                if single is not None:
                    out.append(single)

    def encode(self, text, add_special=True, parse_special=False):
        """llama_tokenize(text, add_special, parse_special)."""
        out = []
        if add_special and self.add_bos and self.bos >= 0:
            out.append(self.bos)
        for is_token, piece in self._partition(text, parse_special):
            if is_token:
                out.append(self.ids[piece])
                continue
            for word in split_gpt2(piece):
                self._word_ids(word, out)
        if add_special and self.add_eos and self.eos >= 0:
            out.append(self.eos)
        return out

    def piece(self, token):
        """The bytes llama_token_to_piece(special=false) gives."""
        if token < 0 or token >= len(self.tokens):
            return b""
        kind = self.types[token] if token < len(self.types) else NORMAL
        text = self.tokens[token]
        if kind == CONTROL or kind == UNUSED:
            return b""
        if kind == USER_DEFINED:
            return text.encode("utf-8")
        return bytes(_CHAR_TO_BYTE[c] for c in text if c in _CHAR_TO_BYTE)


def printable_text(data):
    """drivers/llamacpp/printable_text.cc: valid UTF-8 kept, every other byte
    written as \\xHH."""
    out = []
    i = 0
    n = len(data)
    while i < n:
        lead = data[i]
        length = (1 if lead < 0x80 else 2 if lead >> 5 == 0x6 else
                  3 if lead >> 4 == 0xE else 4 if lead >> 3 == 0x1E else 0)
        valid = length > 0 and i + length <= n and all(
            data[i + j] & 0xC0 == 0x80 for j in range(1, length))
        if valid:
            out.append(data[i:i + length].decode("utf-8", errors="replace"))
            i += length
            continue
        out.append("\\x%02x" % lead)
        i += 1
    return "".join(out)
