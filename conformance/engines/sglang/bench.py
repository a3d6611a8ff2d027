"""SGLang 0.5.23's own codec, and the reference codec as it runs inside SGLang, as benchmark codecs.

``sglang`` is SGLang's ``msgpack_encode``/``msgpack_decode``;
``reference-in-sglang`` is what the reference IPC plug-in installs in their
place in every SGLang process (:func:`~.reference_ipc.codec_functions`: the
reference codec over SGLang's own classes, one frame per message). The pair is
the in-process form of the live check's ``msgpack`` and ``reference`` modes.

``prepare`` converts the reference message into SGLang's own classes once,
outside the timed call, so that only SGLang's ``msgpack_encode`` and
``msgpack_decode`` are timed, not the adapter's conversion (which
:class:`~conformance.engines.sglang.adapter.ReferenceAdapter` does on every call).

Importing this module imports neither SGLang nor torch: the engine names its
benchmark codecs and their labels without loading them.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

__all__ = ["BENCH_CODECS", "BENCH_LABELS", "BENCH_TARGET", "bench_codec", "reference_in_sglang_codec"]

#: The release the labels name: the one the reference schema mirrors, whose corpus the benchmarks run (``conformance/tests`` checks it is ``SCHEMA_VERSION``).
RELEASE = "0.5.23"


def bench_codec() -> Any:
    """SGLang's codec as a :class:`conformance.benchmarks.codecs.BenchCodec`, timed without the adapter's conversion.

    Raises ``ImportError`` (the benchmarks' skip reason) when SGLang is not
    importable, and the adapter's ``RuntimeError`` when it is importable but
    unusable (pickle IPC on, another release).
    """
    from conformance.benchmarks.codecs import BenchCodec

    adapter = _adapter()
    io = adapter._io
    return BenchCodec(
        "sglang",
        adapter.to_sglang,
        lambda obj: [io.msgpack_encode(obj)],
        lambda frames: io.msgpack_decode(frames[0]),
    )


def reference_in_sglang_codec() -> Any:
    """The reference codec as the plug-in runs it inside SGLang, on SGLang's classes; errors as :func:`bench_codec`'s."""
    from conformance.benchmarks.codecs import BenchCodec

    from .reference_ipc import codec_functions

    adapter = _adapter()
    encode, decode = codec_functions()
    return BenchCodec("reference-in-sglang", adapter.to_sglang, lambda obj: [encode(obj)], lambda frames: decode(frames[0]))


def _adapter() -> Any:
    """SGLang's adapter; ``ImportError`` (the benchmarks' skip reason) when SGLang is not importable."""
    from .adapter import ReferenceAdapter, sglang_available

    if not sglang_available():
        raise ImportError(f"SGLang {RELEASE} is not installed (tox -e sglang, or the sglang venv)")
    return ReferenceAdapter()


#: Benchmark codecs of the engine, by name (``Engine.bench_codecs``).
BENCH_CODECS: Dict[str, Callable[[], Any]] = {"sglang": bench_codec, "reference-in-sglang": reference_in_sglang_codec}
#: Their column headers and names in the target lines (``Engine.bench_labels``).
BENCH_LABELS: Dict[str, str] = {"sglang": f"SGLang {RELEASE}", "reference-in-sglang": f"reference inside SGLang {RELEASE}"}
#: The codec the reference codec's speed targets compare with (``Engine.bench_target``).
BENCH_TARGET = "sglang"
