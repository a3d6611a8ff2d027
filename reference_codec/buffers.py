"""Tensors, ndarrays, arrays and numpy scalars to and from (metadata, raw bytes).

``X_to_wire`` returns the metadata of the buffer layout and a byte view of the
value's own memory (no copy for contiguous CPU values). Decoding is split in
two: ``X_layout`` validates the metadata against the limits *before* anything
is allocated (a pure function of the metadata, so the codec keeps its result
per distinct metadata), and ``X_from_layout`` checks the raw length against it
and builds the value (``numpy_scalar_from_wire`` does both). They raise
``ValueError`` with a plain reason; the codec adds the path and turns it into
a :class:`~reference_codec.DecodeError`.
"""

from __future__ import annotations

import warnings
from array import array
from typing import Any, List, NamedTuple, Optional, Tuple

import numpy as np
import torch

from .devices import MapLocation, check_device_text, resolve_device
from .dtypes import ARRAY_TYPECODES, TORCH_DTYPES, numpy_dtype_from_wire, numpy_dtype_to_wire, torch_dtype_from_name, torch_dtype_name
from .limits import DecodeLimits

__all__ = [
    "tensor_to_wire",
    "TensorLayout",
    "tensor_layout",
    "tensor_from_layout",
    "NdarrayLayout",
    "ndarray_layout",
    "ndarray_from_layout",
    "array_layout",
    "array_from_layout",
    "ndarray_to_wire",
    "array_to_wire",
    "numpy_scalar_to_wire",
    "numpy_scalar_from_wire",
]

_EMPTY = memoryview(b"")
# A buffer copied below this size is copied into a bytearray (see _host_values).
_SMALL_COPY_BYTES = 256 * 1024


def _carrier(dtype: torch.dtype) -> Tuple[np.dtype, Optional[torch.dtype]]:
    """``(numpy dtype, None)`` where ``torch.from_numpy`` gives ``dtype``, else ``(unsigned of the same size, dtype)`` to view as."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # complex32 warns that it is experimental
        try:
            return torch.empty(0, dtype=dtype).numpy().dtype, None
        except TypeError:  # bfloat16, float8, complex32: no numpy counterpart
            return np.dtype(f"u{dtype.itemsize}"), dtype


_CARRIERS = {dtype: _carrier(dtype) for dtype in TORCH_DTYPES.values()}


def _element_count(shape: object, limits: DecodeLimits) -> Tuple[List[int], int]:
    if not isinstance(shape, (list, tuple)) or len(shape) > 64:
        raise ValueError(f"shape must be an array of at most 64 ints, got {shape!r:.80}")
    count = 1
    for dim in shape:
        if type(dim) is not int or dim < 0:
            raise ValueError(f"shape {list(shape)!r:.80} has a dimension that is not a non-negative int")
        count *= dim
        if count > limits.max_buffer_elements:
            raise ValueError(f"shape {list(shape)!r:.80} declares more than {limits.max_buffer_elements} elements")
    return list(shape), count


def _checked_size(shape: List[int], count: int, itemsize: int, limits: DecodeLimits) -> int:
    """``count * itemsize``, refused before anything is allocated when over the limit."""
    expected = count * itemsize
    if expected > limits.max_buffer_bytes:
        raise ValueError(f"buffer of {expected} bytes exceeds the limit of {limits.max_buffer_bytes}")
    return expected


def _check_length(shape: Tuple[int, ...], expected: int, itemsize: int, raw: memoryview) -> None:
    if expected != len(raw):
        raise ValueError(f"shape {list(shape)} x itemsize {itemsize} = {expected} bytes, but the buffer carries {len(raw)}")


def _host_values(raw: memoryview, dtype: np.dtype, shape: Tuple[int, ...], writable: bool) -> np.ndarray:
    """``raw`` as an array of ``dtype`` and ``shape``: in place when writable and aligned, else copied once.

    A large copy is numpy's own allocation: aligned, and backed by transparent
    huge pages where the kernel allows (numpy advises them), which costs a
    fraction of the page faults of a ``bytearray`` of the same size. Below
    256 KiB the copy is a ``bytearray`` (malloc memory, 16-byte aligned), which
    is cheaper to make: 0.73-0.81x the time for 16x16 and 129x24x8 int32 tensors.
    An unaligned view would be legal for numpy and torch on x86, but kernels
    elsewhere may assume alignment, so a misaligned in-band buffer is copied.
    Either copy is of the bytes, not the items: numpy copies a structured dtype
    field by field and would leave its padding bytes unset.
    """
    if writable:
        values = np.frombuffer(raw, dtype=dtype)
        if values.flags.aligned:
            return values if len(shape) == 1 else values.reshape(shape)
    if len(raw) < _SMALL_COPY_BYTES:
        values = np.frombuffer(bytearray(raw), dtype=dtype)
    else:
        values = np.frombuffer(raw, dtype=np.uint8).copy().view(dtype)
    # a 1-d array already has its shape (the caller checked the length): reshape was 0.5 of a 1 KiB tensor's 2.8 us
    return values if len(shape) == 1 else values.reshape(shape)


def _byte_view(values: np.ndarray) -> memoryview:
    return memoryview(values.reshape(-1).view(np.uint8)) if values.size else _EMPTY  # type: ignore[arg-type]  # numpy declares ndarray.__buffer__ only for Python >= 3.12; mypy checks 3.11


# --- torch.Tensor -----------------------------------------------------------


#: dtypes whose tensors ``Tensor.numpy()`` can view (not bfloat16, float8 or complex32).
_NUMPY_VIEWABLE = frozenset(
    {
        torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
        torch.uint16, torch.uint32, torch.uint64, torch.float16, torch.float32, torch.float64,
        torch.complex64, torch.complex128,
    }
)


def plain_tensor_bytes(tensor: torch.Tensor) -> Optional[memoryview]:
    """The bytes of a plain contiguous CPU tensor, viewed in place; ``None`` when :func:`tensor_to_wire` is needed.

    Plain: exactly ``torch.Tensor``, dense, no grad, no conjugate or negative
    bit, a dtype numpy can view, C-contiguous. The common case on the encode
    path, where the general route's torch calls cost more than the bytes.
    """
    if (
        type(tensor) is not torch.Tensor
        or tensor.requires_grad
        or tensor.dtype not in _NUMPY_VIEWABLE
        or tensor.layout != torch.strided
        or tensor.device.type != "cpu"
        or tensor.is_conj()
        or tensor.is_neg()
    ):
        return None
    values = tensor.numpy()
    if not values.flags.c_contiguous:
        return None
    return memoryview(values.reshape(-1).view(np.uint8)) if values.size else _EMPTY  # type: ignore[arg-type]  # numpy declares ndarray.__buffer__ only for Python >= 3.12; mypy checks 3.11


def tensor_to_wire(tensor: torch.Tensor) -> Tuple[list, memoryview]:
    """``([shape, dtype, device(, True)], raw)``; raw views the tensor when it is contiguous on the CPU."""
    if tensor.layout != torch.strided:
        raise TypeError(f"{tensor.layout} tensors have no byte layout on the wire; send a dense tensor")
    if type(tensor) is not torch.Tensor and not isinstance(tensor, torch.nn.Parameter):
        raise TypeError(f"tensor subclass {type(tensor).__qualname__} would arrive as a plain torch.Tensor")
    name = torch_dtype_name(tensor.dtype)
    device = tensor.device
    if device.type == "meta":
        raise TypeError("a meta tensor has no data to send")
    metadata: list = [list(tensor.shape), name, str(device)]
    if tensor.requires_grad:
        metadata.append(True)
    host = tensor.detach()
    if device.type != "cpu":
        host = host.cpu()
    host = host.resolve_conj().resolve_neg().contiguous()
    if host.numel() == 0:
        return metadata, _EMPTY
    flat = host.reshape(-1)
    if flat.stride(0) != 1:
        # torch calls a tensor with size-1 dimensions contiguous whatever their
        # strides, so a one-element slice can keep stride 2; a byte view needs 1.
        flat = flat.clone(memory_format=torch.contiguous_format)
    return metadata, memoryview(flat.view(torch.uint8).numpy())  # type: ignore[arg-type]  # numpy declares ndarray.__buffer__ only for Python >= 3.12; mypy checks 3.11


class TensorLayout(NamedTuple):
    """Validated tensor metadata: everything but the bytes (see :func:`tensor_layout`)."""

    shape: Tuple[int, ...]
    nbytes: int
    dtype: torch.dtype
    carrier: np.dtype  # a numpy dtype of the same itemsize that torch.from_numpy accepts
    view_as: Optional[torch.dtype]  # dtype when the carrier is a stand-in for it (bfloat16, float8, complex32)
    device: Optional[torch.device]  # None: the CPU
    requires_grad: bool


def tensor_layout(metadata: object, limits: DecodeLimits, map_location: MapLocation) -> TensorLayout:
    """Validate tensor metadata ``[shape, dtype, device(, True)]``; ``ValueError`` with a plain reason.

    A pure function of its arguments (for a ``map_location`` that is not a
    callable), so a decoder may keep the result for metadata it sees again.
    """
    if not isinstance(metadata, (list, tuple)) or len(metadata) not in (3, 4):
        raise ValueError(f"tensor metadata must be [shape, dtype, device(, requires_grad)], got {metadata!r:.80}")
    shape, count = _element_count(metadata[0], limits)
    dtype = torch_dtype_from_name(metadata[1])
    wire_device = check_device_text(metadata[2])
    requires_grad = False
    if len(metadata) == 4:
        if metadata[3] is not True:
            raise ValueError(f"tensor requires_grad flag must be true when present, got {metadata[3]!r:.20}")
        if not (dtype.is_floating_point or dtype.is_complex):
            raise ValueError(f"a {metadata[1]} tensor cannot require grad")
        requires_grad = True
    nbytes = _checked_size(shape, count, dtype.itemsize, limits)
    device = resolve_device(wire_device, map_location)
    carrier, view_as = _CARRIERS[dtype]
    return TensorLayout(tuple(shape), nbytes, dtype, carrier, view_as, None if device.type == "cpu" else device, requires_grad)


def tensor_from_layout(layout: TensorLayout, raw: memoryview, writable: bool) -> torch.Tensor:
    """The tensor ``raw`` holds: a view of ``raw`` when it is writable and aligned, else one copy."""
    _check_length(layout.shape, layout.nbytes, layout.dtype.itemsize, raw)
    if layout.nbytes == 0:
        tensor = torch.empty(layout.shape, dtype=layout.dtype)
    elif not writable and len(layout.shape) == 1 and layout.nbytes < _SMALL_COPY_BYTES:
        # _host_values's copy, without numpy in between: half the cost for a 1-d tensor
        # (torch.view costs more than numpy's reshape, so n-d tensors take _host_values)
        tensor = torch.frombuffer(bytearray(raw), dtype=layout.dtype)
    else:
        tensor = torch.from_numpy(_host_values(raw, layout.carrier, layout.shape, writable))
        if layout.view_as is not None:
            tensor = tensor.view(layout.view_as)
    if layout.device is not None:
        tensor = tensor.to(layout.device)
    if layout.requires_grad:
        tensor.requires_grad_(True)
    return tensor


# --- numpy.ndarray ----------------------------------------------------------


def ndarray_to_wire(values: np.ndarray) -> Tuple[list, memoryview]:
    """``([shape, dtype], raw)``; raw views the array when it is C-contiguous."""
    if type(values) is not np.ndarray:
        raise TypeError(f"ndarray subclass {type(values).__qualname__} would arrive as a plain numpy.ndarray")
    dtype_wire = numpy_dtype_to_wire(values.dtype)
    shape = list(values.shape)
    if not values.flags.c_contiguous:
        values = values.copy(order="C")  # not ascontiguousarray: it turns 0-d arrays into 1-d
    return [shape, dtype_wire], _byte_view(values)


class NdarrayLayout(NamedTuple):
    """Validated ndarray metadata (see :func:`ndarray_layout`)."""

    shape: Tuple[int, ...]
    nbytes: int
    dtype: np.dtype


def ndarray_layout(metadata: object, limits: DecodeLimits) -> NdarrayLayout:
    """Validate ndarray metadata ``[shape, dtype]``; ``ValueError`` with a plain reason."""
    if not isinstance(metadata, (list, tuple)) or len(metadata) != 2:
        raise ValueError(f"ndarray metadata must be [shape, dtype], got {metadata!r:.80}")
    shape, count = _element_count(metadata[0], limits)
    dtype = numpy_dtype_from_wire(metadata[1])
    return NdarrayLayout(tuple(shape), _checked_size(shape, count, dtype.itemsize, limits), dtype)


def ndarray_from_layout(layout: NdarrayLayout, raw: memoryview, writable: bool) -> np.ndarray:
    """The array ``raw`` holds: a view of ``raw`` when it is writable and aligned, else one copy."""
    _check_length(layout.shape, layout.nbytes, layout.dtype.itemsize, raw)
    if layout.nbytes == 0:
        return np.empty(layout.shape, dtype=layout.dtype)
    return _host_values(raw, layout.dtype, layout.shape, writable)


# --- array.array ------------------------------------------------------------


def array_to_wire(values: array) -> Tuple[str, memoryview]:
    if type(values) is not array:
        raise TypeError(f"array subclass {type(values).__qualname__} would arrive as a plain array.array")
    return values.typecode, memoryview(values).cast("B") if len(values) else _EMPTY


def array_layout(typecode: object, limits: DecodeLimits) -> str:
    """Validate an ``array.array`` typecode; the layout is the typecode itself."""
    if not isinstance(typecode, str) or typecode not in ARRAY_TYPECODES:
        raise ValueError(f"unknown array typecode {typecode!r:.20}")
    return typecode


def array_from_layout(typecode: str, raw: memoryview, limits: DecodeLimits) -> array:
    """The array ``raw`` holds, always a copy (``array.array`` owns its memory)."""
    itemsize = ARRAY_TYPECODES[typecode]
    if len(raw) % itemsize:
        raise ValueError(f"array('{typecode}') buffer of {len(raw)} bytes is not a multiple of itemsize {itemsize}")
    if len(raw) > limits.max_buffer_bytes:
        raise ValueError(f"buffer of {len(raw)} bytes exceeds the limit of {limits.max_buffer_bytes}")
    result = array(typecode)
    result.frombytes(raw)
    return result


# --- numpy scalars ----------------------------------------------------------


def numpy_scalar_to_wire(value: np.generic) -> Tuple[Any, memoryview]:
    dtype = value.dtype
    return numpy_dtype_to_wire(dtype), memoryview(np.asarray(value).reshape(1).view(np.uint8))  # type: ignore[arg-type]  # numpy declares ndarray.__buffer__ only for Python >= 3.12; mypy checks 3.11


def numpy_scalar_from_wire(metadata: object, raw: memoryview) -> np.generic:
    dtype = numpy_dtype_from_wire(metadata)
    if len(raw) != dtype.itemsize:
        raise ValueError(f"numpy scalar of dtype {dtype} needs {dtype.itemsize} bytes, got {len(raw)}")
    return np.frombuffer(bytes(raw), dtype=dtype)[0]
