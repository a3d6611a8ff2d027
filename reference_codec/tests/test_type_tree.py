"""The one walker over msgspec.inspect type trees: every kind of node, recursion, pruning."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Dict, FrozenSet, List, NamedTuple, Optional, Set, Tuple, TypedDict, Union

import msgspec
import pytest
from msgspec import inspect as mi

from reference_codec import type_tree as tt
from reference_codec.type_tree import ARM, FIELD, INDEX, ITEM, KEY, VALUE, Step


class Leaf(msgspec.Struct, frozen=True):
    x: int


class Tree(msgspec.Struct):
    children: List["Tree"]
    leaf: Optional[Leaf] = None


@dataclasses.dataclass
class Row:
    leaf: Leaf


class Pair(NamedTuple):
    left: Leaf
    right: int


class Doc(TypedDict):
    leaf: Leaf


def _type_classes() -> List[type]:
    """Every concrete ``msgspec.inspect`` node class this msgspec defines."""
    found = [getattr(mi, name) for name in mi.__all__]
    return [c for c in found if isinstance(c, type) and issubclass(c, mi.Type) and c not in (mi.Type, mi.Metadata)]


def _example(cls: type) -> Tuple[mi.Type, List[mi.Type]]:
    """An instance of node class ``cls`` with a distinct child in every Type-valued slot, and those children in order."""
    kwargs: Dict[str, Any] = {}
    held: List[mi.Type] = []
    for f in msgspec.structs.fields(cls):
        if f.type is mi.Type:
            kwargs[f.name] = mi.IntType(ge=len(held))
            held.append(kwargs[f.name])
        elif f.type == Tuple[mi.Type, ...]:
            kwargs[f.name] = (mi.IntType(ge=len(held)), mi.IntType(ge=len(held) + 1))
            held.extend(kwargs[f.name])
        elif f.type == Tuple[mi.Field, ...]:
            kwargs[f.name] = tuple(mi.Field(n, n, mi.IntType(ge=len(held) + i)) for i, n in enumerate("ab"))
            held.extend(x.type for x in kwargs[f.name])
        elif f.name == "cls":
            kwargs[f.name] = Leaf
        elif f.required:
            kwargs[f.name] = ()
    return cls(**kwargs), held


@pytest.mark.parametrize("cls", _type_classes(), ids=lambda c: c.__name__)
def test_every_msgspec_node_class_yields_each_type_it_holds_as_a_child_in_order(cls):
    node, held = _example(cls)
    assert [child for _, child in tt.children(node)] == held


@pytest.mark.parametrize(
    "annotation",
    [List[Leaf], Tuple[Leaf, ...], Set[Leaf], FrozenSet[Leaf], Annotated[Set[Leaf], msgspec.Meta(extra={"why": "test"})]],
    ids=["list", "vartuple", "set", "frozenset", "annotated-set"],
)
def test_every_collection_kind_holds_one_item_child_its_element_and_its_structs_are_reachable(annotation):
    t = tt.type_info(annotation)
    assert tt.children(t) == ((Step(ITEM), tt.type_info(Leaf)),)
    assert tt.element_type(t) == tt.type_info(Leaf)

    holder = msgspec.defstruct("Holder", [("held", annotation)])
    assert tt.reachable_structs([holder]) == [holder, Leaf]


def test_only_sets_and_frozensets_are_sets():
    assert tt.is_set(tt.type_info(Set[int])) and tt.is_set(tt.type_info(Annotated[FrozenSet[int], msgspec.Meta(max_length=2)]))
    assert not any(tt.is_set(tt.type_info(a)) for a in (List[int], Tuple[int, ...], Dict[int, int], Tuple[int]))


def test_any_and_object_are_untyped_through_metadata_and_nothing_else_is():
    assert tt.is_untyped(tt.type_info(Any)) and tt.is_untyped(tt.type_info(object))
    assert tt.is_untyped(tt.type_info(Annotated[Any, msgspec.Meta(extra={"why": "test"})]))
    assert not any(tt.is_untyped(tt.type_info(a)) for a in (Optional[Any], List[Any], int, Leaf))


def test_a_non_collection_has_no_element_type():
    assert tt.element_type(tt.type_info(Dict[str, int])) is None
    assert tt.element_type(tt.type_info(Tuple[int, str])) is None


def test_a_mapping_yields_its_key_then_its_value():
    t = tt.type_info(Dict[str, Leaf])
    assert tt.children(t) == ((Step(KEY), mi.StrType()), (Step(VALUE), tt.type_info(Leaf)))


@pytest.mark.skipif(not hasattr(mi, "FrozenDictType"), reason="this msgspec has no frozendict")
def test_a_frozendict_is_walked_exactly_as_a_dict():
    frozen = mi.FrozenDictType(key_type=mi.StrType(), value_type=mi.IntType())
    assert tt.children(frozen) == tt.children(mi.DictType(key_type=mi.StrType(), value_type=mi.IntType()))


def test_metadata_is_looked_through_but_a_child_keeps_its_constraints():
    # msgspec folds a Meta's bounds into the type; only extra (or a JSON schema) leaves a Metadata node
    int_meta = msgspec.Meta(ge=0, extra={"unit": "token"})
    t = tt.type_info(Annotated[List[Annotated[int, int_meta]], msgspec.Meta(max_length=3, extra={"why": "batch"})])
    assert isinstance(t, mi.Metadata) and isinstance(tt.unwrap(t), mi.ListType) and tt.unwrap(t).max_length == 3
    ((step, child),) = tt.children(t)
    assert step == Step(ITEM) and child == mi.Metadata(mi.IntType(ge=0), extra={"unit": "token"})
    assert all(not isinstance(node, mi.Metadata) for _, node in tt.walk(t))


def test_a_fixed_tuple_yields_one_indexed_child_per_position_and_a_union_one_per_arm_none_included():
    assert [s for s, _ in tt.children(tt.type_info(Tuple[int, str, Leaf]))] == [Step(INDEX, 0), Step(INDEX, 1), Step(INDEX, 2)]
    arms = tt.children(tt.type_info(Union[int, Leaf, None]))
    assert [s for s, _ in arms] == [Step(ARM, 0), Step(ARM, 1), Step(ARM, 2)]
    assert isinstance(arms[-1][1], mi.NoneType)


@pytest.mark.parametrize("cls", [Leaf, Row, Pair, Doc], ids=["struct", "dataclass", "namedtuple", "typeddict"])
def test_every_record_kind_yields_its_fields_by_python_name(cls):
    steps = [s for s, _ in tt.children(tt.type_info(cls))]
    assert steps == [Step(FIELD, f.name) for f in tt.type_info(cls).fields]


def test_a_recursive_struct_is_entered_once_and_the_walk_ends():
    nodes = list(tt.walk(tt.type_info(Tree)))
    trees = [path for path, node in nodes if isinstance(node, mi.StructType) and node.cls is Tree]
    assert trees == [(), (Step(FIELD, "children"), Step(ITEM))]
    assert tt.reachable_structs([Tree]) == [Tree, Leaf]


class Holder(msgspec.Struct):
    doc: Doc
    rows: Dict[str, Row]
    pair: Optional[Pair]


class Inner(msgspec.Struct):
    leaf: Leaf


class Outer(msgspec.Struct):
    inner: Inner
    again: List[Inner]
    row: Row


def test_without_structs_a_walk_stops_at_every_struct_but_enters_a_typeddict():
    under = [tt.structs_under(f.type) for f in tt.struct_info(Holder).fields]
    assert [[s.cls for s in found] for found in under] == [[Leaf], [Row], [Pair]]
    assert tt.structs_under(tt.type_info(Leaf)) == [tt.type_info(Leaf)]


def test_reachable_structs_lists_each_class_once_breadth_first():
    assert tt.reachable_structs([Outer]) == [Outer, Inner, Row, Leaf]


def test_follow_prunes_the_child_it_refuses_and_everything_below_it():
    t = tt.type_info(Union[Leaf, List[Row], None])
    not_lists = list(tt.walk(t, follow=lambda step, child: not isinstance(child, mi.ListType)))
    assert [type(node) for _, node in not_lists] == [mi.UnionType, mi.StructType, mi.IntType, mi.NoneType]


def test_steps_spell_the_path_segments_of_a_position():
    path = (Step(FIELD, "rows"), Step(ITEM), Step(VALUE), Step(KEY), Step(INDEX, 2), Step(ARM, 1))
    assert "".join(map(str, path)) == ".rows[]{}{key}[2]<1>"


def test_type_info_is_cached_and_struct_info_refuses_what_is_not_a_struct():
    assert tt.type_info(Tree) is tt.type_info(Tree)
    assert tt.struct_info(Row).cls is Row
    with pytest.raises(TypeError, match="TypedDictType"):
        tt.struct_info(Doc)
