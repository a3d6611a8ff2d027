"""Framing of the testee protocol (``conformance/PROTOCOL.md``): length-prefixed msgpack maps.

Every message, in both directions, is::

    +----------------+-----------------------------+
    | u32 big-endian |  msgpack map                |
    | length N       |  N bytes                    |
    +----------------+-----------------------------+

:func:`read_message` and :func:`write_message` are the whole of it. Both
enforce a maximum size (:data:`DEFAULT_MAX_MESSAGE_BYTES` unless given) so
that a corrupt length prefix cannot make the reader allocate gigabytes; every
printable ASCII byte is ``0x20`` or more, so a stray line of text on the
stream reads as a length of at least 512 MiB and is caught by the default
limit with a hint that says so.
"""

from __future__ import annotations

import struct
from typing import IO, Any, Dict, Optional

import msgspec

__all__ = [
    "PROTOCOL_VERSION",
    "OPS",
    "VALUE_OPS",
    "ERROR_KINDS",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "ProtocolError",
    "TruncatedMessage",
    "check_max_size",
    "encode_message",
    "read_message",
    "write_frame",
    "write_message",
]

#: The version a testee declares in its ``hello`` answer.
PROTOCOL_VERSION = 1

#: Request operations (``encode_value`` and ``decode_value``: the engine-neutral ones, PROTOCOL.md §7).
OPS = ("hello", "encode", "decode", "roundtrip", "encode_value", "decode_value")

#: The engine-neutral operations: a message as plain values and its type's name, for any engine.
VALUE_OPS = ("encode_value", "decode_value")

#: ``error_kind`` values of a failed response (``invalid``: the value is not a valid message of the named type, §7).
ERROR_KINDS = ("decode_error", "encode_error", "unsupported", "internal_error", "invalid")

#: Largest message accepted by default (256 MiB): below any length that text would spell.
DEFAULT_MAX_MESSAGE_BYTES = 256 << 20

_PREFIX = struct.Struct(">I")
_MAX_U32 = 2**32 - 1
_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder()


class ProtocolError(ValueError):
    """A byte stream that is not a sequence of well-formed protocol messages."""


class TruncatedMessage(ProtocolError):
    """The stream ended inside a message (the writer is usually gone)."""


def check_max_size(max_size: int) -> int:
    """``max_size`` if it is a valid message size limit (1 to 2**32 - 1), else ``ValueError``."""
    if not isinstance(max_size, int) or isinstance(max_size, bool) or not 1 <= max_size <= _MAX_U32:
        raise ValueError(f"max_size must be an int from 1 to {_MAX_U32}, got {max_size!r}")
    return max_size


def _text_hint(prefix: bytes) -> str:
    if all(0x20 <= b < 0x7F or b in (0x09, 0x0A, 0x0D) for b in prefix):
        return f" (the prefix {prefix!r} is ASCII text: is something printing to the protocol stream?)"
    return ""


def encode_message(obj: Dict[str, Any], *, max_size: int = DEFAULT_MAX_MESSAGE_BYTES) -> bytes:
    """The msgpack body of ``obj`` (without the prefix); :class:`ProtocolError` if over ``max_size``."""
    check_max_size(max_size)
    if not isinstance(obj, dict):
        raise TypeError(f"a protocol message must be a dict, got {type(obj).__qualname__}")
    body = _encoder.encode(obj)
    if len(body) > max_size:
        raise ProtocolError(f"message of {len(body)} bytes exceeds the limit of {max_size} bytes")
    return body


def write_frame(stream: IO[bytes], body: bytes) -> None:
    """Write an already encoded body (see :func:`encode_message`) with its length prefix, and flush."""
    stream.write(_PREFIX.pack(len(body)))
    stream.write(body)
    stream.flush()


def write_message(stream: IO[bytes], obj: Dict[str, Any], *, max_size: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
    """Write ``obj`` as one framed message and flush.

    Raises :class:`ProtocolError` before writing anything when the encoded
    message exceeds ``max_size``, ``TypeError`` when ``obj`` is not a dict or
    holds a value msgpack cannot carry, and whatever the stream raises
    (``BrokenPipeError`` when the reader is gone).
    """
    write_frame(stream, encode_message(obj, max_size=max_size))


def _read_exactly(stream: IO[bytes], n: int) -> bytes:
    chunks = []
    remaining = n
    while remaining:
        chunk = stream.read(remaining)
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_message(stream: IO[bytes], *, max_size: int = DEFAULT_MAX_MESSAGE_BYTES) -> Optional[Dict[str, Any]]:
    """The next message on ``stream`` as a dict, or ``None`` at a clean end of stream.

    A clean end is end-of-stream before the first byte of a length prefix.
    Anything else that is wrong raises :class:`ProtocolError` with what was
    expected and what was found: a prefix or body cut short, a length over
    ``max_size``, a body that is not msgpack, or msgpack that is not a map.
    """
    check_max_size(max_size)
    prefix = _read_exactly(stream, _PREFIX.size)
    if not prefix:
        return None
    if len(prefix) < _PREFIX.size:
        raise TruncatedMessage(f"stream ended inside a length prefix ({len(prefix)} of 4 bytes: {prefix!r})")
    (size,) = _PREFIX.unpack(prefix)
    if size > max_size:
        raise ProtocolError(f"message length {size} exceeds the limit of {max_size} bytes{_text_hint(prefix)}")
    body = _read_exactly(stream, size)
    if len(body) < size:
        raise TruncatedMessage(f"stream ended inside a message: got {len(body)} of {size} bytes")
    try:
        obj = _decoder.decode(body)
    except msgspec.DecodeError as exc:
        raise ProtocolError(f"message of {size} bytes is not valid msgpack: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError(f"message is a msgpack {type(obj).__name__}, not a map")
    return obj
