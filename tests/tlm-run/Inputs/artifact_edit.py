#!/usr/bin/env python3
"""Edits an artifact as a tool that rewrites files would, checksum included:
artifact_edit.py IN.so OUT.so OLD NEW replaces the bytes OLD by NEW (the same
length, each occurring once) and writes the trailer of
lib/support/Checksum.h again, so the runtime's later checks (the manifest
against the config, the thread count) are what catches the edit."""
import struct
import sys

MASK = (1 << 64) - 1


def checksum(data):
    h, count = 0xCBF29CE484222325, 0
    for i in range(0, len(data), 8):
        piece = data[i:i + 8]
        word = int.from_bytes(piece, "little")
        h = ((h ^ word) * 0xFF51AFD7ED558CCD) & MASK
        h ^= h >> 29
        count += len(piece)
    return h ^ ((count * 0x9E3779B97F4A7C15) & MASK)


src, dst, old, new = sys.argv[1], sys.argv[2], sys.argv[3].encode(), sys.argv[4].encode()
assert len(old) == len(new), "the same length keeps the ELF layout"
data = open(src, "rb").read()
assert data[-16:-8] == b"TLMSUM01", "no trailer"
body = data[:-16]
assert body.count(old) == 1, "OLD must occur once, found %d" % body.count(old)
body = body.replace(old, new)
magic = b"TLMSUM01"
open(dst, "wb").write(body + magic + struct.pack("<Q", checksum(body + magic)))
