"""Tests of the neutral JSON form (:mod:`conformance.neutral`): exact, reversible, JSON-only.

Every value kind is round-tripped through ``json.dumps(allow_nan=False)`` and
back, and must come back equivalent under the equivalence contract with no
normalisation allowed beyond the defaults; the exact forms a non-Python reader
relies on are pinned in tables; malformed input names its path.
"""

from __future__ import annotations

import datetime
import enum
import json
import math
import struct
from array import array
from typing import Any

import hypothesis.strategies as st
import msgspec
import numpy as np
import pytest
import torch
from hypothesis import given, settings

import strategies
from conformance.equivalence import compare
from conformance.neutral import SAFE_INT_MAX, dumps_canonical, from_neutral, schema_types, to_neutral
from conformance.properties import MESSAGE_TAGS
from reference_codec import samples
from reference_codec.dtypes import ARRAY_TYPECODES, TORCH_DTYPES
from reference_codec.schema import ENUM_TYPES, MESSAGE_TYPES, Int128, Modality, ProfileReqType


def _f64(bits: str) -> float:
    return struct.unpack(">d", bytes.fromhex(bits))[0]


def round_trip(value: Any) -> Any:
    """to_neutral, through JSON text (no NaN allowed), from_neutral; asserts the form is stable."""
    form = to_neutral(value)
    text = json.dumps(form, allow_nan=False)
    back = from_neutral(json.loads(text))
    assert to_neutral(back) == form, "the neutral form of the rebuilt value differs"
    return back


def _ids(values) -> list:
    """Stable test ids: type name and index (set and object reprs vary between processes; pytest-xdist refuses that)."""
    return [f"{type(v).__name__}-{i}" for i, v in enumerate(values)]


def assert_round_trips(value: Any) -> None:
    diff = compare(value, round_trip(value))
    assert diff is None, f"round trip of {value!r:.200} differs: {diff}"


# --- every kind, by example ------------------------------------------------------------------

_INTS = [0, 1, -1, SAFE_INT_MAX, -SAFE_INT_MAX, SAFE_INT_MAX + 1, -SAFE_INT_MAX - 1, 2**63 - 1, -(2**63), 2**64 - 1, 2**64, -(2**200)]
_FLOATS = [0.0, -0.0, 1.5, math.inf, -math.inf, math.nan, _f64("7ff8000000000abc"), _f64("7ff0000000000001"),
           _f64("fff8000000000000"), 5e-324, 1.7976931348623157e308, 0.1]

_SCALARS = [None, True, False, "", "h\u00e9llo \U0001f642 \x00\u2028\U0010ffff", b"", b"\x00\xff", *_INTS, *_FLOATS]

_CONTAINERS = [
    [],
    [1, [2.5, [None]]],
    (),
    (1, (2, "x"), [()]),
    torch.Size([]),
    torch.Size([0, 3]),
    set(),
    {1, "a", b"b", 2.5, (1, 2), None},
    frozenset({-0.0, 0.0}),
    {},
    {"b": 1, "a": 2},  # insertion order, not sorted
    {1: "int", "1": "str", 1.5: "float", b"1": "bytes", None: "none", (1,): "tuple", Modality.IMAGE: "enum"},
    {True: [], False: {}},
]

_STRUCTS = [
    samples.flush_cache(),
    samples.minimal(MESSAGE_TYPES["TokenizedGenerateReqInput"]),
    samples.batch_token_id_output(3),
    Modality.AUDIO,
    ProfileReqType.STOP_PROFILE,
    Int128(0),
    Int128(Int128.MIN),
    Int128(Int128.MAX),
    msgspec.msgpack.Ext(64, b"\x90"),
]


def _tensor_cases():
    gen = torch.Generator().manual_seed(0)
    out = []
    for name, dtype in TORCH_DTYPES.items():
        raw = torch.randint(0, 256, (2 * 3 * dtype.itemsize,), dtype=torch.uint8, generator=gen)
        if dtype == torch.bool:
            raw = raw % 2
        out.append(pytest.param(raw.view(dtype).reshape(2, 3), id=f"tensor-{name}"))
    out += [
        pytest.param(torch.tensor(3.5), id="tensor-0d"),
        pytest.param(torch.zeros(0, 3), id="tensor-0x3"),
        pytest.param(torch.zeros(3, 0, dtype=torch.int64), id="tensor-3x0"),
        pytest.param(torch.arange(6.0).reshape(2, 3).t(), id="tensor-transposed"),
        pytest.param(torch.zeros(4, dtype=torch.int64).as_strided((1, 1), (2, 2)), id="tensor-odd-unit-strides"),
        pytest.param(torch.tensor([1 + 2j]).conj(), id="tensor-lazy-conj"),
        pytest.param(torch.ones(2, 2).requires_grad_(True), id="tensor-requires-grad"),
    ]
    return out


_ND_STRUCTURED = np.dtype({"names": ["a", "b"], "formats": ["u1", ">f8"], "offsets": [0, 8], "itemsize": 24})

_NDARRAYS = [
    np.arange(6, dtype="<f4").reshape(2, 3),
    np.array([1, -2, 2**62], dtype=">i8"),
    np.array(7, dtype="<u2"),
    np.zeros((0, 3), dtype="<f8"),
    np.asfortranarray(np.arange(6, dtype="<i4").reshape(2, 3)),
    np.array([True, False]),
    np.array(["ab", "c"], dtype="<U2"),
    np.array([1, 2], dtype="<M8[s]"),
    np.array([(1, 0.5)], dtype=_ND_STRUCTURED),
    np.zeros(2, dtype=[("x", "<i4", (2,)), ("y", [("z", ">f2")])]),
    np.broadcast_to(np.arange(3.0), (2, 3)),
]

_NP_SCALARS = [np.float32(1.5), np.float64(-0.0), np.float16(np.inf), np.int8(-128), np.uint64(2**64 - 1), np.bool_(True),
               np.complex64(1 - 2j), np.datetime64(1, "ms"), np.array([(1, 0.5)], dtype=_ND_STRUCTURED)[0]]

_ARRAYS = [array(code, [1, 2]) for code in ARRAY_TYPECODES if code != "u"]  # 'u' is deprecated (3.13)
_ARRAYS += [array("q"), array("d", [math.nan, -0.0]), array("q", [-(2**63), 2**63 - 1])]


@pytest.mark.parametrize("value", _SCALARS + _CONTAINERS + _STRUCTS, ids=_ids(_SCALARS + _CONTAINERS + _STRUCTS))
def test_python_values_round_trip_exactly(value):
    assert_round_trips(value)


@pytest.mark.parametrize("value", _tensor_cases())
def test_tensors_round_trip_exactly(value):
    assert_round_trips(value)


@pytest.mark.parametrize("value", _NDARRAYS, ids=lambda a: f"{a.dtype.str}-{a.shape}")
def test_ndarrays_round_trip_exactly(value):
    assert_round_trips(value)


@pytest.mark.parametrize("value", _NP_SCALARS + _ARRAYS, ids=_ids(_NP_SCALARS + _ARRAYS))
def test_numpy_scalars_and_arrays_round_trip_exactly(value):
    assert_round_trips(value)


# --- the exact forms a non-Python reader relies on --------------------------------------------


_EXACT_FORMS = [
    (None, None),
    (True, True),
    (1, 1),
    (2**53 - 1, 9007199254740991),
    (-(2**53 - 1), -9007199254740991),
    (2**53, {"$int": "9007199254740992"}),
    (-(2**63), {"$int": "-9223372036854775808"}),
    (2**64 - 1, {"$int": "18446744073709551615"}),
    (1.0, {"$f64": "3ff0000000000000"}),
    (-0.0, {"$f64": "8000000000000000"}),
    (math.inf, {"$f64": "7ff0000000000000"}),
    (_f64("7ff8000000000abc"), {"$f64": "7ff8000000000abc"}),
    (5e-324, {"$f64": "0000000000000001"}),
    ("\u00e9", "\u00e9"),
    (b"\x00\xff", {"$bytes": "00ff"}),
    ([1, [2]], [1, [2]]),
    ((1,), {"$tuple": [1]}),
    (torch.Size([2, 3]), {"$size": [2, 3]}),
    ({"b", "a", 1}, {"$set": ["a", "b", 1]}),  # by canonical JSON text: '"a"' < '"b"' < '1'
    (frozenset({2}), {"$frozenset": [2]}),
    ({"b": 1, 2: None}, {"$dict": [["b", 1], [2, None]]}),
    (Int128(-1), {"$int128": "-1"}),
    (Modality.IMAGE, {"$enum": {"type": "Modality", "name": "IMAGE", "value": 1}}),
    (array("q", [1]), {"$array": {"typecode": "q", "data": "0100000000000000"}}),
    (np.float32(1.5), {"$np": {"dtype": "<f4", "data": "0000c03f"}}),
    (np.array([1], dtype=">i2"), {"$ndarray": {"dtype": ">i2", "shape": [1], "data": "0001"}}),
    (
        torch.tensor([[1.0]], dtype=torch.bfloat16),
        {"$tensor": {"dtype": "bfloat16", "shape": [1, 1], "device": "cpu", "requires_grad": False, "data": "803f"}},
    ),
    (torch.zeros(0, 3), {"$tensor": {"dtype": "float32", "shape": [0, 3], "device": "cpu", "requires_grad": False, "data": ""}}),
    (msgspec.msgpack.Ext(67, b"\x01"), {"$ext": {"code": 67, "data": "01"}}),
]


@pytest.mark.parametrize("value, form", _EXACT_FORMS, ids=_ids([value for value, _ in _EXACT_FORMS]))
def test_exact_neutral_forms(value, form):
    assert to_neutral(value) == form
    assert json.loads(json.dumps(form, allow_nan=False)) == form


def test_struct_form_names_the_class_and_every_field_in_order():
    msg = samples.flush_cache()
    assert to_neutral(msg) == {
        "$struct": {
            "type": "FlushCacheReqInput",
            "fields": [["rid", "a"], ["http_worker_ipc", None], ["timeout_s", {"$f64": "3ff8000000000000"}]],
        }
    }


def test_every_json_object_in_a_form_has_one_dollar_key():
    value = samples.batch_token_id_output(2)
    value.customized_info = {"k": [(1, {2: 3.5}), {b"x"}, Modality.IMAGE, np.float32(1)]}
    form = to_neutral(value)

    def walk(node):
        """Check a value position: a JSON scalar, an array of values, or a one-key ``$`` object."""
        if isinstance(node, list):
            for v in node:
                walk(v)
            return
        if not isinstance(node, dict):
            assert node is None or type(node) in (bool, int, str), node
            assert type(node) is not int or abs(node) <= SAFE_INT_MAX
            return
        assert len(node) == 1 and next(iter(node)).startswith("$"), node
        (kind, body), = node.items()
        if kind in ("$tuple", "$set", "$frozenset"):
            walk(body)
        elif kind == "$dict":
            for key, item in body:
                walk(key)
                walk(item)
        elif kind == "$struct":
            for _, item in body["fields"]:
                walk(item)
        elif kind == "$enum":
            walk(body["value"])

    walk(form)


def test_set_order_is_canonical_whatever_the_iteration_order():
    a = {"x" * i for i in range(20)}
    b = set(sorted(a, reverse=True))
    assert dumps_canonical(to_neutral(a)) == dumps_canonical(to_neutral(b))


def test_large_ints_are_accepted_as_json_numbers_too():
    # a writer uses $int past 2**53, but a reader must accept either spelling
    assert from_neutral(2**63) == 2**63 and type(from_neutral(2**63)) is int
    assert from_neutral({"$int": "5"}) == 5


def test_schema_types_cover_every_message_nested_struct_and_enum():
    table = schema_types()
    for cls in MESSAGE_TYPES.values():
        assert table[cls.__name__] is cls
    assert table["Modality"] is Modality and table["PickleWrapper"].__name__ == "PickleWrapper"


def test_extra_types_extend_the_lookup():
    class Other(msgspec.Struct):
        x: int

    class Colour(enum.Enum):
        RED = "r"

    value = [Other(x=1), Colour.RED]
    with pytest.raises(ValueError, match="unknown struct type 'Other'"):
        from_neutral(to_neutral(value))
    back = from_neutral(to_neutral(value), types=[Other, Colour])
    assert compare(value, back) is None


# --- what has no form, and malformed forms ----------------------------------------------------


@pytest.mark.parametrize(
    "value, message",
    [
        ({"when": datetime.datetime(2024, 1, 1)}, r"datetime.datetime has no neutral form \(at \$\.when\)"),
        (["\ud800"], r"lone surrogate.*at \$\[0\]"),
        (np.array([object()]), "holds Python objects"),
        (torch.zeros(2).to_sparse(), "sparse"),
        (torch.nn.Parameter(torch.zeros(1)), "Parameter has no neutral form"),
        (1 + 2j, "complex has no neutral form"),
    ],
    ids=["datetime", "surrogate", "object-ndarray", "sparse-tensor", "parameter", "complex"],
)
def test_values_without_a_form_raise_type_error_naming_the_path(value, message):
    with pytest.raises(TypeError, match=message):
        to_neutral(value)


@pytest.mark.parametrize(
    "form, message",
    [
        (1.5, "is not an integer"),
        ({"$f64": "zz"}, "not lowercase hex"),
        ({"$f64": "3FF0000000000000"}, "not lowercase hex"),
        ({"$f64": "3ff0"}, "16 hex digits"),
        ({"a": 1}, "unknown neutral kind 'a'"),
        ({"$f64": "3ff0000000000000", "$int": "1"}, "exactly one"),
        ({"$int": "1.5"}, "not decimal"),
        ([{"$dict": [[1]]}], r"not a \[key, value\] pair \(at \$\[0\]\[0\]\)"),
        ({"$dict": [[1, 2], [1, 3]]}, "duplicate"),
        ({"$struct": {"type": "NoSuch", "fields": []}}, "unknown struct type 'NoSuch'"),
        ({"$struct": {"type": "FlushCacheReqInput", "fields": [["rid", None]]}}, "fields must be exactly"),
        ({"$struct": {"type": "Modality", "fields": []}}, "unknown struct type 'Modality'"),
        ({"$enum": {"type": "Modality", "name": "IMAGE", "value": 2}}, "has value 1, not 2"),
        ({"$enum": {"type": "Modality", "name": "NOPE", "value": 1}}, "no member"),
        ({"$tensor": {"dtype": "float32", "shape": [2], "device": "cpu", "requires_grad": False, "data": "00"}}, "needs 8 bytes"),
        ({"$tensor": {"dtype": "float128", "shape": [], "device": "cpu", "requires_grad": False, "data": ""}}, "unknown torch dtype"),
        ({"$tensor": {"dtype": "float32", "shape": [1], "data": "00000000"}}, "must be an object with keys"),
        ({"$ndarray": {"dtype": "|O", "shape": [1], "data": "0000000000000000"}}, "cannot be rebuilt"),
        ({"$ndarray": {"dtype": "f4", "shape": [1], "data": "00000000"}}, "bad numpy dtype"),
        ({"$array": {"typecode": "z", "data": ""}}, "unknown array typecode"),
        ({"$array": {"typecode": "q", "data": "00"}}, "whole number of items"),
        ({"$np": {"dtype": "<f4", "data": "00"}}, "needs 4 bytes"),
        ({"$size": [-1]}, "non-negative"),
        ({"$int128": str(2**127)}, "Int128 out of range"),
        ({"$ext": {"code": 200, "data": ""}}, r"\[-128, 127\]"),
    ],
    ids=repr,
)
def test_malformed_forms_raise_value_error(form, message):
    with pytest.raises(ValueError, match=message):
        from_neutral(form)


# --- property: every message the strategies generate -------------------------------------------

_PER_TYPE = settings(max_examples=min(20, settings.default.max_examples))


@pytest.mark.parametrize("tag", MESSAGE_TAGS)
@_PER_TYPE
@given(data=st.data())
def test_every_message_type_round_trips(tag, data):
    assert_round_trips(data.draw(st.from_type(MESSAGE_TYPES[tag]), label="message"))


@given(value=strategies.untyped_values(enums=ENUM_TYPES, max_leaves=12))
def test_untyped_values_round_trip(value):
    assert_round_trips(value)


@given(
    value=st.one_of(
        strategies.tensors(),
        strategies.ndarrays(),
        strategies.numpy_scalars(),
        strategies.arrays(),
        strategies.int128s(),
        strategies.big_ints(),
        strategies.edge_floats(),
        strategies.texts(),
    )
)
def test_leaf_values_round_trip(value):
    assert_round_trips(value)
