"""Ways to damage valid frames, for the bad-input property and the fuzz harness.

Each mutation is a plain function ``(frames, data) -> frames`` drawing its
choices from Hypothesis ``data`` so failures shrink to the smallest damage
(the earliest byte, the shortest cut, the lowest bit).
"""

from __future__ import annotations

from typing import Callable, Dict, List

import hypothesis.strategies as st

__all__ = ["MUTATIONS", "mutate"]

Frames = List[bytes]


def _pick_frame(frames: Frames, data) -> int:
    return data.draw(st.integers(0, len(frames) - 1), label="frame")


def truncate(frames: Frames, data) -> Frames:
    i = _pick_frame(frames, data)
    cut = data.draw(st.integers(0, max(0, len(frames[i]) - 1)), label="keep bytes")
    return frames[:i] + [frames[i][:cut]] + frames[i + 1 :]


def flip_bit(frames: Frames, data) -> Frames:
    i = _pick_frame(frames, data)
    if not frames[i]:
        return frames[:i] + [b"\x00"] + frames[i + 1 :]
    pos = data.draw(st.integers(0, len(frames[i]) - 1), label="byte")
    bit = data.draw(st.integers(0, 7), label="bit")
    buf = bytearray(frames[i])
    buf[pos] ^= 1 << bit
    return frames[:i] + [bytes(buf)] + frames[i + 1 :]


def overwrite_byte(frames: Frames, data) -> Frames:
    i = _pick_frame(frames, data)
    if not frames[i]:
        return frames
    pos = data.draw(st.integers(0, len(frames[i]) - 1), label="byte")
    value = data.draw(st.sampled_from([0x00, 0xFF, 0xC1, 0xDD, 0xDF, 0xC7, 0xD8, 0x7F, 0x80, 0xCF]), label="value")
    buf = bytearray(frames[i])
    buf[pos] = value
    return frames[:i] + [bytes(buf)] + frames[i + 1 :]


def splice(frames: Frames, data) -> Frames:
    i = _pick_frame(frames, data)
    pos = data.draw(st.integers(0, len(frames[i])), label="at")
    junk = data.draw(st.binary(min_size=1, max_size=16), label="junk")
    return frames[:i] + [frames[i][:pos] + junk + frames[i][pos:]] + frames[i + 1 :]


def drop_frame(frames: Frames, data) -> Frames:
    if len(frames) == 1:
        return [b""]
    i = _pick_frame(frames, data)
    return frames[:i] + frames[i + 1 :]


def extra_frame(frames: Frames, data) -> Frames:
    return frames + [data.draw(st.binary(max_size=32), label="extra frame")]


def duplicate_region(frames: Frames, data) -> Frames:
    i = _pick_frame(frames, data)
    f = frames[i]
    if len(f) < 2:
        return frames
    a = data.draw(st.integers(0, len(f) - 2), label="from")
    b = data.draw(st.integers(a + 1, min(len(f), a + 64)), label="to")
    return frames[:i] + [f[:b] + f[a:b] + f[b:]] + frames[i + 1 :]


MUTATIONS: Dict[str, Callable[[Frames, object], Frames]] = {
    "truncate": truncate,
    "flip_bit": flip_bit,
    "overwrite_byte": overwrite_byte,
    "splice": splice,
    "drop_frame": drop_frame,
    "extra_frame": extra_frame,
    "duplicate_region": duplicate_region,
}


def mutate(frames: Frames, data) -> Frames:
    """One to three mutations, chosen by ``data``; the name of each is recorded in the draw labels."""
    count = data.draw(st.integers(1, 3), label="mutations")
    for _ in range(count):
        name = data.draw(st.sampled_from(sorted(MUTATIONS)), label="mutation")
        frames = MUTATIONS[name](frames, data)
    return frames
