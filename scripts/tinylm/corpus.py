"""The King James Bible as shipped by Debian's bible-kjv-text package, and its split.

/usr/lib/bible.data is the "EC02" compressed data file of the `bible` program: a 0x54-byte
title, then big-endian u32 block size and block count, block count + 1 u32 file offsets,
and blocks of Unix `compress` (LZW) data without their 3-byte magic. Decompressed, it is
one title line and one verse per line ("Ge1:1 In the beginning ...").

The text is public domain (the 1611 Authorized Version; see the package's copyright
file). A chapter is one document: its verses, one per line, without references.
"""
import struct
import subprocess

KJV_DATA = "/usr/lib/bible.data"
KJV_PACKAGE = "bible-kjv-text"
# Every HELDOUT_EVERY-th chapter (counted from 0 in book order) is held out, starting
# at HELDOUT_FIRST: in-distribution text the model never trains on.
HELDOUT_EVERY = 20
HELDOUT_FIRST = 10

_COMPRESS_MAGIC = b"\x1f\x9d\x90"  # compress(1), block mode, 16-bit codes


def read_verses(path=KJV_DATA):
    """Returns the decompressed lines: a title, then 'Ge1:1 text' verses."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(b"EC02"):
        raise ValueError(f"{path}: not an EC02 compressed data file")
    _block_size, count = struct.unpack(">II", data[0x54:0x5C])
    offsets = struct.unpack(f">{count + 1}I", data[0x5C:0x5C + 4 * (count + 1)])
    text = bytearray()
    for i in range(count):
        block = _COMPRESS_MAGIC + data[offsets[i]:offsets[i + 1]]
        out = subprocess.run(["gzip", "-dc"], input=block, capture_output=True, check=True)
        text += out.stdout
    return text.decode("ascii").splitlines()


def _split_reference(line):
    """'Ge1:1 In the ...' -> ('Ge', 1, 'In the ...')."""
    ref, _, verse = line.partition(" ")
    i = 0
    while not ref[i].isdigit() or i == 0:  # book names may start with a digit (1Sa)
        i += 1
    book = ref[:i]
    chapter = int(ref[i:].split(":")[0])
    return book, chapter, verse


def chapters(lines):
    """[(reference 'Ge 1', text)] in book order; text is the verses, one per line."""
    out = []
    current = None
    for line in lines[1:]:  # lines[0] is the title
        book, chapter, verse = _split_reference(line)
        key = f"{book} {chapter}"
        if current is None or current[0] != key:
            current = (key, [])
            out.append(current)
        current[1].append(verse)
    return [(key, "\n".join(verses) + "\n") for key, verses in out]


def is_heldout(index):
    return index % HELDOUT_EVERY == HELDOUT_FIRST


def split(all_chapters):
    """(train, heldout): lists of (reference, text)."""
    train = [c for i, c in enumerate(all_chapters) if not is_heldout(i)]
    heldout = [c for i, c in enumerate(all_chapters) if is_heldout(i)]
    return train, heldout
