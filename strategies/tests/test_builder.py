"""The generic builder, driven by structs that are not the reference schema's."""

from __future__ import annotations

import datetime
import enum
import uuid
from array import array
from typing import Any, Dict, FrozenSet, List, Literal, Optional, Set, Tuple, Union

import hypothesis.strategies as st
import msgspec
import numpy as np
import pytest
import torch
from hypothesis import Phase, find, given, settings
from hypothesis.errors import InvalidArgument
from msgspec import Meta
from typing_extensions import Annotated

import strategies
from reference_codec.schema import INT64_MAX, INT64_MIN, MESSAGE_TYPES, NESTED_TYPES, UINT64_MAX, Int64, Int128

from ._helpers import generates


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Inner(msgspec.Struct, tag="inner"):
    x: int
    y: Optional[str] = None


class Other(msgspec.Struct, tag="other"):
    z: float


class Constrained(msgspec.Struct, kw_only=True):
    small: Annotated[int, Meta(ge=-3, le=3)]
    positive: Annotated[int, Meta(gt=0, lt=10)]
    even: Annotated[int, Meta(ge=0, le=100, multiple_of=2)]
    big: Annotated[int, Meta(ge=0, extra={"max": UINT64_MAX})]
    plain: int
    prob: Annotated[float, Meta(ge=0.0, le=1.0)]
    name: Annotated[str, Meta(min_length=2, max_length=5)]
    code: Annotated[str, Meta(pattern="^[a-z]{3}$")]
    blob: Annotated[bytes, Meta(max_length=4)]
    items: Annotated[List[int], Meta(min_length=1, max_length=2)]


class Shapes(msgspec.Struct, kw_only=True):
    lit: Literal["a", "b"]
    color: Color
    choice: Union[Inner, Other]
    maybe: Optional[Inner] = None
    by_color: Dict[Color, int] = {}
    by_int: Dict[int, str] = {}
    tags: Set[str] = set()
    frozen: FrozenSet[int] = frozenset()
    pair: Tuple[int, str] = (0, "")
    many: Tuple[int, ...] = ()
    when: Optional[datetime.datetime] = None
    ident: Optional[uuid.UUID] = None


class Customs(msgspec.Struct):
    arr: array
    t: torch.Tensor
    nd: np.ndarray
    big: Int128
    anything: object
    untyped: Any


class Node(msgspec.Struct):
    value: int
    children: List["Node"] = []
    next: Optional["Node"] = None


class ForeignBatch(msgspec.Struct, tag=True, array_like=True):
    rids: Optional[List[str]] = None
    scores: List[float] = []
    names: Optional[List[str]] = None
    single: Optional[int] = None


class Opaque:
    """A class Hypothesis cannot build on its own (an untyped required argument)."""

    def __init__(self, handle):
        self.handle = handle


class HasOpaque(msgspec.Struct):
    thing: Opaque


def _validates(value, cls) -> None:
    """msgspec itself agrees that ``value`` satisfies every constraint of ``cls``."""
    msgspec.msgpack.decode(msgspec.msgpack.encode(value), type=cls)


@given(strategies.from_struct(Constrained))
def test_meta_constraints_are_honoured(v):
    _validates(v, Constrained)
    assert -3 <= v.small <= 3 and 0 < v.positive < 10 and v.even % 2 == 0 and 0 <= v.even <= 100
    assert 0 <= v.big <= UINT64_MAX
    assert INT64_MIN <= v.plain <= INT64_MAX
    assert 0.0 <= v.prob <= 1.0
    assert 2 <= len(v.name) <= 5 and len(v.blob) <= 4 and 1 <= len(v.items) <= 2


def test_uint64_bound_from_meta_extra_is_reached():
    generates(strategies.from_struct(Constrained), lambda v: {"past int64"} if v.big > INT64_MAX else set(), {"past int64"})


def test_unions_literals_enums_and_optionals_take_every_value():
    def labels(v: Shapes):
        return {v.lit, v.color.name, type(v.choice).__name__, "maybe None" if v.maybe is None else "maybe set"}

    generates(strategies.from_struct(Shapes), labels, {"a", "b", "RED", "GREEN", "Inner", "Other", "maybe None", "maybe set"})


@given(strategies.from_struct(Shapes))
def test_dict_keys_sets_and_tuples_keep_their_declared_types(v):
    assert all(isinstance(k, Color) for k in v.by_color) and all(type(k) is int for k in v.by_int)
    assert type(v.tags) is set and type(v.frozen) is frozenset
    assert type(v.pair) is tuple and type(v.pair[0]) is int and type(v.pair[1]) is str
    assert type(v.many) is tuple and all(type(x) is int for x in v.many)
    back = msgspec.msgpack.decode(msgspec.msgpack.encode(v), type=Shapes)
    assert (back.tags, back.frozen, back.pair, back.many, back.by_color) == (v.tags, v.frozen, v.pair, v.many, v.by_color)


def test_defaulted_fields_are_sometimes_left_at_their_default_and_sometimes_not():
    def labels(v: Shapes):
        return {"tags default" if v.tags == set() else "tags set", "pair default" if v.pair == (0, "") else "pair set"}

    generates(strategies.from_struct(Shapes), labels, {"tags default", "tags set", "pair default", "pair set"})


def test_custom_types_get_values_of_their_class_including_int128_beyond_64_bits():
    def labels(v: Customs):
        assert type(v.arr) is array and type(v.t) is torch.Tensor and type(v.nd) is np.ndarray and type(v.big) is Int128
        return {"int128 beyond 64 bits"} if abs(v.big) > UINT64_MAX else set()

    generates(strategies.from_struct(Customs), labels, {"int128 beyond 64 bits"})


def test_a_custom_type_without_a_strategy_is_refused_at_call_time_naming_the_field():
    with pytest.raises(InvalidArgument, match=r"HasOpaque\.thing.*Opaque"):
        strategies.from_struct(HasOpaque)


def _depth(node: Node) -> int:
    children = [*node.children, *([node.next] if node.next is not None else [])]
    return 1 + max(map(_depth, children), default=0)


@given(strategies.from_struct(Node))
def test_recursive_structs_terminate_within_the_depth_bound(node):
    assert _depth(node) <= strategies.builder.MAX_DEPTH


@given(
    strategies.from_struct(
        Constrained,
        overrides={"name": st.just("ok"), "plain": lambda ctx: st.just(ctx.values["small"] * 10)},
    )
)
def test_overrides_replace_fields_and_override_factories_see_earlier_siblings(v):
    assert v.name == "ok"
    assert v.plain == v.small * 10


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda: strategies.from_struct(dict), "cls"),
        (lambda: strategies.from_struct(Constrained, overrides={"nope": st.just(1)}), "overrides"),
        (lambda: strategies.from_struct(Constrained, overrides={"name": 3}), "overrides"),
        (lambda: strategies.from_struct(Constrained, registry={}), "registry"),
        (lambda: strategies.from_struct(Constrained, surrogates=1), "surrogates"),
        (lambda: strategies.from_struct(Constrained, batch_field=3), "batch_field"),
        (lambda: strategies.from_annotation(3.5), "annotation"),
    ],
)
def test_builder_arguments_are_validated_at_call_time_naming_the_argument(call, argument):
    with pytest.raises(InvalidArgument, match=argument):
        call()


def test_a_registry_factory_applies_by_name_sees_the_batch_size_and_may_decline():
    registry = strategies.SemanticRegistry()

    @registry.register("sco*")
    def scores(ctx):
        if ctx.batch_size is None:
            return None
        return st.just([float(i) for i in range(ctx.batch_size)])

    registry.register("single", lambda ctx: None)  # declines: the type-driven default applies

    def labels(v: ForeignBatch):
        assert v.scores == [float(i) for i in range(len(v.scores))]
        return {"single None" if v.single is None else "single set", "batch" if v.scores else "empty"}

    generates(strategies.from_struct(ForeignBatch, registry=registry), labels, {"single None", "single set", "batch", "empty"})
    assert "sco*" in repr(registry) and len(registry) == 2


def test_a_factory_returning_a_non_strategy_fails_naming_factory_and_field():
    registry = strategies.SemanticRegistry()
    registry.register("single", lambda ctx: 5)
    with pytest.raises(InvalidArgument, match=r"ForeignBatch\.single"):
        find(strategies.from_struct(ForeignBatch, registry=registry), lambda v: True, settings=settings(database=None))


@given(strategies.from_struct(ForeignBatch))
def test_every_list_of_a_foreign_batch_struct_has_one_entry_per_request(v):
    n = len(v.scores)
    assert v.rids is None or len(v.rids) == n
    assert v.names is None or len(v.names) == n
    assert v.rids is None or len(set(v.rids)) == n


@given(strategies.from_annotation(List[Optional[Int64]]))
def test_from_annotation_generates_any_msgspec_type(values):
    assert all(x is None or INT64_MIN <= x <= INT64_MAX for x in values)


@pytest.mark.parametrize("cls", [*MESSAGE_TYPES.values(), *NESTED_TYPES], ids=lambda c: c.__name__)
def test_from_type_is_registered_for_every_schema_type(cls):
    value = find(st.from_type(cls), lambda v: True, settings=settings(database=None, phases=[Phase.generate]))
    assert type(value) is cls


def test_from_struct_repr_names_the_class():
    assert repr(strategies.from_struct(Shapes)) == "from_struct(cls=Shapes)"
    assert repr(strategies.from_struct(Shapes, surrogates=True)) == "from_struct(cls=Shapes, surrogates=True)"
