"""Shrink a failing input to a minimal one that fails the same way.

The seeded loop finds failures in inputs of up to a megabyte; a vector worth
keeping is the smallest input with the same :attr:`~.harness.Outcome.signature`
(finding kind and exception type). Hypothesis shrinks its own failures; this
is for the loop's. Two passes, repeated while either makes progress:

1. structural, while frame 0 is still readable msgpack: replace values with
   ``nil``, ``[]`` or ``0`` (largest first), cut arrays down to one element and
   ext payloads to half, so a 256-request batch becomes the one field that
   matters and a tensor the few bytes that still trigger the failure;
2. bytes: delta debugging over each frame (drop frames, then chunks of bytes).
"""

from __future__ import annotations

import struct
from typing import Callable, List, Sequence

from .msgpack_spans import spans

__all__ = ["minimise"]

Frames = List[bytes]


def minimise(frames: Sequence[bytes], still_fails: Callable[[Frames], bool], *, max_tests: int = 3000) -> Frames:
    """The smallest frames found for which ``still_fails`` holds, within ``max_tests`` calls of it."""
    current = [bytes(f) for f in frames]
    budget = [max_tests]

    def test(candidate: Frames) -> bool:
        if budget[0] <= 0:
            return False
        budget[0] -= 1
        return still_fails(candidate)

    while budget[0] > 0:
        size = sum(map(len, current)) + len(current)
        current = _structural(current, test)
        current = _drop_frames(current, test)
        for i in range(len(current)):
            current = _shrink_bytes(current, i, test)
        if sum(map(len, current)) + len(current) >= size:
            break
    return current


def _structural(frames: Frames, test) -> Frames:
    progressed = True
    while progressed:
        progressed = False
        try:
            found = spans(frames[0])
        except (ValueError, IndexError):
            return frames
        body = frames[0]
        # largest values first: one success removes the most bytes
        for span in sorted((s for s in found if s.depth >= 1), key=lambda s: s.start - s.end):
            replacements = [b"\xc0", b"\x90", b"\x00"]
            if span.kind == "array" and span.size > 1:
                children = [s for s in found if s.depth == span.depth + 1 and span.body <= s.start < span.end]
                if children:
                    replacements.insert(0, b"\x91" + body[children[0].start : children[0].end])
                    replacements.insert(1, b"\x91" + body[children[-1].start : children[-1].end])
            if span.kind == "ext" and span.size > 8:
                # keep the ext (its code and metadata prefix), drop the tail of its payload
                payload = body[span.body : span.end]
                (meta_len,) = struct.unpack_from(">I", payload, 0)
                raw_start = 4 + meta_len if 4 + meta_len <= len(payload) else 0
                # whole 16-byte blocks of the raw part, so an element size still divides it
                raw_len = len(payload) - raw_start
                for keep in (raw_start + raw_len // 32 * 16 + raw_len % 16, raw_start + raw_len // 32 * 16):
                    # halves of whole 16-byte blocks (so an element size still divides the raw part),
                    # first keeping the odd remainder (so a length that was off stays off)
                    replacements.insert(0, b"\xc9" + struct.pack(">Ib", keep, span.ext_code) + payload[:keep])
            for new in replacements:
                if span.end - span.start <= len(new):
                    continue
                candidate = [body[: span.start] + new + body[span.end :]] + frames[1:]
                if test(candidate):
                    frames, progressed = candidate, True
                    break
            if progressed:
                break
    return frames


def _drop_frames(frames: Frames, test) -> Frames:
    for i in range(len(frames) - 1, -1, -1):
        if len(frames) > 1:
            candidate = frames[:i] + frames[i + 1 :]
            if test(candidate):
                frames = candidate
    return frames


def _shrink_bytes(frames: Frames, i: int, test) -> Frames:
    data = frames[i]
    chunk = max(1, len(data) // 2)
    while chunk >= 1 and data:
        start = 0
        progressed = False
        while start < len(data):
            candidate_data = data[:start] + data[start + chunk :]
            candidate = frames[:i] + [candidate_data] + frames[i + 1 :]
            if test(candidate):
                data, frames, progressed = candidate_data, candidate, True
            else:
                start += chunk
        if not progressed:
            chunk //= 2
    return frames
