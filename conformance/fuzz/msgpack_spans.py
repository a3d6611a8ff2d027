"""Where each msgpack value of a frame starts and ends, so attacks can target headers and values.

msgspec decodes msgpack but does not say where a value lies in the input; the
structural attacks need exactly that (rewrite this array's count, this ext's
code, replace this element), so this module walks the bytes itself. It reads
valid msgpack only: on anything malformed it raises :class:`ValueError`, and
the caller falls back to byte-level mutations.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import List, Optional

__all__ = ["Span", "spans", "header"]


@dataclass(frozen=True)
class Span:
    """One value: ``kind`` in nil/bool/int/float/str/bin/array/map/ext.

    ``start`` is the first header byte, ``body`` the first byte after the
    header (for ext, after the type byte), ``end`` one past the last byte of
    the whole value (children included). ``size`` is the element count of an
    array or map, else the byte length of str/bin/ext data. ``ext_code`` is
    the ext type (signed), else ``None``.
    """

    kind: str
    start: int
    body: int
    end: int
    size: int
    ext_code: Optional[int] = None
    depth: int = 0


_FIXED = {0xC0: ("nil", 0), 0xC2: ("bool", 0), 0xC3: ("bool", 0), 0xCA: ("float", 4), 0xCB: ("float", 8)}
_INTS = {0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8, 0xD0: 1, 0xD1: 2, 0xD2: 4, 0xD3: 8}
_LENGTHS = {
    0xD9: ("str", 1), 0xDA: ("str", 2), 0xDB: ("str", 4),
    0xC4: ("bin", 1), 0xC5: ("bin", 2), 0xC6: ("bin", 4),
    0xDC: ("array", 2), 0xDD: ("array", 4), 0xDE: ("map", 2), 0xDF: ("map", 4),
    0xC7: ("ext", 1), 0xC8: ("ext", 2), 0xC9: ("ext", 4),
}
_FIXEXT = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}
_UINT = {1: ">B", 2: ">H", 4: ">I"}


def header(buf: bytes, pos: int):
    """``(kind, size, body_offset, ext_code)`` of the value whose first byte is at ``pos``."""
    if pos >= len(buf):
        raise ValueError(f"truncated at {pos}")
    b = buf[pos]
    if b <= 0x7F or b >= 0xE0:
        return "int", 0, pos + 1, None
    if 0x80 <= b <= 0x8F:
        return "map", b & 0x0F, pos + 1, None
    if 0x90 <= b <= 0x9F:
        return "array", b & 0x0F, pos + 1, None
    if 0xA0 <= b <= 0xBF:
        return "str", b & 0x1F, pos + 1, None
    if b in _FIXED:
        kind, n = _FIXED[b]
        return kind, n, pos + 1, None
    if b in _INTS:
        return "int", _INTS[b], pos + 1, None
    if b in _LENGTHS:
        kind, width = _LENGTHS[b]
        if pos + 1 + width > len(buf):
            raise ValueError(f"truncated header at {pos}")
        (size,) = struct.unpack_from(_UINT[width], buf, pos + 1)
        body = pos + 1 + width
        if kind == "ext":
            if body >= len(buf):
                raise ValueError(f"truncated ext at {pos}")
            return kind, size, body + 1, struct.unpack_from(">b", buf, body)[0]
        return kind, size, body, None
    if b in _FIXEXT:
        if pos + 1 >= len(buf):
            raise ValueError(f"truncated ext at {pos}")
        return "ext", _FIXEXT[b], pos + 2, struct.unpack_from(">b", buf, pos + 1)[0]
    raise ValueError(f"reserved byte 0x{b:02x} at {pos}")


def spans(buf: bytes, pos: int = 0, *, max_values: int = 200_000) -> List[Span]:
    """Every value of the one msgpack object at ``pos``, in document order (parents before children)."""
    out: List[Span] = []
    # Iterative so that hostile depth cannot exhaust the Python stack.
    # Each stack entry: [index in out of the open container, values still to read].
    stack: List[list] = []
    cursor = pos
    while True:
        if len(out) >= max_values:
            raise ValueError("too many values")
        kind, size, body, code = header(buf, cursor)
        index = len(out)
        if kind in ("array", "map"):
            out.append(Span(kind, cursor, body, -1, size, None, len(stack)))
            cursor = body
            remaining = size * (2 if kind == "map" else 1)
            if remaining:
                stack.append([index, remaining])
                continue
            out[index] = Span(kind, out[index].start, body, body, size, None, len(stack))
        else:
            # fixed-width scalars carry their payload size in ``size``
            end = body + size
            if end > len(buf):
                raise ValueError(f"value at {cursor} runs past the end")
            out.append(Span(kind, cursor, body, end, size, code, len(stack)))
            cursor = end
        # close every container whose last value has just been read
        while stack:
            stack[-1][1] -= 1
            if stack[-1][1]:
                break
            closed = stack.pop()[0]
            opened = out[closed]
            out[closed] = Span(opened.kind, opened.start, opened.body, cursor, opened.size, None, opened.depth)
        if not stack:
            return out
