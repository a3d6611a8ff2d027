"""Blind damage to valid frames: cut, flip, overwrite, splice, drop and add frames.

Each mutation is ``(frames, choices) -> frames`` (see :mod:`.choices`), so the
same code serves the Hypothesis properties (which shrink to the smallest
damage: the earliest byte, the shortest cut, the lowest bit) and the seeded
long loop. These know nothing of msgpack; :mod:`.attacks` does.
"""

from __future__ import annotations

from typing import Callable, Dict, List

from .choices import Choices

__all__ = ["BYTE_MUTATIONS", "mutate_bytes"]

Frames = List[bytes]

#: Bytes that mean the most to a msgpack reader: nil, reserved, 32-bit headers, ext headers.
_INTERESTING = (0x00, 0xFF, 0xC1, 0xDD, 0xDF, 0xDB, 0xC6, 0xC9, 0xC7, 0xD8, 0x7F, 0x80, 0xCF, 0xD3)


def _pick_frame(frames: Frames, c: Choices) -> int:
    return c.integer(0, len(frames) - 1, "frame")


def truncate(frames: Frames, c: Choices) -> Frames:
    i = _pick_frame(frames, c)
    cut = c.integer(0, max(0, len(frames[i]) - 1), "keep bytes")
    return frames[:i] + [frames[i][:cut]] + frames[i + 1 :]


def flip_bit(frames: Frames, c: Choices) -> Frames:
    i = _pick_frame(frames, c)
    if not frames[i]:
        return frames[:i] + [b"\x00"] + frames[i + 1 :]
    pos = c.integer(0, len(frames[i]) - 1, "byte")
    bit = c.integer(0, 7, "bit")
    buf = bytearray(frames[i])
    buf[pos] ^= 1 << bit
    return frames[:i] + [bytes(buf)] + frames[i + 1 :]


def overwrite_byte(frames: Frames, c: Choices) -> Frames:
    i = _pick_frame(frames, c)
    if not frames[i]:
        return frames
    pos = c.integer(0, len(frames[i]) - 1, "byte")
    buf = bytearray(frames[i])
    buf[pos] = c.choice(_INTERESTING, "value")
    return frames[:i] + [bytes(buf)] + frames[i + 1 :]


def splice(frames: Frames, c: Choices) -> Frames:
    i = _pick_frame(frames, c)
    pos = c.integer(0, len(frames[i]), "at")
    junk = c.binary(16, "junk") or b"\xc1"
    return frames[:i] + [frames[i][:pos] + junk + frames[i][pos:]] + frames[i + 1 :]


def drop_frame(frames: Frames, c: Choices) -> Frames:
    if len(frames) == 1:
        return [b""]
    i = _pick_frame(frames, c)
    return frames[:i] + frames[i + 1 :]


def extra_frame(frames: Frames, c: Choices) -> Frames:
    return frames + [c.binary(32, "extra frame")]


def duplicate_region(frames: Frames, c: Choices) -> Frames:
    i = _pick_frame(frames, c)
    f = frames[i]
    if len(f) < 2:
        return frames
    a = c.integer(0, len(f) - 2, "from")
    b = c.integer(a + 1, min(len(f), a + 64), "to")
    return frames[:i] + [f[:b] + f[a:b] + f[b:]] + frames[i + 1 :]


BYTE_MUTATIONS: Dict[str, Callable[[Frames, Choices], Frames]] = {
    "truncate": truncate,
    "flip_bit": flip_bit,
    "overwrite_byte": overwrite_byte,
    "splice": splice,
    "drop_frame": drop_frame,
    "extra_frame": extra_frame,
    "duplicate_region": duplicate_region,
}


def mutate_bytes(frames: Frames, c: Choices) -> Frames:
    """One to three byte mutations chosen by ``c``."""
    for _ in range(c.integer(1, 3, "mutations")):
        frames = BYTE_MUTATIONS[c.choice(sorted(BYTE_MUTATIONS), "mutation")](frames, c)
    return frames
