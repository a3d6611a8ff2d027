"""One walk over ``msgspec.inspect`` type trees: what a type holds, and where.

Every tool that reasons about a schema's shape (the codec's plan of untyped
positions, error paths, the strategies, the coverage report, the schema diff,
the suite's searches for tensors) asks this module what a type holds instead
of listing msgspec's type classes itself, so that they agree on every kind.

The tree
========

A node is a ``msgspec.inspect.Type``. :func:`children` gives a node's direct
children, each with the :class:`Step` that leads to it:

* **Metadata** (``Annotated[T, Meta(...)]``) carries constraints, not shape:
  :func:`unwrap` strips it, and :func:`children` and :func:`walk` look through
  it. Children are handed out as inspected, so a child may itself be
  ``Metadata``, for the callers that read its constraints.
* **Collections**: ``list``, variadic ``tuple``, ``set`` and ``frozenset``
  (every ``mi.CollectionType``): one child, the element (:data:`ITEM`, ``[]``).
  *Sets are collections like lists*: msgpack writes them as arrays and their
  elements are positions like a list's. What a set's lack of order means (the
  codec writes it sorted) is for the caller to decide; :func:`is_set` tells.
* **Mappings**: ``dict`` and ``frozendict`` (``mi.DictType``, and
  ``mi.FrozenDictType`` where msgspec has it: Python 3.15+): two children, the
  key (:data:`KEY`, ``{key}``) then the value (:data:`VALUE`, ``{}``). *A
  frozendict is a dict everywhere here*: the same msgpack map, the same
  positions.
* **Fixed tuples**: one child per position (:data:`INDEX`, ``[i]``).
* **Unions**: one child per arm, ``None`` included, in msgspec's order
  (:data:`ARM`, ``<i>`` with ``i`` the arm's index).
* **Records**: Struct, dataclass, NamedTuple and TypedDict: one child per
  field, in declaration order (:data:`FIELD`, ``.name``, the Python name, not
  the encoded one). The first three are *structs* (:data:`STRUCT_TYPES`):
  instances of a class built field by field. A TypedDict's value is a plain
  dict, so it is a record but never a struct boundary.
* Everything else is a leaf.

Recursion
=========

A schema may refer to itself (a struct holding a list of itself); msgspec
inspects such a class once and the tree is cyclic. :func:`walk` enters each
record class once per walk, and :func:`reachable_structs` lists each struct
class once.

Inspected types are shared (:func:`type_info` caches them): read them, never
change them.
"""

from __future__ import annotations

import functools
from collections import deque
from typing import TYPE_CHECKING, Any, Callable, Deque, Iterable, Iterator, List, NamedTuple, Optional, Set, Tuple, Union

from msgspec import inspect as mi

__all__ = [
    "Step",
    "Path",
    "Follow",
    "FIELD",
    "ITEM",
    "KEY",
    "VALUE",
    "INDEX",
    "ARM",
    "StructLike",
    "Record",
    "MappingType",
    "MAPPING_TYPES",
    "STRUCT_TYPES",
    "RECORD_TYPES",
    "type_info",
    "struct_info",
    "unwrap",
    "is_untyped",
    "element_type",
    "reachable_enums",
    "is_set",
    "children",
    "walk",
    "structs_under",
    "reachable_structs",
]

#: Step kinds: a record's field, a collection's element, a mapping's key or
#: value, a fixed tuple's position, a union's arm.
FIELD, ITEM, KEY, VALUE, INDEX, ARM = "field", "item", "key", "value", "index", "arm"


class Step(NamedTuple):
    """One move from a node to a child: its ``kind``, and ``at`` the field's name, the tuple position or the arm's index (None otherwise).

    ``str(step)`` spells it as a path segment: ``.name``, ``[]``, ``{key}``,
    ``{}``, ``[i]``, ``<i>``.
    """

    kind: str
    at: Union[str, int, None] = None

    def __str__(self) -> str:
        if self.kind == FIELD:
            return f".{self.at}"
        if self.kind == INDEX:
            return f"[{self.at}]"
        if self.kind == ARM:
            return f"<{self.at}>"
        return _FIXED_TEXT[self.kind]


_FIXED_TEXT = {ITEM: "[]", KEY: "{key}", VALUE: "{}"}
_ITEM, _KEY, _VALUE = Step(ITEM), Step(KEY), Step(VALUE)

#: The steps from a walk's root to a node.
Path = Tuple[Step, ...]

StructLike = Union[mi.StructType, mi.DataclassType, mi.NamedTupleType]
Record = Union[mi.StructType, mi.DataclassType, mi.NamedTupleType, mi.TypedDictType]

if TYPE_CHECKING:
    MappingType = Union[mi.DictType, mi.FrozenDictType]
    MAPPING_TYPES = (mi.DictType, mi.FrozenDictType)
else:
    # msgspec < 0.21 has no FrozenDictType (and emits it only on Python 3.15+).
    MAPPING_TYPES = (mi.DictType,) + ((mi.FrozenDictType,) if hasattr(mi, "FrozenDictType") else ())
    MappingType = Union[MAPPING_TYPES]

STRUCT_TYPES = (mi.StructType, mi.DataclassType, mi.NamedTupleType)
RECORD_TYPES = (mi.StructType, mi.DataclassType, mi.NamedTupleType, mi.TypedDictType)


def type_info(tp: Any) -> mi.Type:
    """``msgspec.inspect.type_info(tp)``, cached (inspecting a 100-message union takes ~40 ms).

    An unhashable ``tp`` is inspected afresh each time.
    """
    try:
        hash(tp)
    except TypeError:
        return mi.type_info(tp)
    return _cached_type_info(tp)


@functools.lru_cache(maxsize=1024)
def _cached_type_info(tp: Any) -> mi.Type:
    return mi.type_info(tp)


def struct_info(cls: Any) -> StructLike:
    """The inspected struct class ``cls`` (a Struct, dataclass or NamedTuple); ``TypeError`` for anything else."""
    info = type_info(cls)
    if not isinstance(info, STRUCT_TYPES):
        raise TypeError(f"{cls!r} is not a Struct, dataclass or NamedTuple class (msgspec reads it as {type(info).__name__})")
    return info


def unwrap(t: mi.Type) -> mi.Type:
    """``t`` without its ``Metadata`` wrappers: the type its constraints apply to."""
    while isinstance(t, mi.Metadata):
        t = t.type
    return t


def is_untyped(t: mi.Type) -> bool:
    """Whether ``t`` (through Metadata) is ``Any`` or ``object``: a position whose type says nothing of its values."""
    t = unwrap(t)
    # msgspec reports ``Any`` as AnyType but a bare ``object`` annotation as CustomType(object).
    return isinstance(t, mi.AnyType) or (isinstance(t, mi.CustomType) and t.cls is object)


def element_type(t: mi.Type) -> Optional[mi.Type]:
    """The element type of a collection (list, variadic tuple, set, frozenset), through Metadata; else None."""
    t = unwrap(t)
    return t.item_type if isinstance(t, mi.CollectionType) else None


def is_set(t: mi.Type) -> bool:
    """Whether ``t`` (through Metadata) is a set or frozenset: a collection without an order of its own."""
    return isinstance(unwrap(t), (mi.SetType, mi.FrozenSetType))


def children(t: mi.Type) -> Tuple[Tuple[Step, mi.Type], ...]:
    """``(step, child)`` for each direct child of ``t`` (through Metadata), in the order described above; ``()`` for a leaf."""
    t = unwrap(t)
    if isinstance(t, mi.CollectionType):
        return ((_ITEM, t.item_type),)
    if isinstance(t, MAPPING_TYPES):
        return ((_KEY, t.key_type), (_VALUE, t.value_type))
    if isinstance(t, mi.TupleType):
        return tuple((Step(INDEX, i), x) for i, x in enumerate(t.item_types))
    if isinstance(t, mi.UnionType):
        return tuple((Step(ARM, i), x) for i, x in enumerate(t.types))
    if isinstance(t, RECORD_TYPES):
        return tuple((Step(FIELD, f.name), f.type) for f in t.fields)
    return ()


#: ``follow(step, child)``: whether a walk goes on to ``child`` (unwrapped), reached by ``step``.
Follow = Callable[[Step, mi.Type], bool]


def walk(t: mi.Type, *, into_structs: bool = True, follow: Optional[Follow] = None) -> Iterator[Tuple[Path, mi.Type]]:
    """``(path, node)`` for ``t`` and every node below it, depth first, in :func:`children`'s order.

    Nodes come unwrapped (never ``Metadata``). A record is yielded wherever it
    occurs but entered once per walk (recursive schemas end). With
    ``into_structs=False`` no struct (:data:`STRUCT_TYPES`, the root included)
    is entered: the walk stays within one struct's field, as the structs
    nested there see their own. ``follow`` prunes: a child it refuses is
    neither yielded nor entered.
    """
    entered: Set[type] = set()
    stack: List[Tuple[Path, mi.Type]] = [((), unwrap(t))]
    while stack:
        path, node = stack.pop()
        yield path, node
        if isinstance(node, RECORD_TYPES):
            if (not into_structs and isinstance(node, STRUCT_TYPES)) or node.cls in entered:
                continue
            entered.add(node.cls)
        below = [(path + (step,), unwrap(child)) for step, child in children(node)]
        if follow is not None:
            below = [(p, child) for p, child in below if follow(p[-1], child)]
        stack.extend(reversed(below))


def structs_under(t: mi.Type, *, follow: Optional[Follow] = None) -> List[StructLike]:
    """The structs a value of type ``t`` holds outside any other struct (``t`` itself if it is one), each class once, in walk order."""
    found: List[StructLike] = []
    seen: Set[type] = set()
    for _, node in walk(t, into_structs=False, follow=follow):
        if isinstance(node, STRUCT_TYPES) and node.cls not in seen:
            seen.add(node.cls)
            found.append(node)
    return found


def reachable_structs(roots: Iterable[type], *, follow: Optional[Follow] = None) -> List[type]:
    """``roots`` (struct classes) and every struct class reachable from their fields, each once, breadth first.

    Each class's fields are searched in declaration order (:func:`structs_under`);
    the classes found are searched after those found before them.
    """
    found: List[type] = []
    seen: Set[type] = set()
    queue: Deque[type] = deque(roots)
    while queue:
        cls = queue.popleft()
        if cls in seen:
            continue
        seen.add(cls)
        found.append(cls)
        for field in struct_info(cls).fields:
            queue.extend(s.cls for s in structs_under(field.type, follow=follow))
    return found


def reachable_enums(roots: Iterable[type]) -> List[type]:
    """Every ``enum.Enum`` class a field of ``roots`` (struct classes) or of a struct they reach is declared with, each once, in the order found."""
    found: List[type] = []
    for cls in reachable_structs(roots):
        for field in struct_info(cls).fields:
            for _, node in walk(field.type, into_structs=False):
                if isinstance(node, mi.EnumType) and node.cls not in found:
                    found.append(node.cls)
    return found
