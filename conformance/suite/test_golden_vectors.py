"""Golden vectors: fixed wire bytes decode, are refused, or are tolerated exactly as the files say.

Every file under ``conformance/vectors/v1`` and ``v2`` is one test (its id is
the file name). ``y_`` frames must decode to the file's expected value (in the
neutral form of :mod:`conformance.neutral`), compared with the equivalence
contract; ``n_`` frames must raise the codec's declared decode error;
``i_`` frames may do either, but nothing else (and, when the file gives an
expected value, a successful decode must equal it). The vectors are wire
bytes, so codecs that do not declare wire compatibility skip them, and v2
vectors need a codec that declares out-of-band support. They are the
engine's (``Engine.vectors_dir``); an engine without vectors has no such test.
"""

from __future__ import annotations

from typing import Any, Tuple, Type, Union

import pytest

from conformance.engines import VectorValueUnavailable
from conformance.equivalence import differences
from conformance.findings import Finding
from conformance.neutral import from_neutral
from conformance.properties import ENGINE, MAX_DIFFERENCES, PropertyFailure, summarise
from conformance.vectors import GoldenVector, load_vectors

VECTORS = load_vectors(ENGINE.vectors_dir) if ENGINE.vectors_dir else []


def _error_names(errors: Union[Type[BaseException], Tuple[Type[BaseException], ...]]) -> str:
    if isinstance(errors, tuple):
        return " or ".join(e.__qualname__ for e in errors)
    return errors.__qualname__


def _fail(codec, vector: GoldenVector, what: str, found=(), finding=None) -> PropertyFailure:
    return PropertyFailure(
        codec=codec.name, what=f"{vector.file}: {what}", differences=found, details=[f"vector: {vector.description}"], finding=finding
    )


def _check_value(codec, vector: GoldenVector, decoded: Any) -> None:
    try:
        expected = ENGINE.vector_value(from_neutral(vector.expected))
    except VectorValueUnavailable as exc:
        pytest.skip(f"{vector.file} decoded; its expected value is not checked here: {exc}")
    found = differences(expected, decoded, limit=MAX_DIFFERENCES)
    if found:
        raise _fail(codec, vector, "decodes differently from the vector's expected value", found)


def _rejection_required(codec, vector: GoldenVector, decoded: Any) -> None:
    """An ``n_`` vector decoded: that is this property's failure."""
    raise _fail(
        codec,
        vector,
        f"must be rejected with {_error_names(codec.caps.decode_error)}, but decoded to {summarise(decoded)}",
        finding=Finding.of("accepts", type(decoded).__qualname__, vector.description),
    )


@pytest.mark.parametrize("vector", VECTORS, ids=[v.filename for v in VECTORS])
def test_golden_vector(codec, vector: GoldenVector):
    if not codec.caps.wire_compatible:
        pytest.skip(f"{codec.name} does not declare wire compatibility; the vectors are wire bytes")
    if vector.wire == "v2" and not codec.caps.out_of_band:
        pytest.skip(f"{codec.name} does not declare out-of-band (wire v2) support")
    decode_error = codec.caps.decode_error
    frames = list(vector.frames)
    try:
        decoded = codec.decode(frames)
    except decode_error as exc:
        if vector.kind == "y":
            raise _fail(
                codec, vector, f"must decode, but raised {type(exc).__qualname__}: {exc}", finding=Finding.of("refuses", type(exc).__qualname__, str(exc))
            ) from None
        return  # n_: the required outcome; i_: an allowed one
    except Exception as exc:
        raise _fail(
            codec,
            vector,
            f"raised {type(exc).__qualname__}: {exc}, which is not the declared decode error ({_error_names(decode_error)})",
            finding=Finding.of("raises", type(exc).__qualname__, str(exc)),
        ) from None  # a RecursionError traceback is thousands of frames; the message says enough
    if vector.kind == "n":
        _rejection_required(codec, vector, decoded)
        return
    if vector.expected is not None:
        _check_value(codec, vector, decoded)
