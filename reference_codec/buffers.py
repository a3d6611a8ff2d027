"""Tensors, ndarrays, arrays and numpy scalars to and from (metadata, raw bytes).

Mirrored pairs: ``X_to_wire`` returns the metadata of the buffer layout and a
byte view of the value's own memory (no copy for contiguous CPU values);
``X_from_wire`` validates metadata against the raw length and the limits
*before* allocating, then builds the value. The ``from_wire`` functions raise
``ValueError`` with a plain reason; the codec adds the path and turns it into
a :class:`~reference_codec.DecodeError`.
"""

from __future__ import annotations

from array import array
from typing import Any, List, Tuple

import numpy as np
import torch

from .devices import MapLocation, check_device_text, resolve_device
from .dtypes import ARRAY_TYPECODES, numpy_dtype_from_wire, numpy_dtype_to_wire, torch_dtype_from_name, torch_dtype_name
from .limits import DecodeLimits

__all__ = [
    "tensor_to_wire",
    "tensor_from_wire",
    "ndarray_to_wire",
    "ndarray_from_wire",
    "array_to_wire",
    "array_from_wire",
    "numpy_scalar_to_wire",
    "numpy_scalar_from_wire",
]

_EMPTY = memoryview(b"")


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


def _check_length(shape: List[int], count: int, itemsize: int, raw: memoryview, limits: DecodeLimits) -> None:
    expected = count * itemsize
    if expected > limits.max_buffer_bytes:
        raise ValueError(f"buffer of {expected} bytes exceeds the limit of {limits.max_buffer_bytes}")
    if expected != len(raw):
        raise ValueError(
            f"shape {shape} x itemsize {itemsize} = {expected} bytes, but the buffer carries {len(raw)}"
        )


def _byte_view(values: np.ndarray) -> memoryview:
    return memoryview(values.reshape(-1).view(np.uint8)) if values.size else _EMPTY  # type: ignore[arg-type]  # numpy declares ndarray.__buffer__ only for Python >= 3.12; mypy checks 3.11


# --- torch.Tensor -----------------------------------------------------------


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


def tensor_from_wire(
    metadata: object, raw: memoryview, writable: bool, limits: DecodeLimits, map_location: MapLocation
) -> torch.Tensor:
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
    _check_length(shape, count, dtype.itemsize, raw, limits)
    device = resolve_device(wire_device, map_location)
    if count == 0:
        tensor = torch.empty(shape, dtype=dtype)
    else:
        source = raw if writable else bytearray(raw)
        # the length check above makes the buffer a whole number of elements,
        # so frombuffer can read the dtype directly (one view fewer per tensor)
        tensor = torch.frombuffer(source, dtype=dtype)
        if len(shape) != 1:
            tensor = tensor.reshape(shape)
    if device.type != "cpu":
        tensor = tensor.to(device)
    if requires_grad:
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


def ndarray_from_wire(metadata: object, raw: memoryview, writable: bool, limits: DecodeLimits) -> np.ndarray:
    if not isinstance(metadata, (list, tuple)) or len(metadata) != 2:
        raise ValueError(f"ndarray metadata must be [shape, dtype], got {metadata!r:.80}")
    shape, count = _element_count(metadata[0], limits)
    dtype = numpy_dtype_from_wire(metadata[1])
    _check_length(shape, count, dtype.itemsize, raw, limits)
    if count == 0:
        return np.empty(shape, dtype=dtype)
    source = raw if writable else bytearray(raw)
    return np.frombuffer(source, dtype=dtype).reshape(shape)


# --- array.array ------------------------------------------------------------


def array_to_wire(values: array) -> Tuple[str, memoryview]:
    if type(values) is not array:
        raise TypeError(f"array subclass {type(values).__qualname__} would arrive as a plain array.array")
    return values.typecode, memoryview(values).cast("B") if len(values) else _EMPTY


def array_from_wire(typecode: object, raw: memoryview, limits: DecodeLimits) -> array:
    if not isinstance(typecode, str) or typecode not in ARRAY_TYPECODES:
        raise ValueError(f"unknown array typecode {typecode!r:.20}")
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
