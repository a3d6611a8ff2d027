"""Tests of the equivalence contract (:mod:`conformance.equivalence`) itself.

Every case states the path and the reason prefix of the difference it must
produce (or ``None`` when the two values are equivalent), so a change in what
the contract accepts, or in how it names a difference, fails here first.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import math
import pickle
import struct
from array import array
from typing import Any, List, Optional

import msgspec
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance import equivalence
from conformance.equivalence import (
    CONTIGUOUS_NDARRAY,
    CONTIGUOUS_TENSOR,
    DEFAULT_NORMALISATIONS,
    NDARRAY_WRITEABLE,
    NORMALISATIONS,
    Difference,
    Normalisation,
    assert_equivalent,
    compare,
)
from reference_codec import PickleCodec, ReferenceCodec, samples
from reference_codec import schema as s
from reference_codec.schema import Int128, Modality, MultimodalDataItem

# --- helpers and fixtures -------------------------------------------------------


def f64(bits: int) -> float:
    """The float64 whose IEEE bits are ``bits``."""
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def f32_tensor(*bits: int) -> torch.Tensor:
    return torch.tensor(list(bits), dtype=torch.int64).to(torch.int32).view(torch.float32)


NAN = f64(0x7FF8000000000000)
NAN_PAYLOAD = f64(0x7FF8000000000001)
NEG_NAN = f64(0xFFF8000000000000)


class Rows(msgspec.Struct):
    name: str
    rows: List[List[Optional[float]]]


class RowsTwin(msgspec.Struct):  # same fields, another class
    name: str
    rows: List[List[Optional[float]]]


@dataclasses.dataclass
class Point:
    x: float
    y: List[int]


class Colour(enum.IntEnum):
    RED = 1
    BLUE = 2


Pair = collections.namedtuple("Pair", "left right")


def nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def check(difference: Optional[Difference], path: Optional[str], reason: str) -> None:
    if path is None:
        assert difference is None, f"expected equivalence, got: {difference}"
        return
    assert difference is not None, f"expected a difference at {path} ({reason}), got none"
    assert difference.path == path, str(difference)
    assert difference.reason.startswith(reason), str(difference)


# --- the rule table ---------------------------------------------------------------

_t = torch.arange(6.0).reshape(2, 3)

CASES = [
    # exact types
    pytest.param(True, 1, "$", "type differs: int instead of bool", id="true-vs-1"),
    pytest.param(1, True, "$", "type differs: bool instead of int", id="1-vs-true"),
    pytest.param(1, 1.0, "$", "type differs: float instead of int", id="1-vs-1.0"),
    pytest.param((1, 2), [1, 2], "$", "type differs: list instead of tuple", id="tuple-vs-list"),
    pytest.param(torch.Size([2, 3]), (2, 3), "$", "type differs: tuple instead of torch.Size", id="size-vs-tuple"),
    pytest.param(Pair(1, 2), (1, 2), "$", "type differs: tuple instead of Pair", id="namedtuple-vs-tuple"),
    pytest.param(np.float32(1), 1.0, "$", "type differs: float instead of np.float32", id="np-float32-vs-float"),
    pytest.param(
        np.float32(1),
        np.float64(1),
        "$",
        "type differs: np.float64 instead of np.float32",
        id="np-float32-vs-np-float64",
    ),
    pytest.param(np.int64(3), 3, "$", "type differs", id="np-int64-vs-int"),
    pytest.param(Int128(5), 5, "$", "type differs: int instead of Int128", id="int128-vs-int"),
    pytest.param(Int128(5), Int128(6), "$", "Int128 value differs", id="int128-value"),
    pytest.param(b"abc", "abc", "$", "type differs: str instead of bytes", id="bytes-vs-str"),
    pytest.param(b"abc", bytearray(b"abc"), "$", "type differs", id="bytes-vs-bytearray"),
    pytest.param(None, [], "$", "type differs: list instead of NoneType", id="none-vs-empty-list"),
    pytest.param([], [[]], "$", "length differs: 1 instead of 0", id="empty-vs-list-of-empty"),
    pytest.param([[]], [[]], None, "", id="list-of-empty-equal"),
    pytest.param(None, None, None, "", id="none-equal"),
    pytest.param("abc", "abd", "$", "str value differs", id="str-value"),
    # floats, bit for bit
    pytest.param(-0.0, 0.0, "$", "float bits differ", id="neg-zero-vs-zero"),
    pytest.param(float("nan"), float("nan"), None, "", id="nan-vs-nan"),
    pytest.param(NAN, NAN_PAYLOAD, "$", "float bits differ", id="nan-payloads-differ"),
    pytest.param(NAN, NEG_NAN, "$", "float bits differ", id="nan-sign-differs"),
    pytest.param(-0.18, -0.18000000000000002, "$", "float bits differ", id="last-bit"),
    pytest.param(complex(0.0, -0.0), complex(0.0, 0.0), "$", "complex bits differ", id="complex-neg-zero"),
    pytest.param([None, -0.18, -2.94], [None, -0.18, -2.94], None, "", id="logprobs-with-none-equal"),
    pytest.param(
        [None, -0.18, -2.94],
        [None, -0.18000000000000002, -2.94],
        "$[1]",
        "float bits differ",
        id="logprobs-with-none",
    ),
    pytest.param([0.0, 0], [-0.0, 0], "$[0]", "float bits differ", id="mixed-zero-sign"),
    pytest.param([0, 0.0], [False, 0.0], "$[0]", "type differs: bool instead of int", id="mixed-int-vs-bool"),
    pytest.param([[1.0, 2.0], [3.0]], [[1.0], [2.0, 3.0]], "$[0]", "length differs", id="ragged-rows-not-flattened"),
    pytest.param([[0.0, 1.0]], [[-0.0, 1.0]], "$[0][0]", "float bits differ", id="nested-zero-sign"),
    pytest.param([[1, True]], [[1, 1]], "$[0][1]", "type differs: int instead of bool", id="nested-bool"),
    pytest.param([(1, 2)], [[1, 2]], "$[0]", "type differs: list instead of tuple", id="nested-tuple-vs-list"),
    pytest.param([[[1.0] * 5] * 3, None], [[[1.0] * 5] * 3, None], None, "", id="top-k-rows-equal"),
    # array.array
    pytest.param(array("q", [1]), array("l", [1]), "$", "array typecode differs", id="array-q-vs-l"),
    pytest.param(array("q", [1, 2, 3]), array("q", [1, 2, 4]), "$[2]", "array item bits differ", id="array-values"),
    pytest.param(
        array("d", [1.0, -0.0]),
        array("d", [1.0, 0.0]),
        "$[1]",
        "array item bits differ",
        id="array-neg-zero",
    ),
    pytest.param(
        array("d", [NAN]),
        array("d", [NAN_PAYLOAD]),
        "$[0]",
        "array item bits differ",
        id="array-nan-payload",
    ),
    pytest.param(array("d", [NAN]), array("d", [NAN]), None, "", id="array-nan-equal"),
    pytest.param(array("q", [1]), array("q", [1, 2]), "$", "length differs: 2 instead of 1", id="array-length"),
    # torch.Tensor
    pytest.param(torch.zeros(2), torch.zeros(2, dtype=torch.float64), "$", "tensor dtype differs", id="tensor-dtype"),
    pytest.param(torch.zeros(0, 3), torch.zeros(3, 0), "$", "tensor shape differs", id="tensor-shape-0x3-vs-3x0"),
    pytest.param(torch.zeros(0, 3), torch.zeros(0), "$", "tensor shape differs", id="tensor-shape-0x3-vs-0"),
    pytest.param(torch.zeros(3, 0), torch.zeros(0), "$", "tensor shape differs", id="tensor-shape-3x0-vs-0"),
    pytest.param(torch.zeros(()), torch.zeros(1), "$", "tensor shape differs", id="tensor-0d-vs-1"),
    pytest.param(torch.zeros(0, 3), torch.zeros(0, 3), None, "", id="tensor-empty-equal"),
    pytest.param(torch.tensor(1.5), torch.tensor(1.5), None, "", id="tensor-0d-equal"),
    pytest.param(torch.tensor(1.5), torch.tensor(2.5), "$", "tensor values differ at []", id="tensor-0d-values"),
    pytest.param(
        torch.zeros(2),
        torch.zeros(2, device="meta"),
        "$",
        "tensor device differs",
        id="tensor-device-cpu-vs-meta",
    ),
    pytest.param(torch.zeros(2, device="meta"), torch.zeros(2, device="meta"), None, "", id="tensor-meta-equal"),
    pytest.param(
        torch.zeros(2, requires_grad=True),
        torch.zeros(2),
        "$",
        "tensor requires_grad differs",
        id="tensor-requires-grad",
    ),
    pytest.param(
        torch.nn.Parameter(torch.zeros(2)),
        torch.zeros(2, requires_grad=True),
        "$",
        "type differs: torch.Tensor instead of",
        id="parameter-vs-tensor",
    ),
    pytest.param(
        torch.tensor([1.0, -0.0], dtype=torch.bfloat16),
        torch.tensor([1.0, 0.0], dtype=torch.bfloat16),
        "$",
        "tensor values differ at [1]",
        id="tensor-bf16-neg-zero",
    ),
    pytest.param(
        f32_tensor(0x7FC00000),
        f32_tensor(0x7FC00001),
        "$",
        "tensor values differ at [0]",
        id="tensor-nan-payload",
    ),
    pytest.param(f32_tensor(0x7FC00001), f32_tensor(0x7FC00001), None, "", id="tensor-nan-equal"),
    pytest.param(
        torch.arange(12, dtype=torch.int32).reshape(2, 2, 3),
        torch.arange(12, dtype=torch.int32).reshape(2, 2, 3).index_put(
            (torch.tensor(1), torch.tensor(0), torch.tensor(2)), torch.tensor(0, dtype=torch.int32)
        ),
        "$",
        "tensor values differ at [1, 0, 2]",
        id="tensor-values-index",
    ),
    pytest.param(_t.t(), _t.t().contiguous(), None, "", id="tensor-transposed-vs-contiguous"),
    # numpy
    pytest.param(
        np.arange(3, dtype="<i8"),
        np.arange(3, dtype=">i8"),
        "$",
        "ndarray dtype differs",
        id="ndarray-byte-order",
    ),
    pytest.param(
        np.zeros(2, dtype=[("a", "<i4")]),
        np.zeros(2, dtype=[("b", "<i4")]),
        "$",
        "ndarray dtype differs",
        id="ndarray-field-names",
    ),
    pytest.param(
        np.zeros(2, dtype=[("a", "<i4"), ("b", "<i2")]),
        np.zeros(2, dtype=[("a", "<i4"), ("b", ">i2")]),
        "$",
        "ndarray dtype differs",
        id="ndarray-field-byte-order",
    ),
    pytest.param(
        np.zeros(2, dtype=[("token", "<i8"), ("logprob", "<f4")]),
        np.zeros(2, dtype="|V12"),
        "$",
        "ndarray dtype differs: a structured dtype came back without its fields",
        id="ndarray-structured-to-void",
    ),
    pytest.param(np.zeros((0, 3)), np.zeros((3, 0)), "$", "ndarray shape differs", id="ndarray-shape"),
    pytest.param(np.array(1.5, dtype=np.float32), np.array([1.5], dtype=np.float32), "$", "ndarray shape differs: a scalar array came back as a one-element array", id="ndarray-scalar-to-1d"),
    pytest.param(np.array([1.0, 2.0]), np.array([1.0, 3.0]), "$", "ndarray values differ at [1]", id="ndarray-values"),
    pytest.param(np.array([NAN]), np.array([NEG_NAN]), "$", "ndarray values differ at [0]", id="ndarray-nan-sign"),
    pytest.param(np.array([NAN]), np.array([NAN]), None, "", id="ndarray-nan-equal"),
    pytest.param(
        np.array([1, "x"], dtype=object),
        np.array([1, b"x"], dtype=object),
        "$[1]",
        "type differs",
        id="ndarray-object-items",
    ),
    pytest.param(np.float16(-0.0), np.float16(0.0), "$", "numpy scalar bits differ", id="np-scalar-neg-zero"),
    pytest.param(
        np.datetime64(1, "s"),
        np.datetime64(1, "ms"),
        "$",
        "numpy scalar dtype differs",
        id="np-datetime-unit",
    ),
    pytest.param(np.float32(1.5), np.float32(1.5), None, "", id="np-scalar-equal"),
    # dicts
    pytest.param({"a": 1, "b": 2}, {"b": 2, "a": 1}, "$", "dict key order differs", id="dict-key-order"),
    pytest.param({1: "x"}, {"1": "x"}, "$", "dict keys differ: missing 1, unexpected '1'", id="dict-key-1-vs-str"),
    pytest.param({1: "x"}, {True: "x"}, "$", "dict keys differ: missing 1, unexpected True", id="dict-key-1-vs-true"),
    pytest.param({1: "x"}, {1.0: "x"}, "$", "dict keys differ", id="dict-key-1-vs-float"),
    pytest.param({0.0: "x"}, {-0.0: "x"}, "$", "dict keys differ", id="dict-key-zero-sign"),
    pytest.param({"a": [1]}, {"a": [1], "b": [2]}, "$", "dict keys differ: unexpected 'b'", id="dict-extra-key"),
    pytest.param(
        {"a": {"b": [0.5, 1]}},
        {"a": {"b": [0.5, 1.0]}},
        "$['a']['b'][1]",
        "type differs",
        id="dict-nested-path",
    ),
    pytest.param({1: "x"}, {1: "y"}, "$[1]", "str value differs", id="dict-int-key-path"),
    pytest.param(
        [{"type": "length", "n": 1}, None],
        [{"type": "length", "n": 1}, None],
        None,
        "",
        id="dict-rows-equal",
    ),
    pytest.param(
        [{"type": "stop", "n": 1}],
        [{"n": 1, "type": "stop"}],
        "$[0]",
        "dict key order differs",
        id="dict-rows-key-order",
    ),
    pytest.param(
        collections.defaultdict(list, a=[1]),
        collections.defaultdict(set, a=[1]),
        "$",
        "defaultdict default_factory differs",
        id="defaultdict-factory",
    ),
    pytest.param(collections.OrderedDict(a=1), {"a": 1}, "$", "type differs", id="ordereddict-vs-dict"),
    # sets
    pytest.param({1, 2, 3}, {3, 2, 1}, None, "", id="set-order-ignored"),
    pytest.param({1}, {True}, "$", "set members differ: missing 1, unexpected True", id="set-1-vs-true"),
    pytest.param({1.0}, {1}, "$", "set members differ", id="set-float-vs-int"),
    pytest.param({0.0}, {-0.0}, "$", "set members differ", id="set-zero-sign"),
    pytest.param({(1, 2.0)}, {(1, 2)}, "$", "set members differ", id="set-tuple-members"),
    pytest.param({1}, frozenset({1}), "$", "type differs: frozenset instead of set", id="set-vs-frozenset"),
    # enums
    pytest.param(Modality.IMAGE, 1, "$", "type differs: int instead of Modality", id="enum-vs-value"),
    pytest.param(Modality.IMAGE, Modality.VIDEO, "$", "enum member differs", id="enum-member"),
    pytest.param(Colour.RED, 1, "$", "type differs: int instead of Colour", id="intenum-vs-int"),
    pytest.param(Modality.AUDIO, Modality.AUDIO, None, "", id="enum-equal"),
    # structs and dataclasses
    pytest.param(
        Rows("a", [[1.0]]),
        RowsTwin("a", [[1.0]]),
        "$",
        "type differs: RowsTwin instead of Rows",
        id="struct-class",
    ),
    pytest.param(
        Rows("a", [[1.0, 2.0]]),
        Rows("a", [[1.0, -2.0]]),
        "$.rows[0][1]",
        "float bits differ",
        id="struct-field-path",
    ),
    pytest.param(Rows("a", [[1.0]]), Rows("b", [[2.0]]), "$.name", "str value differs", id="struct-first-field-first"),
    pytest.param(Point(1.0, [1, 2]), Point(1.0, [1, 3]), "$.y[1]", "int value differs", id="dataclass-field-path"),
    pytest.param(
        MultimodalDataItem(modality=Modality.IMAGE, model_specific_data={"pixel_values": torch.zeros(2, 3)}),
        MultimodalDataItem(
            modality=Modality.IMAGE, model_specific_data={"pixel_values": torch.zeros(2, 3, dtype=torch.float16)}
        ),
        "$.model_specific_data['pixel_values']",
        "tensor dtype differs",
        id="schema-dict-key-path",
    ),
    # first difference, depth first
    pytest.param([1.0, -0.0, "x"], [2.0, 0.0, "y"], "$[0]", "float bits differ", id="first-of-several"),
    pytest.param(
        [[1, [2, 3]], 4],
        [[1, [2, 9]], 5],
        "$[0][1][1]",
        "int value differs",
        id="depth-first-before-sibling",
    ),
]


@pytest.mark.parametrize("expected, actual, path, reason", CASES)
def test_compare(expected: Any, actual: Any, path: Optional[str], reason: str) -> None:
    check(compare(expected, actual), path, reason)


@pytest.mark.parametrize("expected, actual, path, reason", CASES)
def test_compare_strictest(expected: Any, actual: Any, path: Optional[str], reason: str) -> None:
    """Without normalisations the table holds too, except where a normalisation is the point."""
    strict = compare(expected, actual, normalisations=())
    if isinstance(expected, torch.Tensor) and not expected.is_contiguous():
        assert strict is not None  # the transposed case: see the normalisation tests
        return
    check(strict, path, reason)


def test_difference_mentions_nan_bits() -> None:
    difference = compare(NAN, NAN_PAYLOAD)
    assert "0x7ff8000000000001" in str(difference) and "0x7ff8000000000000" in str(difference)


def test_bf16_element_shown_with_bits() -> None:
    difference = compare(torch.tensor([-0.0], dtype=torch.bfloat16), torch.tensor([0.0], dtype=torch.bfloat16))
    assert str(difference) == "$: tensor values differ at [0]: got 0.0 (bits 0x0000), expected -0.0 (bits 0x8000)"


def test_tensor_device_is_shown_plainly() -> None:
    difference = compare(torch.zeros(2), torch.zeros(2, device="meta"))
    assert (difference.expected, difference.actual) == (torch.device("cpu"), torch.device("meta"))
    assert str(difference) == "$: tensor device differs: got meta, expected cpu"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_tensor_device_cuda_vs_cpu() -> None:
    expected = torch.arange(4.0, device="cuda:0")
    check(compare(expected, expected.cpu()), "$", "tensor device differs")
    check(compare(expected, expected.clone()), None, "")
    changed = expected.clone().index_fill(0, torch.tensor([2], device="cuda:0"), -1.0)
    check(compare(expected, changed), "$", "tensor values differ at [2]")


# --- the message under test, end to end -----------------------------------------


def test_reference_round_trip_is_equivalent() -> None:
    expected = samples.batch_token_id_output(8)
    codec = ReferenceCodec()
    assert compare(expected, codec.decode(codec.encode(samples.batch_token_id_output(8)))) is None


def test_pickle_and_reference_decode_equivalently() -> None:
    message = samples.batch_token_id_output(8)
    by_pickle = PickleCodec().decode(PickleCodec().encode(message))
    by_reference = ReferenceCodec().decode(ReferenceCodec().encode(message))
    assert_equivalent(by_pickle, by_reference, context="reference")


def test_message_path_names_the_field() -> None:
    expected = samples.batch_token_id_output(4)
    actual = samples.batch_token_id_output(4)
    actual.output_token_logprobs_val[0][1] = math.nextafter(actual.output_token_logprobs_val[0][1], math.inf)
    difference = compare(expected, actual)
    check(difference, "$.output_token_logprobs_val[0][1]", "float bits differ")


def test_message_tensor_path() -> None:
    expected = samples.batch_token_id_output(4)
    actual = samples.batch_token_id_output(4)
    actual.routed_experts[2] = actual.routed_experts[2].to(torch.int64)
    check(compare(expected, actual), "$.routed_experts[2]", "tensor dtype differs")


# --- rendering and assert_equivalent ----------------------------------------------


def test_str_is_one_line_got_then_expected() -> None:
    difference = compare({"output": [[0.5, -0.18]]}, {"output": [[0.5, -0.18000000000000002]]})
    assert str(difference) == "$['output'][0][1]: float bits differ: got -0.18000000000000002, expected -0.18"
    assert (difference.expected, difference.actual) == (-0.18, -0.18000000000000002)


def test_type_difference_line() -> None:
    assert str(compare((1, 2), [1, 2])) == "$: type differs: list instead of tuple: got [1, 2], expected (1, 2)"


def test_assert_equivalent_message() -> None:
    with pytest.raises(AssertionError) as info:
        assert_equivalent(Rows("a", [[1.0, 2.0]]), Rows("a", [[1.0, -2.0]]), context="reference")
    message = str(info.value)
    assert message.startswith("$.rows[0][1]: float bits differ: ")
    assert "got -2.0" in message and "expected 2.0" in message
    assert message.endswith("[reference]")


def test_assert_equivalent_passes_silently() -> None:
    assert_equivalent([1.0, {"a": (1,)}], [1.0, {"a": (1,)}], context="reference")


def test_assert_equivalent_takes_normalisations() -> None:
    with pytest.raises(AssertionError, match="tensor strides differ"):
        assert_equivalent(_t.t(), _t.t().contiguous(), normalisations=())


def test_huge_values_are_shown_short() -> None:
    difference = compare(torch.zeros(1000, 1000), list(range(10_000)))
    line = str(difference)
    assert len(line) < 400, line
    assert "tensor(shape=[1000, 1000], dtype=float32, device=cpu)" in line
    long_text = compare("x" * 10_000 + "a", "x" * 10_000 + "b")
    assert long_text.reason == "str value differs from index 10000"
    assert len(str(long_text)) < 400


def test_difference_is_frozen() -> None:
    difference = compare(1, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        difference.path = "$.x"  # type: ignore[misc]


# --- depth -------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [10, 300, 5000])
def test_deep_nesting_is_iterative(depth: int) -> None:
    assert compare(nested(depth, 1.0), nested(depth, 1.0)) is None
    difference = compare(nested(depth, {"k": 1.0}), nested(depth, {"k": -1.0}))
    check(difference, "$" + "[0]" * depth + "['k']", "float bits differ")


def test_deep_value_in_a_type_difference_is_shown_short() -> None:
    difference = compare(nested(5000, 1), tuple(nested(4999, 1)))
    assert len(str(difference)) < 400


# --- normalisations ---------------------------------------------------------------

_from_numpy = torch.from_numpy(np.arange(4.0))
_read_only = np.arange(4.0)
_read_only.flags.writeable = False

LAYOUT_CASES = [
    # (expected, actual, the normalisations it needs, the strict reason)
    pytest.param(_t.t(), _t.t().contiguous(), (CONTIGUOUS_TENSOR,), "tensor strides differ", id="tensor-transposed"),
    pytest.param(
        torch.tensor([1.0, 2.0]).expand(3, 2),
        torch.tensor([1.0, 2.0]).expand(3, 2).contiguous(),
        (CONTIGUOUS_TENSOR,),
        "tensor strides differ",
        id="tensor-expanded-stride-0",
    ),
    pytest.param(
        torch.arange(10.0)[3:6],
        torch.arange(3.0, 6.0),
        (CONTIGUOUS_TENSOR,),
        "tensor storage offset differs",
        id="tensor-storage-offset",
    ),
    pytest.param(
        torch.tensor([1 + 2j]).conj(),
        torch.tensor([1 - 2j]),
        (CONTIGUOUS_TENSOR,),
        "tensor conjugate view bit differs",
        id="tensor-conj-view",
    ),
    pytest.param(
        _from_numpy,
        _from_numpy.clone(),
        (NDARRAY_WRITEABLE,),
        "tensor storage ownership differs",
        id="tensor-borrowed-storage",
    ),
    pytest.param(
        np.asfortranarray(np.arange(6.0).reshape(2, 3)),
        np.arange(6.0).reshape(2, 3).copy(),
        (CONTIGUOUS_NDARRAY,),
        "ndarray strides differ",
        id="ndarray-fortran",
    ),
    pytest.param(
        np.arange(10)[::2],
        np.arange(0, 10, 2),
        (CONTIGUOUS_NDARRAY, NDARRAY_WRITEABLE),
        "ndarray strides differ",
        id="ndarray-sliced-view",
    ),
    pytest.param(np.arange(4.0), _read_only, (NDARRAY_WRITEABLE,), "ndarray flags differ", id="ndarray-read-only"),
]


@pytest.mark.parametrize("expected, actual, needed, strict_reason", LAYOUT_CASES)
def test_normalisation_makes_the_case_pass(expected: Any, actual: Any, needed: tuple, strict_reason: str) -> None:
    check(compare(expected, actual), None, "")
    check(compare(expected, actual, normalisations=needed), None, "")
    check(compare(expected, actual, normalisations=()), "$", strict_reason)


@pytest.mark.parametrize("expected, actual, needed, strict_reason", LAYOUT_CASES)
def test_each_needed_normalisation_is_necessary(expected: Any, actual: Any, needed: tuple, strict_reason: str) -> None:
    for left_out in needed:
        others = tuple(n for n in DEFAULT_NORMALISATIONS if n is not left_out)
        assert compare(expected, actual, normalisations=others) is not None, left_out


@pytest.mark.parametrize("expected, actual, needed, strict_reason", LAYOUT_CASES)
def test_normalisations_hold_inside_containers(expected: Any, actual: Any, needed: tuple, strict_reason: str) -> None:
    check(compare({"x": [expected]}, {"x": [actual]}, normalisations=()), "$['x'][0]", strict_reason)
    check(compare({"x": [expected]}, {"x": [actual]}, normalisations=needed), None, "")


def test_transposed_tensor_is_a_difference_without_normalisations() -> None:
    check(compare(_t.t(), _t.t().contiguous(), normalisations=()), "$", "tensor strides differ")


def test_normalisation_only_excuses_arriving_contiguous() -> None:
    # a codec that makes a contiguous tensor non-contiguous is not normalising anything
    check(compare(_t, _t.t().contiguous().t()), "$", "tensor strides differ")
    c_order = np.arange(6.0).reshape(2, 3)
    check(compare(c_order, np.asfortranarray(c_order)), "$", "ndarray strides differ")
    check(compare(_t.t(), _t.contiguous().t().contiguous().t().contiguous()), "$", "tensor shape differs")


def test_normalisation_never_hides_values() -> None:
    changed = _t.t().contiguous()
    changed[0, 0] = -1.0
    check(compare(_t.t(), changed), "$", "tensor values differ at [0, 0]")
    check(compare(np.asfortranarray(np.ones((2, 2))), np.zeros((2, 2))), "$", "ndarray values differ at [0, 0]")


def test_default_normalisations_are_listed_with_reasons() -> None:
    assert DEFAULT_NORMALISATIONS == (CONTIGUOUS_TENSOR, CONTIGUOUS_NDARRAY, NDARRAY_WRITEABLE)
    assert [n.name for n in DEFAULT_NORMALISATIONS] == ["contiguous_tensor", "contiguous_ndarray", "ndarray_writeable"]
    assert dict(NORMALISATIONS) == {n.name: n for n in DEFAULT_NORMALISATIONS}
    for normalisation in DEFAULT_NORMALISATIONS:
        assert isinstance(normalisation, Normalisation)
        assert normalisation.reason.strip(), normalisation
        assert normalisation.aspect in ("tensor layout", "ndarray layout", "buffer flags")
        assert callable(normalisation.permits)
        assert f"``{normalisation.name}``" in equivalence.__doc__  # the contract documents it


@pytest.mark.parametrize("bad", ["contiguous_tensor", CONTIGUOUS_TENSOR, ["contiguous_tensor"], 5, [None]])
def test_normalisations_argument_is_validated(bad: Any) -> None:
    with pytest.raises(TypeError, match="normalisations"):
        compare(1, 1, normalisations=bad)


def test_unknown_aspect_is_refused() -> None:
    odd = Normalisation(name="odd", aspect="float bits", reason="none", permits=lambda e, a: True)
    with pytest.raises(ValueError, match="unknown aspect"):
        compare(1.0, -1.0, normalisations=(odd,))


@pytest.mark.filterwarnings("ignore:.*quantized tensor creation functions.*:UserWarning")
def test_quantized_tensors_have_no_rule() -> None:
    q = torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.qint8)
    with pytest.raises(TypeError, match="quantized"):
        compare(q, q.clone())


# --- the fast paths agree with the walk ------------------------------------------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, NAN, NAN_PAYLOAD, NEG_NAN]),
    st.text(max_size=5),
    st.binary(max_size=5),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.one_of(st.text(max_size=4), st.integers(-3, 3)), inner, max_size=4),
    ),
    max_leaves=40,
)


def _leaf_paths(value: Any, path: str = "$") -> List[str]:
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _leaf_paths(v, f"{path}[{i}]")] or [path]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaf_paths(v, f"{path}[{k!r}]")] or [path]
    return [path]


def _other(value: Any) -> Any:
    """A value that is not equivalent to ``value``."""
    if type(value) is float:
        return struct.unpack("<d", bytes(a ^ b for a, b in zip(struct.pack("<d", value), b"\0" * 7 + b"\x80")))[0]
    if type(value) is bool:
        return not value
    if type(value) is int:
        return value + 1
    if value is None:
        return 0
    if type(value) is tuple:
        return list(value)
    if type(value) is str:
        return value + "x"
    if type(value) is bytes:
        return value + b"x"
    return None  # a container: replaced by None, a type difference


def _replace(value: Any, index: int, counter: List[int]) -> Any:
    """``value`` with its ``index``-th leaf (in _leaf_paths order) replaced by ``_other`` of it."""
    if isinstance(value, list) and value:
        return [_replace(v, index, counter) for v in value]
    if isinstance(value, dict) and value:
        return {k: _replace(v, index, counter) for k, v in value.items()}
    counter[0] += 1
    return _other(value) if counter[0] - 1 == index else value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_values, st.data())
def test_walk_finds_exactly_the_changed_leaf(value: Any, data: st.DataObject) -> None:
    assert compare(value, pickle.loads(pickle.dumps(value))) is None
    paths = _leaf_paths(value)
    index = data.draw(st.integers(0, len(paths) - 1), label="leaf")
    changed = _replace(value, index, [0])
    difference = compare(value, changed)
    assert difference is not None, paths[index]
    assert difference.path == paths[index], (str(difference), paths[index])


# --- the bulk path agrees with the walk ------------------------------------------


def _walk_only(expected: Any, actual: Any) -> Optional[Difference]:
    """``compare`` with the bulk comparison of builtin subtrees switched off."""
    walk = equivalence._Walk(equivalence._by_aspect(DEFAULT_NORMALISATIONS))
    walk.bulk = False
    found = walk.run(expected, actual)
    return found[0] if found else None


def _same_verdict(expected: Any, actual: Any) -> None:
    fast, slow = compare(expected, actual), _walk_only(expected, actual)
    assert (fast is None) == (slow is None), (fast, slow)
    if fast is not None:
        assert (fast.path, fast.reason) == (slow.path, slow.reason)


_members = st.one_of(st.integers(-2, 9), st.sampled_from([0.0, -0.0, 1.0, NAN]), st.booleans())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.recursive(
        st.one_of(_scalars, st.frozensets(_members, max_size=3), st.sets(_members, max_size=3)),
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.lists(inner, max_size=3).map(tuple),
            st.dictionaries(st.one_of(st.text(max_size=3), st.integers(-2, 2), st.booleans()), inner, max_size=3),
        ),
        max_leaves=30,
    ),
    st.data(),
)
def test_bulk_path_agrees_with_the_walk(value: Any, data: st.DataObject) -> None:
    _same_verdict(value, pickle.loads(pickle.dumps(value)))
    other = data.draw(_values, label="other")
    _same_verdict(value, other)
    paths = _leaf_paths(value)
    index = data.draw(st.integers(0, len(paths) - 1), label="leaf")
    _same_verdict(value, _replace(value, index, [0]))


def test_set_iteration_order_is_not_compared_in_bulk() -> None:
    first, second = {8}, {16}
    first.add(16)
    second.add(8)
    assert list(first) != list(second)  # same members, other iteration order (hash collision)
    assert compare([first, 1.0], [second, 1.0]) is None
    assert compare({"s": first}, {"s": second}) is None


def test_sharing_is_not_compared() -> None:
    shared = [1.0, {"a": 2}]
    assert compare([shared, shared], [[1.0, {"a": 2}], [1.0, {"a": 2}]]) is None
    assert compare([[1.0, {"a": 2}], [1.0, {"a": 2}]], [shared, shared]) is None


def test_cycles_terminate() -> None:
    cyclic: List[Any] = [1.0]
    cyclic.append(cyclic)
    assert compare(cyclic, pickle.loads(pickle.dumps(cyclic))) is None
    other: List[Any] = [-1.0]
    other.append(other)
    check(compare(cyclic, other), "$[0]", "float bits differ")


# --- every difference, not only the first ----------------------------------------


def test_differences_reports_each_bug_of_one_message_and_starts_with_compare():
    expected = {"a": (1, 2), "b": [1.0, -0.0], "t": torch.zeros(2, requires_grad=True)}
    actual = {"a": [1, 2], "b": [1.0, 0.0], "t": torch.zeros(2)}
    found = equivalence.differences(expected, actual)
    assert [(d.path, d.reason) for d in found] == [
        ("$['a']", "type differs: list instead of tuple"),
        ("$['b'][1]", "float bits differ"),
        ("$['t']", "tensor requires_grad differs"),
    ]
    first = compare(expected, actual)
    assert (first.path, first.reason) == (found[0].path, found[0].reason)


def test_differences_lists_every_differing_aspect_of_a_tensor():
    found = equivalence.differences(torch.zeros(2, dtype=torch.float64, requires_grad=True), torch.zeros(3))
    assert [d.reason for d in found] == ["tensor dtype differs", "tensor shape differs", "tensor requires_grad differs"]


def test_differences_does_not_descend_below_a_difference_and_stops_at_its_limit():
    expected = [(i, (i,)) for i in range(10)]
    actual = [[i, [i]] for i in range(10)]
    found = equivalence.differences(expected, actual)
    assert [d.path for d in found] == [f"$[{i}]" for i in range(10)]  # the tuples inside are not reported again
    assert len(equivalence.differences(expected, actual, limit=3)) == 3
    assert equivalence.differences(expected, expected) == []
    with pytest.raises(ValueError, match="limit must be a positive int"):
        equivalence.differences(expected, actual, limit=0)


def test_a_difference_has_its_path_shape_with_indices_and_keys_folded():
    found = equivalence.differences({"k": [[0.0, 1.0]]}, {"k": [[0.0, 2.0]]})
    assert (found[0].path, found[0].path_shape) == ("$['k'][0][1]", "$[*][*][*]")
    base = samples.minimal(s.BatchStrOutput)
    (d,) = equivalence.differences(msgspec.structs.replace(base, rids=["a"]), msgspec.structs.replace(base, rids=["b"]))
    assert (d.path, d.path_shape) == ("$.rids[0]", "$.rids[*]")


# --- mappings that are not dicts, objects without __eq__, registered rules ---------


class _Items(collections.UserDict):
    """A UserDict subclass, as an engine's multimodal item is."""


class _Plain:
    """No value ``__eq__``: only identity, by Python's rules."""

    def __init__(self, result, note=""):
        self.result = result
        self.note = note


class _Slotted:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y


class _Cached:
    def __init__(self, value):
        self.value = value
        self.cache = object()  # not part of the value

    def __eq__(self, other):  # pragma: no cover - the registered rule is used instead
        raise AssertionError("the contract must not call this")


def test_a_mapping_that_is_not_a_dict_is_compared_as_one_with_its_class():
    assert compare(_Items(a=torch.ones(2), b=(1,)), _Items(a=torch.ones(2), b=(1,))) is None
    d = compare(_Items(a=torch.ones(2, requires_grad=True)), _Items(a=torch.ones(2)))
    assert (d.path, d.reason) == ("$['a']", "tensor requires_grad differs")  # UserDict's own == raises on tensors
    assert compare(_Items(a=1), collections.UserDict(a=1)).reason.startswith("type differs")
    assert compare(_Items(a=1, b=2), _Items(b=2, a=1)).reason == "dict key order differs"


def test_objects_without_eq_compare_by_their_attributes():
    assert compare(_Plain([1.0, -0.0]), _Plain([1.0, -0.0])) is None  # equal values, other identities
    d = compare(_Plain([1.0, -0.0]), _Plain([1.0, 0.0]))
    assert (d.path, d.reason) == ("$.result[1]", "float bits differ")
    assert compare(_Slotted(1, (2,)), _Slotted(1, [2])).path == "$.y"
    extra = _Plain(1)
    extra.more = 2
    assert compare(_Plain(1), extra).reason == "attributes differ: unexpected ['more']"
    assert compare(torch.float32, torch.float32) is None and compare(torch.float32, torch.float64) is not None
    f, g = (lambda: 1), (lambda: 1)
    assert compare(f, f) is None and compare(f, g) is not None  # nothing to compare: identity only


def test_a_registered_rule_compares_what_it_projects():
    equivalence.register_rule(_Cached, lambda c: c.value)
    try:
        assert compare(_Cached((1, 2)), _Cached((1, 2))) is None
        d = compare(_Cached((1, 2)), _Cached([1, 2]))
        assert (d.path, d.reason) == ("$", "type differs: list instead of tuple")
        assert compare(_Cached(1), _Plain(1)).reason.startswith("type differs")
    finally:
        equivalence._PROJECTIONS.pop(_Cached, None)
        equivalence._HANDLERS.pop(_Cached, None)
    with pytest.raises(ValueError, match="fixed rule"):
        equivalence.register_rule(list, list)
    with pytest.raises(TypeError, match="callable"):
        equivalence.register_rule(_Cached, None)
