"""Shared machinery of the property tests: the message parameter, checks and their failure messages.

Every property failure says three things: which codec, the first differing
path (or the error), and a readable summary of the shrunk message. Hypothesis
prints the full shrunk example above it.
"""

from __future__ import annotations

import reprlib
import warnings
from typing import Any, Iterable, List

import hypothesis
import hypothesis.strategies as st
import pytest

from reference_codec.schema import MESSAGE_TYPES

from .equivalence import compare

__all__ = [
    "MESSAGE_TAGS",
    "each_message_type",
    "message_strategy",
    "summarise",
    "check_equivalent",
    "frames_bytes",
    "PropertyFailure",
]

MESSAGE_TAGS: List[str] = sorted(MESSAGE_TYPES)

#: ``@each_message_type`` parametrizes a test by wire tag, so each message type is its own test id.
each_message_type = pytest.mark.parametrize("tag", MESSAGE_TAGS)


class PropertyFailure(AssertionError):
    """A property does not hold; the message names the codec and the first differing path."""


def message_strategy(tag: str, codec: Any = None) -> st.SearchStrategy:
    """Messages of type ``tag``; adapted to ``codec``'s declared ``unsupported_dtypes`` when given."""
    import strategies  # noqa: F401 - registers st.from_type for the schema and loads the profile

    base = st.from_type(MESSAGE_TYPES[tag])
    caps = getattr(codec, "caps", None)
    unsupported = getattr(caps, "unsupported_dtypes", ())
    native_only = getattr(caps, "native_byte_order_only", False)
    if not unsupported and not native_only:
        return base
    return base.map(lambda msg: without_dtypes(msg, unsupported, native_byte_order=native_only))


def without_dtypes(msg: Any, names, *, native_byte_order: bool = False) -> Any:
    """``msg`` adapted to a codec's declared gaps: tensors of a dtype in ``names`` cast to float32,
    and, with ``native_byte_order``, non-native ndarrays converted to native byte order (same values)."""
    import msgspec
    import numpy as np
    import torch

    from reference_codec.dtypes import TORCH_DTYPES

    bad = {TORCH_DTYPES[n] for n in names if n in TORCH_DTYPES}

    def walk(value):
        if isinstance(value, torch.Tensor):
            if value.dtype in bad:
                hypothesis.event(f"tensor dtype {value.dtype} cast to float32: the codec declares it unsupported")
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # complex -> float32 drops the imaginary part, knowingly
                    return value.detach().to(torch.float32).requires_grad_(value.requires_grad)
            return value
        if native_byte_order and isinstance(value, np.ndarray) and _non_native(value.dtype):
            hypothesis.event("ndarray converted to native byte order: the codec declares it loses byte order")
            return value.astype(value.dtype.newbyteorder("="))
        if isinstance(value, msgspec.Struct):
            changes = {f: walk(getattr(value, f)) for f in value.__struct_fields__}
            return msgspec.structs.replace(value, **changes)
        if type(value) in (list, tuple):
            return type(value)(walk(v) for v in value)
        if type(value) is dict:
            return {k: walk(v) for k, v in value.items()}
        return value

    return walk(msg)


def has_non_native_ndarray(msg: Any) -> bool:
    """Whether ``msg`` holds an ndarray (anywhere, at any depth) whose dtype is not in native byte order."""
    import sys

    import numpy as np

    from reference_codec.paths import locate

    found = locate(msg, lambda v: isinstance(v, np.ndarray) and _non_native(v.dtype), limit=sys.maxsize)
    return found is not None


def _non_native(dtype) -> bool:
    if dtype.fields:
        return any(_non_native(dtype.fields[name][0]) for name in dtype.names)
    if dtype.subdtype is not None:
        return _non_native(dtype.subdtype[0])
    return not dtype.isnative


_short = reprlib.Repr()
_short.maxstring = 60
_short.maxother = 80
_short.maxlist = 4
_short.maxdict = 4
_short.maxlevel = 3


def summarise(msg: Any) -> str:
    """A one-screen description of a message: its tag and its non-default fields, shortened."""
    fields = getattr(msg, "__struct_fields__", None)
    if fields is None:
        return _short.repr(msg)
    defaults = getattr(msg, "__struct_defaults__", ())
    required = len(fields) - len(defaults)
    parts = []
    for i, name in enumerate(fields):
        value = getattr(msg, name)
        if i >= required:
            default = defaults[i - required]
            if value is default or (type(value) is type(default) and _safe_eq(value, default)):
                continue
        parts.append(f"{name}={_short.repr(value)}")
    return f"{type(msg).__name__}({', '.join(parts)})"


def _safe_eq(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def check_equivalent(expected: Any, actual: Any, *, codec: str, what: str, msg: Any) -> None:
    """Raise :class:`PropertyFailure` unless ``actual`` is equivalent to ``expected``."""
    diff = compare(expected, actual)
    if diff is not None:
        raise PropertyFailure(f"[{codec}] {what}: {diff}\n  shrunk message: {summarise(msg)}")


def frames_bytes(frames: Iterable[Any]) -> List[bytes]:
    """Frames as plain bytes, for byte-for-byte comparison."""
    return [bytes(memoryview(f)) for f in frames]
