"""The reference schema (``reference_codec.schema``): the default engine, the wire every other implementation is checked against.

Frames carry their type (the reference wire's tag). The built-in codecs are
the reference codec (wire v1 and v2) and the pickle baseline (in-band and
out-of-band). The messages are the reference schema's, which mirror SGLang's
at the release in :data:`reference_codec.schema.SCHEMA_VERSION`: what the
golden vectors, the testee protocol (``conformance/PROTOCOL.md``), the fuzz
findings and the Rust and Node consumers speak. The installed SGLang, at any
release, is the ``sglang`` engine; the benchmarks time its codec on this
engine's corpus (:attr:`Engine.bench_codecs`, converted once outside the timed
call).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping

from conformance.engines.profile import Engine
from conformance.engines.sglang.bench import BENCH_CODECS, BENCH_LABELS, BENCH_TARGET
from conformance.vectors.format import VECTORS_DIR

__all__ = ["ENGINE", "CODECS"]


def _reference():
    from reference_codec import ReferenceCodec

    return ReferenceCodec()


def _reference_v2():
    from reference_codec import ReferenceCodec

    codec = ReferenceCodec(out_of_band_threshold=256)
    codec.name = "reference-v2"
    return codec


def _pickle():
    from reference_codec import PickleCodec

    return PickleCodec()


def _pickle_oob():
    from reference_codec import PickleCodec

    return PickleCodec(out_of_band=True)


#: Built-in codecs of this engine, by ``--codec`` name.
CODECS: Dict[str, Callable[[], Any]] = {
    "reference": _reference,
    "reference-v2": _reference_v2,
    "pickle": _pickle,
    "pickle-oob": _pickle_oob,
}


def _message_types() -> Mapping[str, type]:
    from reference_codec.schema import MESSAGE_TYPES

    return MESSAGE_TYPES


def _message_strategy(cls: type):
    import hypothesis.strategies as st

    return st.from_type(cls)  # registered by _setup


def _setup() -> None:
    from strategies import register_type_strategies

    register_type_strategies()


def _samples(seed: int):
    from reference_codec.samples import batch_token_id_output

    return [(f"BatchTokenIDOutput-{batch}", batch_token_id_output(batch, seed=seed)) for batch in (1, 8)]


def _wire_reference(out_of_band: bool):
    return _reference_v2() if out_of_band else _reference()


ENGINE = Engine(
    name="reference",
    description="the reference schema (reference_codec.schema, mirroring an SGLang release's IPC messages), tagged frames",
    message_types=_message_types,
    message_strategy=_message_strategy,
    codecs=CODECS,
    pickle_baseline=_pickle,
    typed_frames=False,
    wire_reference=_wire_reference,
    vectors_dir=VECTORS_DIR,
    samples=_samples,
    setup=_setup,
    reference_schema=True,
    bench_codecs=BENCH_CODECS,
    bench_target=BENCH_TARGET,
    bench_labels=BENCH_LABELS,
)
