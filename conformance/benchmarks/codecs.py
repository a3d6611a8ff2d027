"""The codecs measured side by side, behind one small interface.

Each entry has ``prepare(msg)`` (done once, outside the timed call),
``encode(obj) -> frames`` and ``decode(frames) -> obj``. For the reference and
pickle codecs ``prepare`` is the identity. For SGLang 0.5.23 it converts the
reference message into SGLang's own classes once, so that only SGLang's
``msgpack_encode``/``msgpack_decode`` are timed, not the adapter's conversion.

``candidate`` is your implementation, measured in the same run beside the
others: set ``IPC_BENCH_CODEC`` to anything ``python -m conformance --codec``
accepts (a built-in name or ``MODULE:ATTR``). Without it, its benchmarks skip.
"""

from __future__ import annotations

import functools
import os
from typing import Any, Callable, List, NamedTuple, Optional

from reference_codec import PickleCodec, ReferenceCodec

__all__ = ["BenchCodec", "CODEC_NAMES", "BASELINE", "CANDIDATE_ENV", "get_codec", "sglang_available", "unavailable", "wire_bytes"]

#: Every codec of the benchmarks, in table column order. ``pickle`` is the baseline of the ratios.
CODEC_NAMES: List[str] = ["pickle", "pickle-oob", "reference-v1", "reference-v2", "sglang", "candidate"]
BASELINE = "pickle"
#: The implementation measured as ``candidate`` (a ``--codec`` spec).
CANDIDATE_ENV = "IPC_BENCH_CODEC"


class BenchCodec(NamedTuple):
    name: str
    prepare: Callable[[Any], Any]
    encode: Callable[[Any], List[Any]]
    decode: Callable[[List[Any]], Any]


def _identity(msg: Any) -> Any:
    return msg


def sglang_available() -> bool:
    from conformance.engines.sglang.codec import sglang_available as available

    return available()


def unavailable(name: str) -> Optional[str]:
    """Why codec ``name`` cannot be measured here (a skip reason), or None."""
    if name == "sglang" and not sglang_available():
        return "SGLang 0.5.23 is not installed (tox -e sglang, or the sglang venv)"
    if name == "candidate" and not os.environ.get(CANDIDATE_ENV):
        return f"no candidate implementation: set {CANDIDATE_ENV}=MODULE:ATTR to measure yours beside these"
    return None


@functools.lru_cache(maxsize=None)
def get_codec(name: str) -> BenchCodec:
    """The codec called ``name`` (``RuntimeError`` for SGLang when it is not installed)."""
    if name == "reference-v1":
        codec: Any = ReferenceCodec()
    elif name == "reference-v2":
        codec = ReferenceCodec(out_of_band_threshold=65536)
    elif name == "pickle":
        codec = PickleCodec()
    elif name == "pickle-oob":
        codec = PickleCodec(out_of_band=True)
    elif name == "sglang":
        from conformance.engines.sglang.codec import SGLangCodec

        adapter = SGLangCodec()
        io = adapter._io
        return BenchCodec(
            name,
            adapter.to_sglang,
            lambda obj: [io.msgpack_encode(obj)],
            lambda frames: io.msgpack_decode(frames[0]),
        )
    elif name == "candidate":
        from conformance.plugin import load_codec

        codec = load_codec(os.environ[CANDIDATE_ENV])
    else:
        raise ValueError(f"unknown benchmark codec {name!r}; choose from {CODEC_NAMES}")
    return BenchCodec(name, _identity, codec.encode, codec.decode)


def wire_bytes(frames: List[Any]) -> int:
    """Bytes on the wire: the sum of the frames' lengths (ZeroMQ adds a few bytes of framing per frame)."""
    return sum(memoryview(f).nbytes for f in frames)
