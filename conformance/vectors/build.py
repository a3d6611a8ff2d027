"""The machinery that writes the golden vector files from the cases, and checks them.

The files are generated, never edited by hand::

    python -m conformance.vectors generate   # (re)write v1/ and v2/ from CASES
    python -m conformance.vectors check      # exit 1 if the files are stale

``CASES`` (:mod:`.registry`) is the list they come from, in registration
order: the modules of :mod:`conformance.vectors.cases` register into it with
``@case``; importing this module imports them all, so ``CASES`` is complete. ``y_`` cases build a message (the reference
codec encodes it) or raw frames with the value they stand for; ``n_`` and
``i_`` cases build hostile or unusual frames by hand. Generation verifies
every vector against the reference codec before writing anything, so a
checked-in vector always states what the reference does. Vectors are frozen
per wire version: a change that alters an existing file's frames or expected
value is a wire change (or a schema change) and must be deliberate.

The file format itself, and reading the files, is :mod:`conformance.vectors.format`.
"""

from __future__ import annotations

import difflib
import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import msgspec

from reference_codec import DecodeError, ReferenceCodec

from ..equivalence import compare
from ..neutral import from_neutral, to_neutral
from . import cases as _registered  # noqa: F401 - importing the cases registers them in CASES
from .format import FIELDS, KINDS, VECTORS_DIR, WIRE_VERSIONS, vector_files
from .registry import CASES, Case, Raw, reference_for

__all__ = [
    "VectorError",
    "Raw",
    "Case",
    "CASES",
    "reference_for",
    "build_vector",
    "render",
    "expected_files",
    "generate",
    "check",
]

_WIDTH = 100


class VectorError(Exception):
    """A case that does not build, or a vector the reference codec does not agree with."""


# --- building, rendering, checking -----------------------------------------------


def _as_bytes(frames: Any) -> List[bytes]:
    if not isinstance(frames, (list, tuple)):
        raise VectorError(f"frames must be a list, got {type(frames).__name__}")
    return [bytes(memoryview(f).cast("B")) for f in frames]


def _built(case: Case) -> Tuple[List[bytes], Any]:
    result = case.build()
    if isinstance(result, msgspec.Struct):
        frames = reference_for(case.wire).encode(result)
        return _as_bytes(frames), result
    if isinstance(result, Raw):
        return _as_bytes(result.frames), result.expected
    return _as_bytes(result), None


def _decode(codec: ReferenceCodec, frames: List[bytes]) -> Tuple[Any, Optional[DecodeError]]:
    try:
        return codec.decode(frames), None
    except DecodeError as exc:
        return None, exc


def build_vector(case: Case) -> Dict[str, Any]:
    """The vector file content of ``case``, verified against the reference codec; :class:`VectorError` otherwise."""
    where = f"{case.file}"
    if case.kind not in KINDS or case.name[1:2] != "_":
        raise VectorError(f"{where}: a vector name starts with y_, n_ or i_")
    if case.wire not in WIRE_VERSIONS:
        raise VectorError(f"{where}: wire must be one of {WIRE_VERSIONS}")
    if (case.reject_reason is not None) != (case.kind == "n"):
        raise VectorError(f"{where}: n_ vectors, and only they, have a reject_reason")
    try:
        frames, value = _built(case)
    except VectorError:
        raise
    except Exception as exc:
        raise VectorError(f"{where}: building the case failed: {type(exc).__name__}: {exc}") from exc
    if case.wire == "v1" and len(frames) > 1:
        raise VectorError(f"{where}: a v1 vector has at most one frame, got {len(frames)}")
    if case.kind == "y" and value is None:
        raise VectorError(f"{where}: a y_ vector needs the value it decodes to")
    if case.kind == "n" and value is not None:
        raise VectorError(f"{where}: an n_ vector has no expected value")
    expected = to_neutral(value) if value is not None else None
    _verify(case, frames, value, expected)
    return {
        "name": case.name,
        "description": case.description,
        "wire": case.wire,
        "frames": [f.hex() for f in frames],
        "expected": expected,
        "reject_reason": case.reject_reason,
    }


def _verify(case: Case, frames: List[bytes], value: Any, expected: Any) -> None:
    decoded, error = _decode(reference_for(case.wire), frames)
    where = case.file
    if case.kind == "n":
        if error is None:
            raise VectorError(f"{where}: the reference decodes this n_ vector (to {type(decoded).__name__})")
        assert case.reject_reason is not None  # build_vector refuses an n_ case without one
        if case.reject_reason not in error.reason:
            raise VectorError(f"{where}: reject_reason {case.reject_reason!r} is not in the reference's reason {error.reason!r}")
        return
    if case.kind == "y" and error is not None:
        raise VectorError(f"{where}: the reference refuses this y_ vector: {error}")
    if error is None and value is not None:
        rebuilt = from_neutral(json.loads(json.dumps(expected)))
        for what, reference_value in (("the case's value", value), ("from_neutral(expected)", rebuilt)):
            diff = compare(reference_value, decoded)
            if diff is not None:
                raise VectorError(f"{where}: the reference decodes differently from {what}: {diff}")


def _format(value: Any, indent: int, prefix: int = 0) -> str:
    """JSON text of ``value``: on one line when it fits in ``_WIDTH`` columns, else one item per line."""
    compact = json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(", ", ": "))
    if indent + prefix + len(compact) <= _WIDTH or not isinstance(value, (list, dict)) or not value:
        return compact
    inner = " " * (indent + 2)
    if isinstance(value, list):
        items = [inner + _format(v, indent + 2) for v in value]
    else:
        items = []
        for k, v in value.items():
            key = json.dumps(k, ensure_ascii=True) + ": "
            items.append(inner + key + _format(v, indent + 2, len(key)))
    opening, closing = ("[", "]") if isinstance(value, list) else ("{", "}")
    return opening + "\n" + ",\n".join(items) + "\n" + " " * indent + closing


def render(vector: Dict[str, Any]) -> str:
    """The exact text of a vector file: ASCII JSON, stable layout, one trailing newline."""
    return _format({key: vector[key] for key in FIELDS}, 0, _WIDTH) + "\n"


def expected_files(cases: Optional[Sequence[Case]] = None) -> Dict[str, str]:
    """``{"v1/y_x.json": text}`` for every case: what ``generate`` writes."""
    cases = CASES if cases is None else cases
    seen: Dict[str, Case] = {}
    for case in cases:
        if case.name in seen:
            raise VectorError(f"two cases named {case.name!r} ({seen[case.name].wire} and {case.wire})")
        seen[case.name] = case
    return {case.file: render(build_vector(case)) for case in cases}


def generate(directory: str = VECTORS_DIR) -> Tuple[List[str], List[str]]:
    """Write every vector under ``directory`` and delete stale ones; returns (written, removed) relative paths."""
    files = expected_files()
    current = vector_files(directory)
    written, removed = [], []
    for rel, text in sorted(files.items()):
        if current.get(rel) != text:
            path = os.path.join(directory, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="ascii", newline="\n") as fh:
                fh.write(text)
            written.append(rel)
    for rel in sorted(set(current) - set(files)):
        os.remove(os.path.join(directory, rel))
        removed.append(rel)
    return written, removed


def check(directory: str = VECTORS_DIR) -> List[str]:
    """Problems that make the files under ``directory`` differ from what ``generate`` writes (empty: up to date)."""
    files = expected_files()
    current = vector_files(directory)
    problems = []
    for rel in sorted(set(files) | set(current)):
        if rel not in current:
            problems.append(f"{rel}: missing")
        elif rel not in files:
            problems.append(f"{rel}: no case generates it (stale file)")
        elif current[rel] != files[rel]:
            old, new = current[rel].splitlines(), files[rel].splitlines()
            diff = [line for line in difflib.unified_diff(old, new, lineterm="", n=0) if line[:1] in "+-" and line[:3] not in ("+++", "---")]
            first = diff[0] if diff else "(whitespace or line endings)"
            problems.append(f"{rel}: differs ({len(diff)} changed lines; first: {first[:120]})")
    return problems

