"""The SGLang installed here, at any release with msgpack IPC (0.5.15 on) or on a development build: its own classes, its own codec.

* **Messages**: the installed release's tagged IPC structs
  (:func:`.installed.message_types`, the ``io`` family), found when the engine
  loads, so a development branch's new message is tested with no edit here.
* **Frames**: tagged; ``decode(frames)``.
* **Strategies**: :mod:`.strategies` (SGLang's classes, SGLang's field
  meanings, its constructors' normalisation).
* **Codecs**: ``sglang`` (its own ``msgpack_encode``/``msgpack_decode``,
  :mod:`.codec`), ``reference`` (the reference codec over SGLang's classes, as
  the live check installs it in SGLang's processes) and ``pickle`` (what
  SGLang's sockets carry with ``SGLANG_USE_PICKLE_IPC`` on, its default).
* **Wire reference**: the reference codec over the same classes: SGLang's
  codec is wire compatible where its buffer ext codes are the reference's.
* **Golden vectors**: the reference schema's (``conformance/vectors``),
  decoded by the codec under test at any release; their expected values are
  checked where the installed classes are the reference's (:func:`_vector_value`).
* **Releases**: :mod:`.releases`, their schema snapshots in ``schemas/``; the
  gate compares the installed classes with the newest earlier snapshot.
* **The reference schema's distance**: what ``reference_codec.schema`` differs
  in from the installed classes, reported beside the verdict (:func:`_report`).

Nothing here imports SGLang until the engine is set up.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Mapping

from conformance.engines.profile import Engine
from conformance.vectors.format import VECTORS_DIR

from .families import FAMILIES
from .releases import RELEASES

__all__ = ["ENGINE", "CODECS"]


def _sglang():
    from .codec import SGLangCodec

    return SGLangCodec()


def _reference_over_sglang(out_of_band: bool = False):
    from reference_codec import ReferenceCodec

    from .installed import message_types

    codec = ReferenceCodec(message_types=list(message_types().values()), out_of_band_threshold=256 if out_of_band else None)
    codec.name = "reference-v2" if out_of_band else "reference"
    return codec


def _pickle():
    from reference_codec import PickleCodec

    return PickleCodec()


#: Built-in codecs of this engine, by ``--codec`` name.
CODECS: Dict[str, Callable[[], Any]] = {"sglang": _sglang, "reference": _reference_over_sglang, "pickle": _pickle}


def _message_types() -> Mapping[str, type]:
    from .installed import message_types

    return message_types()


def _message_strategy(cls: type):
    from .strategies import message_strategy

    return message_strategy(cls)


def _setup() -> None:
    from .installed import io_struct

    io_struct()


def _samples(seed: int):
    """The reference schema's realistic batches, built with the installed SGLang's classes; none where those classes differ from the reference's."""
    from reference_codec.samples import batch_token_id_output

    from .adapter import ReferenceAdapter, reference_mismatch

    if reference_mismatch():
        return []
    adapter = ReferenceAdapter()
    return [(f"BatchTokenIDOutput-{batch}", adapter.to_sglang(batch_token_id_output(batch, seed=seed))) for batch in (1, 8)]


def _vector_value(value: Any) -> Any:
    """A golden vector's expected value (reference classes) rebuilt with the installed SGLang's, where those are the reference's."""
    from conformance.engines.profile import VectorValueUnavailable

    from .adapter import ReferenceAdapter, reference_mismatch

    mismatch = reference_mismatch()
    if mismatch:
        raise VectorValueUnavailable(mismatch)
    return ReferenceAdapter().to_sglang(value)


def _live_frontend():
    from .live_frontend import SGLangFrontend

    return SGLangFrontend()


def _report() -> List[str]:
    """The reference schema's distance from the installed classes: every change that breaks positional decoding, documented or not."""
    from conformance.schema_diff import diff_schemas
    from reference_codec.schema import MESSAGE_TYPES, SCHEMA_VERSION

    from .installed import installed_release, message_types
    from .sync import documented

    changes = [c for c in diff_schemas(message_types(), MESSAGE_TYPES) if c.breaks("backward")]
    undocumented = [c for c in changes if not documented(c)]
    head = (
        f"the reference schema (SGLang {SCHEMA_VERSION}) against the installed SGLang {installed_release() or '?'}: "
        f"{len(changes)} difference(s) that positional decoding does not follow, {len(undocumented)} of them not documented"
        + (" (read as changes from the installed classes to the reference's)" if changes else "")
        + (" (the reference is not a precondition: the gate tests SGLang's own classes)" if changes else "")
    )
    lines = [head]
    for change in changes[:12]:
        lines.append(f"  {change}" + ("  [documented]" if documented(change) else ""))
    if len(changes) > 12:
        lines.append(f"  ... and {len(changes) - 12} more: python -m conformance.engines.sglang.sync --check")
    return lines


ENGINE = Engine(
    name="sglang",
    description="the installed SGLang's IPC messages (its own classes, any release or development build), tagged frames",
    message_types=_message_types,
    message_strategy=_message_strategy,
    codecs=CODECS,
    pickle_baseline=_pickle,
    typed_frames=False,
    wire_reference=_reference_over_sglang,
    setup=_setup,
    vectors_dir=VECTORS_DIR,
    vector_value=_vector_value,
    samples=_samples,
    families=FAMILIES,
    snapshots_dir=os.path.join(os.path.dirname(os.path.abspath(__file__)), "schemas"),
    package="sglang",
    releases=RELEASES,
    live_frontend=_live_frontend,
    report=_report,
)
