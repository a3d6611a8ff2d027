"""The codecs measured side by side, behind one small interface.

Each entry has ``prepare(msg)`` (done once, outside the timed call),
``encode(obj) -> frames`` and ``decode(frames) -> obj``. For the reference and
pickle codecs ``prepare`` is the identity.

The corpus is the reference schema's, the default engine's
(:data:`conformance.engines.DEFAULT_ENGINE`), so beside the reference and
pickle codecs the benchmarks measure that engine's ``bench_codecs``: each
one's ``prepare`` may convert the reference message into the engine's own
classes once, so that only the engine's codec is timed, not an adapter's
conversion. An engine codec whose factory raises ``ImportError`` (its package
is not installed) is skipped with that error's message.

``candidate`` is your implementation, measured in the same run beside the
others: set ``IPC_BENCH_CODEC`` to anything ``python -m conformance --codec``
accepts (a built-in name or ``MODULE:ATTR``). Without it, its benchmarks skip.

``NAME@TAG`` is codec ``NAME`` measured under another name: ``sglang@a,sglang``
times one codec against itself (an A/A run), which shows what a tool's
verdicts say when there is nothing to find. ``NAME+TAG`` is a second instance
of ``NAME``, built on its own by the same factory (its own objects, caches and
memory): the null of an A/B run, whose two codecs are two instances too. Cold,
two instances of the same code can differ where one instance timed twice
cannot.
"""

from __future__ import annotations

import functools
import os
from typing import Any, Callable, List, NamedTuple, Optional

from conformance.engines import Engine, load_engine
from reference_codec import PickleCodec, ReferenceCodec

__all__ = [
    "BenchCodec",
    "CODEC_NAMES",
    "FIXED_CODECS",
    "BASELINE",
    "ALIAS_SEPARATOR",
    "INSTANCE_SEPARATOR",
    "CANDIDATE",
    "CANDIDATE_ENV",
    "bench_engine",
    "base_name",
    "bench_target",
    "codec_names",
    "get_codec",
    "label",
    "unavailable",
    "wire_bytes",
]

#: The codecs measured whatever the engine, in table column order. ``pickle`` is the baseline of the ratios.
FIXED_CODECS = ("pickle", "pickle-oob", "reference-v1", "reference-v2")
BASELINE = "pickle"
#: The implementation under test, measured last.
CANDIDATE = "candidate"
#: The implementation measured as ``candidate`` (a ``--codec`` spec).
CANDIDATE_ENV = "IPC_BENCH_CODEC"
#: ``NAME@TAG``: codec ``NAME`` under another name.
ALIAS_SEPARATOR = "@"
#: ``NAME+TAG``: another instance of codec ``NAME``.
INSTANCE_SEPARATOR = "+"


class BenchCodec(NamedTuple):
    name: str
    prepare: Callable[[Any], Any]
    encode: Callable[[Any], List[Any]]
    decode: Callable[[List[Any]], Any]


def _identity(msg: Any) -> Any:
    return msg


def bench_engine() -> Engine:
    """The engine whose ``bench_codecs`` are measured: the default one, whose schema the corpus is."""
    return load_engine()


def codec_names(engine: Optional[Engine] = None) -> List[str]:
    """Every codec of the benchmarks, in table column order: the fixed ones, ``engine``'s, then ``candidate``.

    ``engine`` defaults to :func:`bench_engine`. ``ValueError`` when the
    engine names one of its codecs like a fixed one or ``candidate``.
    """
    engine = engine or bench_engine()
    clash = sorted(set(engine.bench_codecs) & {*FIXED_CODECS, CANDIDATE})
    if clash:
        raise ValueError(f"engine {engine.name}: bench codecs {clash} take the names of the benchmarks' own codecs")
    return [*FIXED_CODECS, *engine.bench_codecs, CANDIDATE]


def bench_target(engine: Optional[Engine] = None) -> Optional[str]:
    """The engine codec that reference wire v1's speed targets compare with (``Engine.bench_target``), or None."""
    return (engine or bench_engine()).bench_target


def label(name: str, engine: Optional[Engine] = None) -> str:
    """What the tables and messages call codec ``name``: the engine's label for one of its codecs, else ``name``."""
    return (engine or bench_engine()).bench_labels.get(name, name)


#: :func:`codec_names` of the default engine: the benchmarks' parameters.
CODEC_NAMES: List[str] = codec_names()


def base_name(name: str) -> str:
    """The codec that ``name`` measures: ``NAME`` for ``NAME@TAG`` and ``NAME+TAG``, else ``name``; ``ValueError`` for an empty ``NAME`` or ``TAG``."""
    for separator in (ALIAS_SEPARATOR, INSTANCE_SEPARATOR):
        base, sep, tag = name.partition(separator)
        if sep:
            if not (base and tag):
                raise ValueError(f"codec alias {name!r}: write NAME{separator}TAG, both non-empty")
            return base
    return name


def unavailable(name: str) -> Optional[str]:
    """Why codec ``name`` (or ``NAME@TAG``, ``NAME+TAG``) cannot be measured here (a skip reason), or None.

    An engine codec is available when its factory returns; its ``ImportError``
    is the reason. Any other error of the factory propagates. The codec asked
    for is the one built (``NAME+TAG``'s own instance, not ``NAME``'s), so
    asking builds no other instance first.
    """
    base = base_name(name)
    if base == CANDIDATE and not os.environ.get(CANDIDATE_ENV):
        return f"no candidate implementation: set {CANDIDATE_ENV}=MODULE:ATTR to measure yours beside these"
    if base in bench_engine().bench_codecs:
        try:
            get_codec(name)
        except ImportError as exc:
            return str(exc) or f"{label(base)} is not installed"
    return None


@functools.lru_cache(maxsize=None)
def get_codec(name: str) -> BenchCodec:
    """The codec called ``name``; ``ValueError`` for an unknown name.

    ``NAME@TAG`` is the same codec object as ``NAME`` (its calls, caches and
    state), named ``NAME@TAG``; ``NAME+TAG`` is another one, built by
    ``NAME``'s factory when first asked for (one per ``TAG``). An engine
    codec's factory's errors propagate (``ImportError`` when its package is
    not installed: see :func:`unavailable`).
    """
    base = base_name(name)
    if base == name:
        return _build(name)
    if name[len(base)] == ALIAS_SEPARATOR:  # the separator right after NAME says which kind of alias
        return get_codec(base)._replace(name=name)
    return _build(base)._replace(name=name)


def _build(name: str) -> BenchCodec:
    """A new instance of codec ``name`` (a base name); ``ValueError`` for an unknown one."""
    if name == "reference-v1":
        codec: Any = ReferenceCodec()
    elif name == "reference-v2":
        codec = ReferenceCodec(out_of_band_threshold=65536)
    elif name == "pickle":
        codec = PickleCodec()
    elif name == "pickle-oob":
        codec = PickleCodec(out_of_band=True)
    elif name == CANDIDATE:
        from conformance.plugin import load_codec

        codec = load_codec(os.environ[CANDIDATE_ENV])
    elif name in bench_engine().bench_codecs:
        made = bench_engine().bench_codecs[name]()
        return BenchCodec(name, made.prepare, made.encode, made.decode)
    else:
        raise ValueError(f"unknown benchmark codec {name!r}; choose from {codec_names()}")
    return BenchCodec(name, _identity, codec.encode, codec.decode)


def wire_bytes(frames: List[Any]) -> int:
    """Bytes on the wire: the sum of the frames' lengths (ZeroMQ adds a few bytes of framing per frame)."""
    return sum(memoryview(f).nbytes for f in frames)
