"""Tensors and ndarrays: every dtype, layout and device, and only valid combinations."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis.errors import InvalidArgument

import strategies
from reference_codec.dtypes import TORCH_DTYPES

from ._helpers import generates


def _layout(t) -> set:
    out = set()
    if t.dim() == 0:
        out.add("0-d")
    if t.numel() and not t.is_contiguous():
        out.add("non-contiguous")
    if 0 in t.stride() and t.numel() > 1:
        out.add("expanded")
    if t.storage_offset() > 0:
        out.add("offset")
    if t.requires_grad:
        out.add("requires_grad")
    if tuple(t.shape) == (0, 3):
        out.add(f"empty (0, 3) {t.dtype}")
    return out


def test_tensors_cover_every_fixed_layout_dtype():
    names = {str(d) for d in TORCH_DTYPES.values()}
    generates(strategies.tensors(), lambda t: {str(t.dtype)}, names)


def test_tensors_include_0d_noncontiguous_expanded_offset_and_requires_grad():
    generates(strategies.tensors(), _layout, {"0-d", "non-contiguous", "expanded", "offset", "requires_grad"})


def test_an_empty_0x3_bfloat16_tensor_is_generated():
    generates(strategies.tensors(), _layout, {"empty (0, 3) torch.bfloat16"}, max_examples=2000)


@given(strategies.tensors())
def test_only_float_and_complex_tensors_require_grad_and_then_as_leaves(t):
    if t.requires_grad:
        assert t.dtype.is_floating_point or t.dtype.is_complex, t.dtype
        assert t.is_leaf


@given(strategies.tensors(dtypes=["bool"]))
def test_bool_tensors_hold_only_zero_and_one_bytes(t):
    raw = t.detach().cpu().contiguous().view(torch.uint8)
    assert set(raw.flatten().tolist()) <= {0, 1}


def test_tensors_land_on_every_visible_device():
    visible = set(strategies.visible_devices())
    assert "cpu" in visible
    generates(strategies.tensors(), lambda t: {str(t.device)}, visible)


def test_tensors_restrict_to_the_requested_dtype_shape_and_layout():
    s = strategies.tensors(dtypes=["bfloat16"], shape=(2, 3), layouts=["transposed"], requires_grad=True)

    def check(t):
        assert t.dtype is torch.bfloat16 and tuple(t.shape) == (2, 3) and t.requires_grad
        return {"transposed"} if t.stride() == (1, 2) else set()

    generates(s, check, {"transposed"})


def _array_kind(a: np.ndarray) -> set:
    out = {a.dtype.str if a.dtype.fields is None else "structured"}
    if a.dtype.byteorder == ">":
        out.add("big-endian")
    if a.ndim >= 2 and a.flags.f_contiguous and not a.flags.c_contiguous:
        out.add("fortran")
    if a.size > 1 and 0 in a.strides:
        out.add("broadcast")
    if a.size and not (a.flags.c_contiguous or a.flags.f_contiguous):
        out.add("strided")
    return out


def test_ndarrays_cover_big_endian_structured_fortran_broadcast_and_strided():
    generates(strategies.ndarrays(), _array_kind, {"big-endian", "structured", "fortran", "broadcast", "strided", "<f2", "|b1"})


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda: strategies.tensors(dtypes=["float128"]), "dtypes"),
        (lambda: strategies.tensors(dtypes=[torch.int32], requires_grad=True), "requires_grad"),
        (lambda: strategies.tensors(layouts=["diagonal"]), "layouts"),
        (lambda: strategies.tensors(devices=["cuda:99"]), "devices"),
        (lambda: strategies.tensors(shape=(2, -1)), "shape"),
        (lambda: strategies.tensors(max_dims=9), "max_dims"),
        (lambda: strategies.ndarrays(dtypes=[object]), "dtypes"),
        (lambda: strategies.tensor_shapes(max_side=-1), "max_side"),
    ],
)
def test_tensor_arguments_are_validated_at_call_time_naming_the_argument(call, argument):
    with pytest.raises(InvalidArgument, match=argument):
        call()


def test_tensor_reprs_name_the_call():
    assert repr(strategies.tensors()) == "tensors()"
    assert repr(strategies.tensors(dtypes=["bfloat16"], max_side=2)).startswith("tensors(dtypes=(torch.bfloat16,), shape=tensor_shapes(")
    assert repr(strategies.devices()) == "devices()"


@given(strategies.tensor_shapes(max_dims=2, max_side=3))
def test_tensor_shapes_respect_their_bounds(shape):
    assert len(shape) <= 2 and all(0 <= s <= 3 for s in shape) or shape == (0, 3)
    assert math.prod(shape) <= 9
