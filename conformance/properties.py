"""Shared machinery of the property tests: the message parameter, checks and their failure messages.

Every property failure is a :class:`~conformance.failures.PropertyFailure`
that names the codec, what the property found, every distinct differing path
with both values, and a bounded summary of the message. Properties draw their
message with :func:`draw_message`, which hands it to the runner's observers
(:mod:`conformance.draws`): a failure raised from inside the codec (a
``TypeError`` on encode) is still shown with the message that caused it.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Iterable, List, Optional

import hypothesis
import hypothesis.strategies as st
import pytest

from . import draws
from .engines import engine_from_environment
from .equivalence import differences
from .failures import PropertyFailure, summarise
from .findings import mark_side

__all__ = [
    "ENGINE",
    "MESSAGE_TYPES",
    "MESSAGE_TAGS",
    "each_message_type",
    "message_strategy",
    "draw_message",
    "summarise",
    "check_equivalent",
    "frames_bytes",
    "PropertyFailure",
    "MAX_DIFFERENCES",
    "held_or_reject",
    "reference_frames",
]

#: The engine whose messages the properties draw (``--engine``; SGLang by default).
ENGINE = engine_from_environment()
MESSAGE_TYPES = ENGINE.types
MESSAGE_TAGS: List[str] = sorted(MESSAGE_TYPES)

#: ``@each_message_type`` parametrizes a test by wire tag, so each message type is its own test id.
each_message_type = pytest.mark.parametrize("tag", MESSAGE_TAGS)

#: Differences collected per failing message (the failure shows the distinct ones).
MAX_DIFFERENCES = 64


def draw_message(data: Any, tag: str, codec: Any = None, label: str = "message") -> Any:
    """Draw a message of type ``tag`` from ``data`` (``st.data()``) and tell the runner's observers (:func:`conformance.draws.notify`)."""
    msg = data.draw(message_strategy(tag, codec), label=label)
    draws.notify(msg)
    return msg


def message_strategy(tag: str, codec: Any = None) -> st.SearchStrategy:
    """Messages of type ``tag`` of the engine, adapted to ``codec`` when given: its declared gaps
    (``unsupported_dtypes`` and friends, :func:`without_dtypes`), then, for a codec whose engine
    classes normalise or validate when built (``as_held``), as those classes hold them; a message
    they refuse is not drawn (Hypothesis counts it as invalid)."""
    base = ENGINE.message_strategy(MESSAGE_TYPES[tag])
    caps = getattr(codec, "caps", None)
    unsupported = getattr(caps, "unsupported_dtypes", ())
    native_only = getattr(caps, "native_byte_order_only", False)
    keeps_grad = getattr(caps, "keeps_requires_grad", True)
    structured = getattr(caps, "structured_ndarrays", True)
    if unsupported or native_only or not keeps_grad or not structured:
        base = base.map(
            lambda msg: without_dtypes(msg, unsupported, native_byte_order=native_only, requires_grad=keeps_grad, structured_ndarrays=structured)
        )
    as_held = getattr(getattr(codec, "impl", codec), "as_held", None)
    if as_held is None:
        return base
    return base.map(functools.partial(_held, as_held)).filter(lambda msg: msg is not _REFUSED)


#: What :func:`_held` returns for a message the engine's constructors refuse.
_REFUSED = object()


def _held(as_held: Any, msg: Any) -> Any:
    """``as_held(msg)``: the message as the engine's classes hold it, or :data:`_REFUSED` (counted as an event)."""
    try:
        return as_held(msg)
    except Exception as exc:
        hypothesis.event(f"not drawn: the engine's constructor refuses it ({type(exc).__qualname__})")
        return _REFUSED


def held_or_reject(codec: Any, msg: Any) -> Any:
    """Inside a property: ``msg`` as ``codec``'s engine classes hold it; a message they refuse is not a valid example."""
    held = _held(codec.as_held, msg)
    if held is _REFUSED:
        hypothesis.reject()
    return held


def without_dtypes(
    msg: Any,
    names,
    *,
    native_byte_order: bool = False,
    requires_grad: bool = True,
    structured_ndarrays: bool = True,
    map_location: Optional[str] = None,
) -> Any:
    """``msg`` adapted to a codec's declared gaps: tensors of a dtype in ``names`` cast to float32;
    with ``native_byte_order``, non-native ndarrays converted to native byte order (same values);
    without ``requires_grad``, tensors detached from autograd (same values); without
    ``structured_ndarrays``, structured (void) ndarrays replaced by their bytes as uint8
    (one more axis, of the item size); with ``map_location``, tensors moved to
    that device (as a codec that declares it places them).

    Reaches tensors inside structs, dataclasses, NamedTuples, lists, tuples and
    mappings (a ``UserDict`` keeps its class)."""
    import collections
    import copy
    import dataclasses

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
                    value = value.detach().to(torch.float32).requires_grad_(value.requires_grad)
            if value.requires_grad and not requires_grad:
                hypothesis.event("tensor detached from autograd: the codec declares it does not carry requires_grad")
                value = value.detach()
            if map_location is not None and str(value.device) != map_location:
                value = value.detach().to(map_location).requires_grad_(value.requires_grad)
            return value
        if not structured_ndarrays and isinstance(value, np.ndarray) and value.dtype.kind == "V":
            hypothesis.event("structured ndarray sent as its bytes (uint8): the codec declares it cannot carry structured dtypes")
            return np.frombuffer(value.tobytes(), np.uint8).reshape(value.shape + (value.dtype.itemsize,))
        if native_byte_order and isinstance(value, np.ndarray) and _non_native(value.dtype):
            hypothesis.event("ndarray converted to native byte order: the codec declares it loses byte order")
            return value.astype(value.dtype.newbyteorder("="))
        if isinstance(value, msgspec.Struct):
            changes = {f: walk(getattr(value, f)) for f in value.__struct_fields__}
            return msgspec.structs.replace(value, **changes)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            new = copy.copy(value)
            for f in dataclasses.fields(value):
                object.__setattr__(new, f.name, walk(getattr(value, f.name)))  # frozen and init=False fields too
            return new
        if isinstance(value, tuple) and hasattr(type(value), "_fields"):
            return type(value)._make(walk(v) for v in value)
        if type(value) in (list, tuple):
            return type(value)(walk(v) for v in value)
        if type(value) is dict:
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, collections.UserDict):
            new = copy.copy(value)
            new.data = {k: walk(v) for k, v in value.data.items()}
            return new
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


def reference_frames(reference: Any, msg: Any) -> List[Any]:
    """``reference.encode(msg)`` for the engine's wire reference; what it raises is a sender's failure.

    For vLLM the wire reference is vLLM's own encoder, so its failures are
    findings (``sender-raises``), marked as the codec's own ``encode`` marks them.
    """
    try:
        return list(reference.encode(msg))
    except Exception as exc:
        mark_side(exc, "encode")
        raise


def check_equivalent(expected: Any, actual: Any, *, codec: str, what: str, msg: Any) -> None:
    """Raise :class:`PropertyFailure` with every difference unless ``actual`` is equivalent to ``expected``."""
    found = differences(expected, actual, limit=MAX_DIFFERENCES)
    if found:
        raise PropertyFailure(codec=codec, what=what, differences=found, message=msg)


def frames_bytes(frames: Iterable[Any]) -> List[bytes]:
    """Frames as plain bytes, for byte-for-byte comparison."""
    return [bytes(memoryview(f)) for f in frames]
