"""Record the frames a running SGLang server's processes send, for the benchmark corpus.

With ``IPC_CONFORMANCE_SGLANG_RECORD=FOLDER`` in the environment, :func:`install`
(run by :mod:`.plugin` in every SGLang process) wraps ``io_struct.msgpack_encode``,
whichever codec it is, so that the first :data:`KEEP` frames of each message
type a process sends are appended to ``FOLDER/frames-<pid>.bin``. Each record
is ``u32 len(name) | name | u32 len(frame) | frame`` (big-endian lengths),
``name`` being the message's class name. Nothing is recorded with pickle IPC
on (SGLang never calls its msgpack codec then). :func:`read_records` reads a
folder back.
"""

from __future__ import annotations

import os
import struct
from typing import Any, Dict, Iterator, Tuple

__all__ = ["RECORD_ENV", "KEEP", "install", "read_records"]

RECORD_ENV = "IPC_CONFORMANCE_SGLANG_RECORD"
#: Frames kept per message type and process.
KEEP = 2000
_U32 = struct.Struct(">I")


def install(folder: str) -> None:
    """Wrap this process's ``io_struct.msgpack_encode`` to record into ``folder`` (created if missing)."""
    from sglang.srt.managers import io_struct

    os.makedirs(folder, exist_ok=True)
    inner = io_struct.msgpack_encode
    path = os.path.join(folder, f"frames-{os.getpid()}.bin")
    counts: Dict[str, int] = {}

    def encode(obj: Any) -> Any:
        frame = inner(obj)
        name = type(obj).__name__
        if counts.get(name, 0) < KEEP:
            counts[name] = counts.get(name, 0) + 1
            raw = name.encode()
            data = bytes(frame)
            with open(path, "ab") as fh:
                fh.write(_U32.pack(len(raw)) + raw + _U32.pack(len(data)) + data)
        return frame

    io_struct.msgpack_encode = encode


def read_records(folder: str) -> Iterator[Tuple[str, bytes]]:
    """Every ``(class name, frame)`` recorded in ``folder``, file by file (sorted), in order; ``ValueError`` on a truncated file."""
    for name in sorted(os.listdir(folder)):
        if not (name.startswith("frames-") and name.endswith(".bin")):
            continue
        with open(os.path.join(folder, name), "rb") as fh:
            data = fh.read()
        at = 0
        while at < len(data):
            kind, at = _chunk(data, at, name)
            frame, at = _chunk(data, at, name)
            yield kind.decode(), frame


def _chunk(data: bytes, at: int, name: str) -> Tuple[bytes, int]:
    """The length-prefixed bytes at ``at`` and where the next record starts; ``ValueError`` when the file ends inside it."""
    if at + 4 > len(data):
        raise ValueError(f"{name}: truncated record at byte {at}")
    (n,) = _U32.unpack_from(data, at)
    chunk = data[at + 4 : at + 4 + n]
    if len(chunk) != n:
        raise ValueError(f"{name}: truncated record at byte {at}")
    return chunk, at + 4 + n
