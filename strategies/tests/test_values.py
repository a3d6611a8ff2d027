"""Leaf and untyped values: each strategy reaches its edge cases and stays in range."""

from __future__ import annotations

import enum
import math
import struct
import unicodedata
from array import array

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis.errors import InvalidArgument

import strategies
from reference_codec import EncodeError, ReferenceCodec
from reference_codec.schema import ENUM_TYPES, INT64_MAX, INT64_MIN, UINT64_MAX, FlushCacheReqOutput, Int128

from ._helpers import generates


def test_integers_between_reach_both_bounds_and_msgpack_width_transitions():
    def labels(x):
        return {str(x)} if x in (-5, 255, 256, 70_000) else set()

    generates(strategies.integers_between(-5, 70_000), labels, {"-5", "255", "256", "70000"})


@given(strategies.int64s())
def test_int64s_stay_within_int64(x):
    assert INT64_MIN <= x <= INT64_MAX


@given(strategies.uint64s())
def test_uint64s_stay_within_uint64(x):
    assert 0 <= x <= UINT64_MAX


def test_uint64s_reach_past_int64():
    generates(strategies.uint64s(), lambda x: {"past int64"} if x > INT64_MAX else set(), {"past int64"})


def test_int128s_are_int128_beyond_64_bits_up_to_both_limits():
    def labels(x):
        assert type(x) is Int128 and Int128.MIN <= x <= Int128.MAX
        out = set()
        if x > UINT64_MAX:
            out.add("above 64 bits")
        if x < INT64_MIN:
            out.add("below 64 bits")
        if x in (Int128.MIN, Int128.MAX):
            out.add(f"limit {x > 0}")
        return out

    generates(strategies.int128s(), labels, {"above 64 bits", "below 64 bits", "limit True", "limit False"})


def _float_kind(x: float) -> set:
    bits = struct.unpack("<Q", struct.pack("<d", x))[0]
    if math.isnan(x):
        return {"nan", "nan payload"} if bits & ((1 << 51) - 1) else {"nan"}
    if math.isinf(x):
        return {"+inf" if x > 0 else "-inf"}
    if x == 0:
        return {"-0.0" if math.copysign(1, x) < 0 else "0.0"}
    if abs(x) < 2.2250738585072014e-308:
        return {"subnormal"}
    return set()


def test_edge_floats_include_nan_payloads_infinities_negative_zero_and_subnormals():
    generates(strategies.edge_floats(), _float_kind, {"nan", "nan payload", "+inf", "-inf", "-0.0", "0.0", "subnormal"})


@given(strategies.edge_floats(allow_nan=False, allow_infinity=False))
def test_edge_floats_honour_allow_nan_and_allow_infinity(x):
    assert math.isfinite(x)


def _text_kind(s: str) -> set:
    out = set()
    for ch in s:
        if ord(ch) > 0xFFFF:
            out.add("astral")
        if unicodedata.combining(ch):
            out.add("combining")
        if ord(ch) > 127:
            out.add("non-ascii")
    if s == "":
        out.add("empty")
    if "🙂" in s or "\u200d" in s:
        out.add("emoji")
    return out


def test_texts_include_non_ascii_combining_marks_emoji_and_empty():
    generates(strategies.texts(), _text_kind, {"astral", "combining", "non-ascii", "empty", "emoji"})


@given(strategies.texts())
def test_texts_are_always_valid_utf8(s):
    s.encode("utf-8")


@given(strategies.unencodable_text())
def test_unencodable_text_holds_a_lone_surrogate_that_the_reference_codec_refuses(s):
    assert any(0xD800 <= ord(ch) <= 0xDFFF for ch in s)
    with pytest.raises(EncodeError):
        ReferenceCodec().encode(FlushCacheReqOutput(success=True, message=s))


def test_numpy_scalars_cover_every_default_dtype():
    names = set(strategies.values.NUMPY_SCALAR_DTYPES)
    generates(strategies.numpy_scalars(), lambda x: {np.dtype(type(x)).name} if isinstance(x, np.generic) else set(), names)


def test_arrays_cover_every_typecode():
    codes = set(strategies.values.ARRAY_TYPECODES_GENERATED)
    generates(strategies.arrays(), lambda a: {a.typecode} if type(a) is array and len(a) else set(), codes)


def _untyped_kinds(value) -> set:
    out = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if type(v) is tuple:
            out.add("tuple")
            stack.extend(v)
        elif type(v) is list:
            out.add("list")
            stack.extend(v)
        elif type(v) is dict:
            out.add("dict")
            stack.extend(v.values())
        elif isinstance(v, torch.Size):
            out.add("torch.Size")
        elif isinstance(v, torch.Tensor):
            out.add("tensor")
        elif isinstance(v, np.ndarray):
            out.add("ndarray")
        elif isinstance(v, np.generic):
            out.add("numpy scalar")
        elif isinstance(v, enum.Enum):
            out.add("enum")
        elif type(v) is int and not INT64_MIN <= v <= UINT64_MAX:
            out.add("int beyond 64 bits")
        elif v is None or type(v) in (bool, int, float, str, bytes):
            out.add(type(v).__name__)
    return out


def test_untyped_values_reach_every_kind_pickle_keeps():
    generates(
        strategies.untyped_values(enums=ENUM_TYPES),
        _untyped_kinds,
        {
            "tuple", "list", "dict", "torch.Size", "tensor", "ndarray", "numpy scalar", "enum",
            "int beyond 64 bits", "NoneType", "bool", "int", "float", "str", "bytes",
        },
        max_examples=1000,
    )


def _every(value):
    """``value`` and every value nested in its lists, tuples and dict values."""
    stack = [value]
    while stack:
        v = stack.pop()
        yield v
        if type(v) in (list, tuple):
            stack.extend(v)
        elif type(v) is dict:
            stack.extend(v.values())


def _not_json(value) -> list:
    """The parts of ``value`` JSON cannot say: anything but None/bool/int64/float/str, lists and str-keyed dicts."""
    bad = []
    for v in _every(value):
        if type(v) is dict:
            bad.extend(k for k in v if type(k) is not str)
        elif type(v) is int:
            if not INT64_MIN <= v <= INT64_MAX:
                bad.append(v)
        elif v is not None and type(v) not in (bool, float, str, list):
            bad.append(v)
    return bad


@given(strategies.untyped_values(json_like=True))
def test_json_like_untyped_values_hold_only_what_json_can_say(value):
    assert _not_json(value) == []


def test_json_like_untyped_values_reach_every_json_kind_and_edge_floats():
    def labels(value):
        kinds = _untyped_kinds(value)
        return kinds | ({"nan"} if any(type(v) is float and math.isnan(v) for v in _every(value)) else set())

    generates(
        strategies.untyped_values(json_like=True),
        labels,
        {"list", "dict", "NoneType", "bool", "int", "float", "str", "nan"},
        max_examples=1000,
    )


class _Shade(enum.Enum):
    DARK = "dark"


@given(strategies.untyped_values(enums=()))
def test_untyped_values_with_no_enums_hold_no_enum_member(value):
    assert not any(isinstance(v, enum.Enum) for v in _every(value))


def test_json_like_untyped_values_hold_the_enums_given():
    generates(strategies.untyped_values(json_like=True, enums=[_Shade]), lambda v: {"enum"} if any(x is _Shade.DARK for x in _every(v)) else set(), {"enum"})


@given(strategies.untyped_keys())
def test_untyped_keys_are_str_or_int64(key):
    assert type(key) is str or (type(key) is int and INT64_MIN <= key <= INT64_MAX)


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda: strategies.untyped_values(json_like=1), "json_like"),
        (lambda: strategies.integers_between(5, 1), "min_value"),
        (lambda: strategies.integers_between("0", 1), "min_value"),
        (lambda: strategies.texts(min_size=-1), "min_size"),
        (lambda: strategies.texts(max_size=2, min_size=3), "max_size"),
        (lambda: strategies.edge_floats(allow_nan="yes"), "allow_nan"),
        (lambda: strategies.arrays(typecodes=["z"]), "typecodes"),
        (lambda: strategies.numpy_scalars(dtypes=["float32", "nope"]), "dtypes"),
        (lambda: strategies.untyped_values(max_leaves=0), "max_leaves"),
        (lambda: strategies.untyped_values(enums=[int]), "enums"),
        (lambda: strategies.batch_sizes(max_size=-1), "max_size"),
        (lambda: strategies.per_request("not a strategy", 3), "items"),
    ],
)
def test_public_arguments_are_validated_at_call_time_naming_the_argument(call, argument):
    with pytest.raises(InvalidArgument, match=argument):
        call()


def test_strategy_reprs_read_as_the_call_that_made_them():
    assert repr(strategies.arrays(max_size=3)).startswith("arrays(")
    assert repr(strategies.unencodable_text()) == "unencodable_text()"
    assert repr(strategies.untyped_values(max_leaves=3)).startswith("untyped_values(")
    assert repr(strategies.untyped_values(json_like=True)) == "untyped_values(json_like=True)"
    assert repr(strategies.untyped_keys()) == "untyped_keys()"
    assert repr(strategies.batch_sizes()) == "batch_sizes()"
    assert repr(strategies.batch_sizes(max_size=3)) == "batch_sizes(max_size=3)"
