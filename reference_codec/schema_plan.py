"""Where in a schema the codec must look at values msgspec handles blindly.

Two kinds of positions need the codec's attention: *untyped* ones (``object``,
``Any``), where msgpack alone would lose Python types that pickle keeps, and
*opaque* ones, where SGLang's ``PickleWrapper`` may arrive. For each struct
class a plan lists only the fields whose type contains such a position, so
encoding a ``BatchTokenIDOutput`` with no beam output or custom info looks at
two ``None`` fields and nothing else.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple, Union, cast

import msgspec
from msgspec import inspect as mi

from .schema import PickleWrapper

__all__ = ["Node", "ANY", "OPAQUE", "plan_for", "map_positions", "Visitor"]


class Node:
    """A type tree pruned to the branches that lead to untyped or opaque positions."""

    __slots__ = ("kind", "child", "structs")

    def __init__(self, kind: str, child: Optional["Node"] = None, structs: Optional[Dict[type, "Node"]] = None):
        self.kind = kind  # "any" | "opaque" | "set" | "seq" | "dict" | "struct" | "union"
        self.child = child
        self.structs = structs or {}


ANY = Node("any")
OPAQUE = Node("opaque")

#: (node kind, value, path parts) -> replacement value
Visitor = Callable[[str, object, Tuple], object]

_struct_plans: Dict[type, Optional[List[Tuple[str, Node]]]] = {}


def plan_for(cls: type) -> Optional[List[Tuple[str, Node]]]:
    """``[(field, node), ...]`` for the fields of ``cls`` that hold untyped or opaque values, or None."""
    try:
        return _struct_plans[cls]
    except KeyError:
        pass
    _struct_plans[cls] = None  # cycle guard: a struct cannot contain itself by value here
    info = cast(mi.StructType, mi.type_info(cls))
    plan = []
    for field in info.fields:
        node = _node(field.type)
        if node is not None:
            plan.append((field.name, node))
    _struct_plans[cls] = plan or None
    return _struct_plans[cls]


def _struct_node(cls: type) -> Optional[Node]:
    if cls is PickleWrapper:
        return OPAQUE
    return Node("struct", structs={cls: Node("fields")}) if plan_for(cls) else None


def _is_untyped(t: mi.Type) -> bool:
    # msgspec reports ``Any`` as AnyType but a bare ``object`` annotation as CustomType(object).
    return isinstance(t, mi.AnyType) or (isinstance(t, mi.CustomType) and t.cls is object)


def _node(t: mi.Type) -> Optional[Node]:
    if _is_untyped(t):
        return ANY
    if isinstance(t, mi.StructType):
        return _struct_node(t.cls)
    if isinstance(t, (mi.SetType, mi.FrozenSetType)):
        # Every typed set is visited: a set has no canonical order, so the
        # encoder writes it sorted to keep a second hop byte-identical.
        return Node("set", _node(t.item_type))
    if isinstance(t, (mi.ListType, mi.VarTupleType)):
        child = _node(t.item_type)
        return Node("seq", child) if child else None
    if isinstance(t, mi.TupleType):
        children = [_node(x) for x in t.item_types]
        if any(children):
            raise TypeError("fixed tuples holding untyped values are not supported by the schema plan")
        return None
    if isinstance(t, mi.DictType):
        child = _node(t.value_type)
        return Node("dict", child) if child else None
    if isinstance(t, mi.UnionType):
        # msgspec allows at most one non-struct arm of each wire kind, and the
        # schema has at most one that leads to untyped values: it becomes the
        # fallback for every value that is not one of the union's structs.
        structs: Dict[type, Node] = {}
        other: Optional[Node] = None
        for arm in t.types:
            if _is_untyped(arm):
                return ANY
            if isinstance(arm, mi.StructType):
                node = _struct_node(arm.cls)
                if node is not None:
                    structs[arm.cls] = node if node is OPAQUE else node.structs[arm.cls]
            elif not isinstance(arm, mi.NoneType):
                node = _node(arm)
                if node is not None:
                    if other is not None:
                        raise TypeError(f"union {t} has two arms holding untyped values")
                    other = node
        return Node("union", child=other, structs=structs) if structs or other else None
    return None


def map_positions(value: object, visit: Visitor, path: Tuple = ()) -> object:
    """Apply ``visit`` at every untyped/opaque position of struct ``value``.

    Returns ``value`` itself when nothing changed, else a copy with only the
    changed branches rebuilt (the caller's message is never mutated).
    """
    plan = plan_for(type(value))
    if plan is None:
        return value
    changes = {}
    for name, node in plan:
        current = getattr(value, name)
        if current is None:
            continue
        new = _map(current, node, visit, path + (name,))
        if new is not current:
            changes[name] = new
    # a plan exists only for struct classes
    return msgspec.structs.replace(cast(msgspec.Struct, value), **changes) if changes else value


def _map(value: object, node: Node, visit: Visitor, path: Tuple) -> object:
    kind = node.kind
    if kind == "any" or kind == "opaque":
        return visit(kind, value, path)
    if value is None:
        return value
    if kind == "set":
        if node.child is not None:
            value = _map(value, Node("seq", node.child), visit, path)
        return visit("set", value, path)
    if kind == "seq":
        if not isinstance(value, (list, tuple, set, frozenset)):
            return value
        items = list(value)
        assert node.child is not None  # _node builds seq and dict nodes only with a child
        # the dict branch below reuses the name
        out: Union[List[object], Dict[Any, object]] = [_map(v, node.child, visit, path + (i,)) for i, v in enumerate(items)]
        if all(a is b for a, b in zip(out, items)):
            return value
        return type(value)(out)
    if kind == "dict":
        if not isinstance(value, dict):
            return value
        assert node.child is not None
        out = {k: _map(v, node.child, visit, path + (k,)) for k, v in value.items()}
        if all(out[k] is v for k, v in value.items()):
            return value
        return out
    if kind in ("struct", "union"):
        sub = node.structs.get(type(value))
        if sub is None:
            return _map(value, node.child, visit, path) if node.child is not None else value
        if sub is OPAQUE:
            return visit("opaque", value, path)
        return map_positions(value, visit, path)
    return value
