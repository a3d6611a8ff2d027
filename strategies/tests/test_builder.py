"""The generic builder, driven by structs that are not the reference schema's."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import uuid
from array import array
from typing import Any, Dict, FrozenSet, List, Literal, NamedTuple, Optional, Set, Tuple, Union

import hypothesis.strategies as st
import msgspec
import numpy as np
import pytest
import torch
from hypothesis import Phase, find, given, settings
from hypothesis.errors import InvalidArgument, NoSuchExample
from msgspec import Meta
from typing_extensions import Annotated

import strategies
from reference_codec.schema import INT64_MAX, INT64_MIN, MESSAGE_TYPES, NESTED_TYPES, UINT64_MAX, Int64, Int128

from ._helpers import generates, walk


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


class Untyped(msgspec.Struct):
    bare: dict
    any_keys: Dict[Any, int]
    object_keys: Dict[object, int]
    items: set
    frozen: FrozenSet[Any]


class Leaf(msgspec.Struct):
    x: int
    y: str = ""


class Mid(msgspec.Struct):
    leaves: List[Leaf] = []


class Paths(msgspec.Struct, kw_only=True):
    one: Optional[Leaf] = None
    many: List[Leaf] = []
    named: Dict[str, Leaf] = {}
    pair: Optional[Tuple[int, Leaf]] = None
    deep: Optional[Mid] = None
    other: Optional[Leaf] = None  # the same class under a field no path names


class DeepOpaque(msgspec.Struct):
    items: List[Optional[HasOpaque]]


@dataclasses.dataclass
class Range:
    """Validates in ``__post_init__``: only a strategy that knows that draws instances."""

    lo: int
    hi: int

    def __post_init__(self):
        if self.lo > self.hi:
            raise ValueError("lo > hi")


class HasRanges(msgspec.Struct):
    first: Range
    more: List[Optional[Range]] = []


@dataclasses.dataclass
class Record:
    n: Annotated[int, Meta(ge=0, le=9)]
    leaf: Optional[Leaf] = None
    tags: List[str] = dataclasses.field(default_factory=list)
    computed: int = dataclasses.field(default=-1, init=False)


class Pair(NamedTuple):
    a: Annotated[int, Meta(ge=0, le=9)]
    b: str = "b"


class HoldsRecords(msgspec.Struct):
    record: Record
    pairs: List[Pair] = []


@dataclasses.dataclass
class RecordWithOpaque:
    thing: Opaque


class Untypeds(msgspec.Struct):
    anything: object
    untyped: Any
    listed: List[Any]
    by_name: Dict[str, Any]
    nested: Optional[Inner] = None


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


@given(strategies.from_struct(Untyped))
def test_untyped_dict_keys_and_set_items_are_hashable_str_or_int64(v):
    for keys in (v.bare, v.any_keys, v.object_keys, v.items, v.frozen):
        assert all(type(k) is str or (type(k) is int and INT64_MIN <= k <= INT64_MAX) for k in keys)


def test_untyped_dicts_and_sets_are_drawn_non_empty():
    def labels(v: Untyped):
        return {name for name in ("bare", "any_keys", "object_keys", "items", "frozen") if getattr(v, name)}

    generates(strategies.from_struct(Untyped), labels, {"bare", "any_keys", "object_keys", "items", "frozen"})


_EVERY_PATH = {"one.x": st.just(7), "many.x": st.just(7), "named.x": st.just(7), "pair.x": st.just(7), "deep.leaves.x": st.just(7)}


def _leaves_under(v: Paths, *names: str) -> List[Leaf]:
    return [leaf for name in names for leaf in walk(getattr(v, name)) if isinstance(leaf, Leaf)]


@given(strategies.from_struct(Paths, overrides=_EVERY_PATH))
def test_a_path_override_applies_to_the_struct_under_that_field_through_optionals_lists_dicts_and_tuples(v):
    assert all(leaf.x == 7 for leaf in _leaves_under(v, "one", "many", "named", "pair", "deep"))


def test_a_path_override_leaves_the_same_class_under_another_field_alone():
    def labels(v: Paths):
        return {"under a path", *(["elsewhere, not overridden"] if any(leaf.x != 7 for leaf in _leaves_under(v, "other")) else [])}

    generates(strategies.from_struct(Paths, overrides=_EVERY_PATH), labels, {"under a path", "elsewhere, not overridden"})


@given(strategies.from_struct(Paths, overrides={"one.x": st.integers(0, 9), "one.y": lambda ctx: st.just(str(ctx.values["x"]))}))
def test_a_path_override_factory_sees_the_siblings_in_the_nested_struct(v):
    assert v.one is None or v.one.y in ("", str(v.one.x))


@pytest.mark.parametrize(
    "path, message",
    [
        ("nope", r"'nope' is not a field of Paths \(fields: one, many, named, pair, deep, other\)"),
        ("one.nope", r"'nope' is not a field of Leaf \(fields: x, y\)"),
        ("deep.leaves.z", r"'z' is not a field of Leaf"),
        ("one.x.z", r"'one\.x' holds no Struct.*'z'"),
        ("one.", r"'' is not a field of Leaf"),
    ],
)
def test_an_override_path_that_does_not_exist_is_refused_naming_the_segment_and_the_fields(path, message):
    with pytest.raises(InvalidArgument, match=message):
        strategies.from_struct(Paths, overrides={path: st.just(1)})


@pytest.mark.parametrize("keys", [("one", "one.x"), ("one.x", "one")], ids=["field first", "path first"])
def test_an_override_of_a_field_and_of_a_path_below_it_is_refused(keys):
    with pytest.raises(InvalidArgument, match="both 'one' and a path below it"):
        strategies.from_struct(Paths, overrides={key: st.none() for key in keys})


_OPAQUE = st.builds(Opaque, st.integers(0, 9))


@given(strategies.from_struct(DeepOpaque, overrides={Opaque: _OPAQUE}))
def test_a_class_override_supplies_every_value_of_that_custom_class_at_any_depth(v):
    assert all(isinstance(h.thing, Opaque) and 0 <= h.thing.handle <= 9 for h in v.items if h is not None)


@pytest.mark.parametrize(
    "cls, overrides",
    [(HasOpaque, {"thing": _OPAQUE}), (DeepOpaque, {"items.thing": _OPAQUE})],
    ids=["by name", "by path"],
)
def test_a_field_overridden_by_name_or_path_needs_no_strategy_for_its_declared_class(cls, overrides):
    find(strategies.from_struct(cls, overrides=overrides), lambda v: True, settings=settings(database=None))


@given(strategies.from_struct(HasRanges, overrides={Range: st.builds(Range, lo=st.just(0), hi=st.integers(0, 5))}))
def test_a_class_override_draws_only_valid_instances_of_a_class_that_validates(v):
    assert all(r.lo == 0 <= r.hi <= 5 for r in (v.first, *v.more) if r is not None)


@given(strategies.from_struct(Shapes, overrides={Color: st.just(Color.GREEN), Inner: st.just(Inner(x=1))}))
def test_class_overrides_apply_to_enums_and_structs_in_unions_and_dict_keys(v):
    assert v.color is Color.GREEN and all(k is Color.GREEN for k in v.by_color)
    assert all(x == Inner(x=1) for x in (v.choice, v.maybe) if isinstance(x, Inner))


@given(strategies.from_annotation(List[Opaque], overrides={Opaque: _OPAQUE}))
def test_from_annotation_honours_class_overrides(values):
    assert all(isinstance(x, Opaque) for x in values)


@given(strategies.from_struct(Record))
def test_a_dataclass_root_is_drawn_with_its_constraints_and_init_false_fields_left_to_the_class(v):
    assert type(v) is Record and 0 <= v.n <= 9 and v.computed == -1
    assert v.leaf is None or type(v.leaf) is Leaf


@given(strategies.from_struct(Pair))
def test_a_namedtuple_root_is_drawn_with_its_constraints(v):
    assert type(v) is Pair and 0 <= v.a <= 9 and type(v.b) is str


def test_dataclass_and_namedtuple_fields_are_sometimes_left_at_their_default_and_sometimes_not():
    generates(strategies.from_struct(Record), lambda v: {"tags default" if v.tags == [] else "tags set"}, {"tags default", "tags set"})
    generates(strategies.from_struct(Pair), lambda v: {"b default" if v.b == "b" else "b set"}, {"b default", "b set"})


def test_dataclasses_and_namedtuples_take_overrides_and_the_registry_at_any_depth():
    registry = strategies.SemanticRegistry()
    registry.register("a", lambda ctx: st.just(3))
    strategy = strategies.from_struct(HoldsRecords, overrides={"record.n": st.just(5), "record.leaf.x": st.just(6)}, registry=registry)

    def labels(v: HoldsRecords):
        assert type(v.record) is Record and v.record.n == 5 and (v.record.leaf is None or v.record.leaf.x == 6)
        assert all(type(p) is Pair and p.a == 3 for p in v.pairs)
        return {"pairs" if v.pairs else "no pairs", "leaf" if v.record.leaf else "no leaf"}

    generates(strategy, labels, {"pairs", "leaf"})


def test_a_dataclass_with_a_custom_class_nobody_can_draw_is_refused_naming_the_class_and_field():
    with pytest.raises(InvalidArgument, match=r"RecordWithOpaque\.thing.*Opaque"):
        strategies.from_struct(RecordWithOpaque)


@given(strategies.from_struct(Untypeds, untyped=st.just("U")))
def test_untyped_replaces_every_any_and_object_value(v):
    assert v.anything == v.untyped == "U"
    assert all(x == "U" for x in v.listed) and all(x == "U" for x in v.by_name.values())


@given(strategies.from_annotation(Dict[str, List[Any]], untyped=st.just(0)))
def test_from_annotation_honours_untyped(value):
    assert all(x == 0 for xs in value.values() for x in xs)


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda: strategies.from_struct(dict), "cls"),
        (lambda: strategies.from_struct(Constrained, overrides={3: st.just(1)}), "overrides"),
        (lambda: strategies.from_struct(Constrained, overrides={int: st.just(1)}), "overrides"),
        (lambda: strategies.from_struct(Constrained, overrides={object: st.just(1)}), "overrides"),
        (lambda: strategies.from_struct(HasOpaque, overrides={Opaque: lambda ctx: _OPAQUE}), "overrides"),
        (lambda: strategies.from_struct(Constrained, untyped=3), "untyped"),
        (lambda: strategies.from_annotation(List[int], overrides={"x": st.just(1)}), "overrides"),
        (lambda: strategies.from_annotation(List[int], overrides=[]), "overrides"),
        (lambda: strategies.from_annotation(List[int], untyped=[]), "untyped"),
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

    generates(strategies.from_struct(ForeignBatch, registry=registry, batch_field="rids"), labels, {"single None", "single set", "batch", "empty"})
    assert "sco*" in repr(registry) and len(registry) == 2


def test_a_factory_returning_a_non_strategy_fails_naming_factory_and_field():
    registry = strategies.SemanticRegistry()
    registry.register("single", lambda ctx: 5)
    with pytest.raises(InvalidArgument, match=r"ForeignBatch\.single"):
        find(strategies.from_struct(ForeignBatch, registry=registry), lambda v: True, settings=settings(database=None))


@given(strategies.from_struct(ForeignBatch, batch_field="rids"))
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
    assert repr(strategies.from_struct(Paths, overrides={"one.x": st.just(7)})) == "from_struct(cls=Paths, overrides={'one.x': just(7)})"



class LooksLikeTheReference(msgspec.Struct):
    """A local struct whose field names the reference schema gives meaning to."""

    rids: Optional[List[str]] = None
    finish_reason: Optional[Dict[str, Any]] = None
    scores: List[float] = []
    extra: Any = None


def _reference_labels(v: LooksLikeTheReference) -> Set[str]:
    out = set()
    if v.rids is not None and len(v.rids) != len(v.scores):
        out.add("rids not a batch")
    if isinstance(v.finish_reason, dict) and v.finish_reason.get("type") in ("stop", "length", "abort"):
        out.add("finish meaning")
    if any(isinstance(x, enum.Enum) for x in walk(v.extra)):
        out.add("reference enum")
    return out


@given(strategies.from_struct(LooksLikeTheReference))
def test_from_struct_by_default_draws_no_reference_enum_in_untyped_values(v):
    assert not any(isinstance(x, enum.Enum) for x in walk(v.extra))


def test_from_struct_draws_no_reference_meaning_by_default():
    strategy = strategies.from_struct(LooksLikeTheReference)
    generates(strategy, _reference_labels, {"rids not a batch"})
    with pytest.raises(NoSuchExample):
        find(
            strategy,
            lambda v: "finish meaning" in _reference_labels(v),
            settings=settings(database=None, max_examples=300, phases=[Phase.generate]),
        )


def test_from_struct_draws_the_reference_meaning_with_the_pack():
    from strategies import reference

    for strategy in (strategies.from_struct(LooksLikeTheReference, **reference.OPTIONS), reference.reference_struct(LooksLikeTheReference)):
        generates(strategy, _reference_labels, {"finish meaning", "reference enum"}, max_examples=1000)
        with pytest.raises(NoSuchExample):
            find(
                strategy,
                lambda v: "rids not a batch" in _reference_labels(v),
                settings=settings(database=None, max_examples=300, phases=[Phase.generate]),
            )
