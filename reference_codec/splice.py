"""Wire v1 encode with one copy per large buffer: placeholders in the body, buffers spliced in after.

msgspec builds its output in a buffer it grows as it goes, and an ``Ext``
payload must be a ``bytes`` first: a large tensor was copied into the payload,
then into msgspec's buffer (and again each time that buffer grew), then once
more when the result was cut to size. Instead, the encoder's hook hands msgspec
a 20-byte placeholder (``msgspec.Raw``, written verbatim) for each buffer of at
least :data:`SPLICE_MIN_BYTES` (1 MiB), and :meth:`BufferSplicer.assemble` writes the
final frame once: the body between placeholders, and in place of each
placeholder the ext header, the buffer layout's length and metadata, and the
buffer's bytes read straight from the tensor's memory.

The bytes are exactly what msgspec would write for the ``Ext`` itself: a
payload of more than 65535 bytes is always an ext 32 (``0xc9``, u32 big-endian
payload length, int8 code), and a spliced buffer has far more than 65535 raw bytes.

A placeholder is a per-call random 16-byte prefix plus the record's u32 index,
so it cannot be confused with a value the message holds (the chance is 2**-128
per position) and splicing does not depend on the order msgspec visits values.
:meth:`assemble` still checks that the body holds each placeholder exactly once
and returns ``None`` otherwise; the caller then encodes without splicing.

The frame is a ``memoryview`` of a numpy-allocated ``uint8`` array, placed so
that the largest buffer's bytes start at a 64-byte boundary: writable and
aligned, so a receiver in the same process decodes that buffer in place (no
copy on either side of the round trip but the one into the frame). For large frames it is
backed by transparent huge pages where the kernel allows (numpy advises them),
which costs a fraction of the page faults of a ``bytes`` of the same size.
"""

from __future__ import annotations

import os
import struct
from typing import Any, List, Optional, Tuple

import msgspec
import numpy as np

from . import wire

__all__ = ["BufferSplicer", "SPLICE_MIN_BYTES", "ALIGNMENT"]

#: Buffers of at least this many raw bytes are spliced. Below it msgspec's own
#: ``Ext`` path costs no more than a placeholder, a search and a fresh frame
#: (encode of one float32 tensor on 2 cores: even at 512 KiB, a quarter faster
#: at 1 MiB, a third at 4 MiB).
SPLICE_MIN_BYTES = 1 << 20

#: The largest spliced buffer starts at a multiple of this address (a cache line; any item size divides it).
ALIGNMENT = 64
_EXT32 = struct.Struct(">BIb")  # 0xc9, payload length, ext code
_EXT32_MARKER = 0xC9
_PREFIX_BYTES = 16


class BufferSplicer:
    """The buffers of one wire v1 encode, held back from msgspec (see the module docstring).

    One instance serves one ``encode`` call on one thread: :meth:`placeholder`
    from the encoder's hook, then :meth:`assemble` with msgspec's output.
    """

    __slots__ = ("_prefix", "_records")

    def __init__(self) -> None:
        self._prefix = os.urandom(_PREFIX_BYTES)
        self._records: List[Tuple[int, bytes, memoryview]] = []

    def placeholder(self, code: int, layout_head: bytes, raw: memoryview) -> msgspec.Raw:
        """Record ext ``code`` with payload ``layout_head + raw``; what msgspec writes in its place."""
        self._records.append((code, layout_head, raw))
        return msgspec.Raw(self._prefix + wire.U32.pack(len(self._records) - 1))

    def assemble(self, body: bytes) -> Optional[memoryview]:
        """The frame ``body`` stands for, written once; ``None`` if a placeholder is missing or repeated."""
        records = self._records
        if not records:
            return None
        prefix = self._prefix
        width = _PREFIX_BYTES + wire.U32.size
        found: List[Tuple[int, int]] = []  # (offset in body, record index)
        start = body.find(prefix)
        while start >= 0:
            index = wire.U32.unpack_from(body, start + _PREFIX_BYTES)[0] if start + width <= len(body) else -1
            found.append((start, index))
            start = body.find(prefix, start + width)
        if sorted(i for _, i in found) != list(range(len(records))):
            return None
        # The frame in pieces: body up to a placeholder, ext header with the layout head, the buffer; ...; the rest.
        pieces: List[Any] = []
        previous = 0
        for offset, index in found:
            code, head, raw = records[index]
            pieces += [body[previous:offset], _EXT32.pack(_EXT32_MARKER, len(head) + len(raw), code) + head, raw]
            previous = offset + width
        pieces.append(body[previous:])
        sizes = [len(p) for p in pieces]  # every buffer is a one-dimensional byte view
        total = sum(sizes)
        # The frame is cut from its allocation where the largest buffer's bytes sit at an
        # ALIGNMENT boundary, so that a decode in this process (a round trip, an in-process
        # hop) can view them in place.
        largest = max(range(2, len(pieces), 3), key=sizes.__getitem__)
        store = np.empty(total + ALIGNMENT, dtype=np.uint8)
        shift = -(store.ctypes.data + sum(sizes[:largest])) % ALIGNMENT
        frame = store[shift : shift + total]
        at = 0
        for piece, n in zip(pieces, sizes):
            if n:
                frame[at : at + n] = np.frombuffer(piece, dtype=np.uint8)
                at += n
        return memoryview(frame)  # type: ignore[arg-type]  # numpy declares ndarray.__buffer__ only for Python >= 3.12; mypy checks 3.11
