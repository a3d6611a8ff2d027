"""SGLang 0.5.23's own codec as a benchmark codec: what the engine's ``bench_codecs`` name ``sglang``.

``prepare`` converts the reference message into SGLang's own classes once,
outside the timed call, so that only SGLang's ``msgpack_encode`` and
``msgpack_decode`` are timed, not the adapter's conversion (which
:class:`~conformance.engines.sglang.codec.SGLangCodec` does on every call).

Importing this module imports neither SGLang nor torch: the engine names its
benchmark codecs and their labels without loading them.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

__all__ = ["BENCH_CODECS", "BENCH_LABELS", "BENCH_TARGET", "bench_codec"]

#: The release the label names; ``conformance/tests`` checks it is the adapter's ``SGLANG_VERSION``.
RELEASE = "0.5.23"


def bench_codec() -> Any:
    """SGLang's codec as a :class:`conformance.benchmarks.codecs.BenchCodec`, timed without the adapter's conversion.

    Raises ``ImportError`` (the benchmarks' skip reason) when SGLang is not
    importable, and the adapter's ``RuntimeError`` when it is importable but
    unusable (pickle IPC on, another release).
    """
    from conformance.benchmarks.codecs import BenchCodec

    from .codec import SGLangCodec, sglang_available

    if not sglang_available():
        raise ImportError(f"SGLang {RELEASE} is not installed (tox -e sglang, or the sglang venv)")
    adapter = SGLangCodec()
    io = adapter._io
    return BenchCodec(
        "sglang",
        adapter.to_sglang,
        lambda obj: [io.msgpack_encode(obj)],
        lambda frames: io.msgpack_decode(frames[0]),
    )


#: Benchmark codecs of the engine, by name (``Engine.bench_codecs``).
BENCH_CODECS: Dict[str, Callable[[], Any]] = {"sglang": bench_codec}
#: Their column headers and names in the target lines (``Engine.bench_labels``).
BENCH_LABELS: Dict[str, str] = {"sglang": f"SGLang {RELEASE}"}
#: The codec the reference codec's speed targets compare with (``Engine.bench_target``).
BENCH_TARGET = "sglang"
