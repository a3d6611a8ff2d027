"""Dtype and typecode allowlists: the only element types a decoder will build.

Wire text is never passed to ``getattr(torch, ...)``: torch dtypes are looked
up in a table built from dtypes that have a fixed byte layout. numpy dtype
text is parsed by numpy but the result must be a plain, non-object dtype of
non-zero size.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Tuple

import numpy as np
import torch

__all__ = [
    "TORCH_DTYPES",
    "torch_dtype_name",
    "torch_dtype_from_name",
    "numpy_dtype_to_wire",
    "numpy_dtype_from_wire",
    "ARRAY_TYPECODES",
]

_TORCH_DTYPE_NAMES = (
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex32",
    "complex64",
    "complex128",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
)

#: Wire name -> torch dtype, for every dtype with a fixed byte layout in this torch.
TORCH_DTYPES: Mapping[str, torch.dtype] = {
    name: getattr(torch, name) for name in _TORCH_DTYPE_NAMES if isinstance(getattr(torch, name, None), torch.dtype)
}
_TORCH_NAMES: Dict[torch.dtype, str] = {dtype: name for name, dtype in TORCH_DTYPES.items()}

#: ``array.array`` typecodes and their item sizes on this platform.
ARRAY_TYPECODES: Mapping[str, int] = {
    code: np.dtype(code).itemsize if code != "u" else 4 for code in "bBuhHiIlLqQfd"
}


def torch_dtype_name(dtype: torch.dtype) -> str:
    """The wire name of ``dtype``; ``TypeError`` for dtypes without a fixed byte layout."""
    try:
        return _TORCH_NAMES[dtype]
    except KeyError:
        raise TypeError(f"torch dtype {dtype} has no fixed byte layout on the wire") from None


def torch_dtype_from_name(name: object) -> torch.dtype:
    """The dtype a wire name stands for; ``ValueError`` for anything not allowlisted."""
    if isinstance(name, str):
        dtype = TORCH_DTYPES.get(name)
        if dtype is not None:
            return dtype
    raise ValueError(f"unknown torch dtype {name!r:.60}")


def numpy_dtype_to_wire(dtype: np.dtype) -> object:
    """``dtype.str`` for plain dtypes, ``dtype.descr`` for structured ones."""
    if dtype.hasobject:
        raise TypeError(f"numpy dtype {dtype} holds Python objects and has no byte layout")
    if dtype.fields is not None or dtype.subdtype is not None:
        return _descr_to_wire(dtype.descr)
    return dtype.str


def _descr_to_wire(descr):
    return [[name, _descr_to_wire(t) if isinstance(t, list) else t, *([list(rest[0])] if rest else [])]
            for name, t, *rest in descr]


def _descr_from_wire(descr, depth: int = 0):
    if depth > 8 or not isinstance(descr, list) or not descr or len(descr) > 256:
        raise ValueError("malformed structured dtype")
    out: List[Tuple[Any, ...]] = []
    for item in descr:
        if not isinstance(item, list) or len(item) not in (2, 3) or not isinstance(item[0], str):
            raise ValueError("malformed structured dtype field")
        name, t = item[0], item[1]
        t = _descr_from_wire(t, depth + 1) if isinstance(t, list) else _check_dtype_text(t)
        if len(item) == 3:
            shape = item[2]
            if not isinstance(shape, list) or not all(type(d) is int and 0 <= d <= 1 << 20 for d in shape):
                raise ValueError("malformed structured dtype subarray shape")
            out.append((name, t, tuple(shape)))
        else:
            out.append((name, t))
    return out


def _check_dtype_text(text: object) -> str:
    if not isinstance(text, str) or not 2 <= len(text) <= 16 or text[0] not in "<>|=":
        raise ValueError(f"malformed numpy dtype {text!r:.60}")
    if text[1] in "OP":
        raise ValueError(f"numpy dtype {text!r} holds Python objects")
    return text


def numpy_dtype_from_wire(wire: object) -> np.dtype:
    """Rebuild a numpy dtype from its wire form; ``ValueError`` when it is not a safe, sized dtype."""
    try:
        if isinstance(wire, list):
            # descr_to_dtype, not np.dtype: it turns unnamed padding back into padding
            # instead of a field called 'f1'.
            dtype = np.lib.format.descr_to_dtype(_descr_from_wire(wire))
        else:
            dtype = np.dtype(_check_dtype_text(wire))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bad numpy dtype {wire!r:.80}: {exc}") from None
    if dtype.hasobject or dtype.itemsize == 0:
        raise ValueError(f"numpy dtype {dtype} cannot be rebuilt from raw bytes")
    return dtype
