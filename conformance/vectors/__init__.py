"""Language-neutral golden vectors for wire v1 and v2, in the manner of JSONTestSuite.

* :mod:`.format`: what a vector file is (``v1/``/``v2/``, ``y_``/``n_``/``i_``, its keys) and
  how to read one (:func:`load_vectors`, :class:`GoldenVector`);
* :mod:`.registry`: the case registry ``CASES`` and the helpers cases build frames with;
* :mod:`.cases`: the cases, one module per area;
* :mod:`.build`: ``generate``/``check`` behind ``python -m conformance.vectors``.

Any engine's own vectors (``Engine.value_vectors``), compared as the engine-neutral
values of ``conformance/PROTOCOL.md`` §9:

* :mod:`.engine_format`: their files (a folder per message family) and reading them;
* :mod:`.plain_json`: plain values (bytes, NaN, non-str keys) in JSON and back;
* :mod:`.engine_build`: ``ValueCase``, generating and checking them with the engine's codec;
* :mod:`.engine_testee`: ``python -m conformance.vectors test``, any §9 testee against them.

This package re-exports the names of both. Those of :mod:`.format` are imported with the
package; those of :mod:`.build` on first use, because building imports the reference
codec's machinery and the fuzz findings, which reading the files does not need.
"""

from __future__ import annotations

from .format import (
    DESCRIPTION_LENGTH,
    FIELDS,
    KINDS,
    V2_THRESHOLD,
    VECTORS_DIR,
    WIRE_VERSIONS,
    GoldenVector,
    load_vectors,
)

_FROM_BUILD = ("Case", "Raw", "CASES", "VectorError", "reference_for", "build_vector", "render", "expected_files", "generate", "check")

__all__ = [
    "VECTORS_DIR",
    "WIRE_VERSIONS",
    "KINDS",
    "FIELDS",
    "V2_THRESHOLD",
    "DESCRIPTION_LENGTH",
    "GoldenVector",
    "load_vectors",
    *_FROM_BUILD,
]


def __getattr__(name: str):
    if name in _FROM_BUILD:
        from . import build

        return getattr(build, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
