"""Where in a schema the codec must look at values msgspec handles blindly.

Two kinds of positions need the codec's attention: *untyped* ones (``object``,
``Any``), where msgpack alone would lose Python types that pickle keeps, and
*opaque* ones, where SGLang's ``PickleWrapper`` may arrive. For each struct
class a plan lists only the fields whose type contains such a position (and,
for encoding, a typed set, which the walk itself rewrites in the wire's order,
:func:`~reference_codec.wire.canonical_set`; ``visit`` never sees a set), and
:func:`walker_for` compiles the plan into one function per class, so encoding
a ``BatchTokenIDOutput`` with no beam output or custom info reads three
``None`` fields and nothing else, and a control message is not walked at all.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple, cast

import msgspec
from msgspec import inspect as mi

from .schema import PickleWrapper
from .type_tree import MAPPING_TYPES, element_type, is_set, is_untyped, struct_info, unwrap
from .wire import INT_MIN, PLAIN_TYPES, UINT_MAX, all_plain, canonical_set

__all__ = ["Node", "ANY", "OPAQUE", "plan_for", "walker_for", "Visitor", "Walker"]


class Node:
    """A type tree pruned to the branches that lead to untyped or opaque positions."""

    __slots__ = ("kind", "child", "structs")

    def __init__(self, kind: str, child: Optional["Node"] = None, structs: Optional[Dict[type, "Node"]] = None):
        self.kind = kind  # "any" | "opaque" | "set" | "seq" | "dict" | "struct" | "union"
        self.child = child
        self.structs = structs or {}


ANY = Node("any")
OPAQUE = Node("opaque")

#: (node kind: ``any`` or ``opaque``, value, path parts) -> replacement value.
#: A visitor returns a plain leaf (:func:`~reference_codec.wire.all_plain`: None,
#: bool, str, bytes, float, a 64-bit int) unchanged; so the walk of a typed list
#: or dict of untyped values passes over its plain leaves without calling it.
Visitor = Callable[[str, object, Tuple], object]

_struct_plans: Dict[type, Optional[List[Tuple[str, Node]]]] = {}


def plan_for(cls: type) -> Optional[List[Tuple[str, Node]]]:
    """``[(field, node), ...]`` for the fields of ``cls`` that hold untyped or opaque values, or None."""
    try:
        return _struct_plans[cls]
    except KeyError:
        pass
    _struct_plans[cls] = None  # cycle guard: a struct cannot contain itself by value here
    plan = []
    for field in struct_info(cls).fields:
        node = _node(field.type)
        if node is not None:
            plan.append((field.name, node))
    _struct_plans[cls] = plan or None
    return _struct_plans[cls]


def _struct_node(cls: type) -> Optional[Node]:
    if cls is PickleWrapper:
        return OPAQUE
    return Node("struct", structs={cls: Node("fields")}) if plan_for(cls) else None


def _node(t: mi.Type) -> Optional[Node]:
    t = unwrap(t)
    if is_untyped(t):
        return ANY
    if isinstance(t, mi.StructType):
        return _struct_node(t.cls)
    item = element_type(t)
    if item is not None:
        if is_set(t):
            # Every typed set is visited: a set has no canonical order, so the
            # encoder writes it sorted to keep a second hop byte-identical.
            return Node("set", _node(item))
        child = _node(item)
        return Node("seq", child) if child else None
    if isinstance(t, mi.TupleType):
        children = [_node(x) for x in t.item_types]
        if any(children):
            raise TypeError("fixed tuples holding untyped values are not supported by the schema plan")
        return None
    if isinstance(t, MAPPING_TYPES):
        child = _node(t.value_type)
        return Node("dict", child) if child else None
    if isinstance(t, mi.UnionType):
        # msgspec allows at most one non-struct arm of each wire kind, and the
        # schema has at most one that leads to untyped values: it becomes the
        # fallback for every value that is not one of the union's structs.
        structs: Dict[type, Node] = {}
        other: Optional[Node] = None
        for arm in map(unwrap, t.types):
            if is_untyped(arm):
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


#: A compiled walk of one struct class: ``walk(value, visit, path) -> value or a changed copy``.
Walker = Callable[[Any, Visitor, Tuple], object]

_walkers: Dict[Tuple[type, bool], Optional[Walker]] = {}


def walker_for(cls: type, *, sets: bool = True) -> Optional[Walker]:
    """The compiled walk of ``cls``'s untyped and opaque positions (and typed sets, with ``sets``), or None.

    None means a value of ``cls`` never needs the codec's attention, so the
    caller skips the walk entirely: every control message, and on decode
    (``sets=False``: a set needs nothing on receive) every class whose only
    watched position is a typed set. Compiled once per class and cached, into
    one generated function (:func:`_compile_struct`); a walk returns ``value``
    itself when nothing changed, else a copy with only the changed branches
    rebuilt, and never mutates the caller's message.
    """
    key = (cls, sets)
    try:
        return _walkers[key]
    except KeyError:
        pass
    _walkers[key] = None  # cycle guard, as in plan_for
    plan = [(name, node) for name, node in (plan_for(cls) or []) if _needed(node, sets)]
    walk = _compile_struct(cls, plan, sets) if plan else None
    _walkers[key] = walk
    return walk


def _needed(node: Node, sets: bool) -> bool:
    """Whether a walk must enter ``node``: it leads to an untyped or opaque position, or (with ``sets``) a typed set."""
    kind = node.kind
    if kind == "any" or kind == "opaque":
        return True
    if kind == "struct" or kind == "union":
        if any(sub is OPAQUE or walker_for(cls, sets=sets) is not None for cls, sub in node.structs.items()):
            return True
    elif kind == "set" and sets:
        return True
    return node.child is not None and _needed(node.child, sets)


def _compile_struct(cls: type, plan: List[Tuple[str, Node]], sets: bool) -> Walker:
    """One generated function per struct class: a field read and a None test per watched field, no loop.

    Generated (as dataclasses generates ``__init__``) because this runs for every
    message sent and received, and a loop over the plan costs more than the
    fields it reads. A field holding one struct class has that struct's watched
    fields read inline (:func:`_inline_struct`): a request's ``sampling_params``
    is walked on encode for its ``stop_token_ids`` set, and a call, a path tuple
    and a type dispatch per request cost more than the set's own check. The
    source is built from field names that msgspec has already checked to be
    identifiers; values never become code.
    """
    env: Dict[str, Any] = {"_replace": msgspec.structs.replace}
    lines = ["def walk(value, visit, path):"]
    _emit_fields(cls, plan, sets, "value", "changes", "()", 1, env, lines, depth=0)
    lines.append("    return value if changes is None else _replace(value, **changes)")
    exec("\n".join(lines), env)  # noqa: S102  # names are checked identifiers, see the docstring
    walk = env["walk"]
    walk.__qualname__ = f"walk_{cls.__name__}"
    return cast(Walker, walk)


#: How deep nested structs are read inline, and how many watched fields such a struct may have.
_INLINE_DEPTH = 2
_INLINE_FIELDS = 4


def _emit_fields(
    cls: type,
    plan: List[Tuple[str, Node]],
    sets: bool,
    var: str,
    changes: str,
    prefix: str,
    indent: int,
    env: Dict[str, Any],
    lines: List[str],
    depth: int,
) -> None:
    """Lines that walk the watched fields of the struct in ``var``, collecting replaced fields in the dict ``changes``.

    ``prefix`` is the source of the path parts before this struct's fields
    (``()`` at the top, ``('sampling_params',)`` inline), appended to ``path``.
    """
    pad = "    " * indent
    lines.append(f"{pad}{changes} = None")
    for name, node in plan:
        if not name.isidentifier():
            raise TypeError(f"{cls.__qualname__}.{name} is not an identifier")
        key = len(env)  # a fresh name for this position's helpers
        field_path = f"path + {prefix[:-1]}{name!r},)" if prefix != "()" else f"path + ({name!r},)"  # one constant tuple
        item = f"item{depth}"
        lines += [f"{pad}{item} = {var}.{name}", f"{pad}if {item} is not None:"]
        inner = _inline_struct(node, sets, depth)
        if inner is not None:  # one struct class: its watched fields here, any other value the general walk
            inner_cls, inner_plan = inner
            env[f"_cls{key}"], env[f"_walk{key}"] = inner_cls, _compile(node, sets)
            inner_changes = f"changes{depth + 1}"
            lines.append(f"{pad}    if type({item}) is _cls{key}:")
            inner_prefix = f"{prefix[:-1]}{name!r},)" if prefix != "()" else f"({name!r},)"
            _emit_fields(inner_cls, inner_plan, sets, item, inner_changes, inner_prefix, indent + 2, env, lines, depth + 1)
            lines += [
                f"{pad}        new = {item} if {inner_changes} is None else _replace({item}, **{inner_changes})",
                f"{pad}    else:",
                f"{pad}        new = _walk{key}({item}, visit, {field_path})",
            ]
        else:
            leaf = _leaf_kind(node, sets)
            if leaf == "set":  # written in the wire's order here: no visit, no path
                env["_canonical_set"] = canonical_set
                lines.append(f"{pad}    new = _canonical_set({item})")
            elif leaf is not None:  # visited where it stands: one call fewer for the commonest watched field
                lines.append(f"{pad}    new = visit({leaf!r}, {item}, {field_path})")
            else:
                env[f"_walk{key}"] = _compile(node, sets)
                lines.append(f"{pad}    new = _walk{key}({item}, visit, {field_path})")
        lines += [
            f"{pad}    if new is not {item}:",
            f"{pad}        if {changes} is None:",
            f"{pad}            {changes} = {{}}",
            f"{pad}        {changes}[{name!r}] = new",
        ]


def _inline_struct(node: Node, sets: bool, depth: int) -> Optional[Tuple[type, List[Tuple[str, Node]]]]:
    """``(cls, plan)`` when a field at ``node`` holds exactly one struct class whose few watched fields can be read inline."""
    if depth >= _INLINE_DEPTH or node.kind not in ("struct", "union") or node.child is not None or len(node.structs) != 1:
        return None
    ((cls, sub),) = node.structs.items()
    if sub is OPAQUE:
        return None
    plan = [(name, inner) for name, inner in (plan_for(cls) or []) if _needed(inner, sets)]
    if not plan or len(plan) > _INLINE_FIELDS or not all(name.isidentifier() for name, _ in plan):
        return None
    return cls, plan


def _leaf_kind(node: Node, sets: bool) -> Optional[str]:
    """How a non-None value at ``node`` is handled as a whole (``any``, ``opaque``: visited; ``set``: put in order), else None."""
    if node.kind == "union" and not node.structs and node.child is not None:
        node = node.child  # Optional[...] of a leaf
    if node.kind in ("any", "opaque") or (node.kind == "set" and sets and node.child is None):
        return node.kind
    return None


def _compile(node: Node, sets: bool) -> Walker:
    """The walk of one value at ``node`` (never called with None)."""
    kind = node.kind
    if kind == "any" or kind == "opaque":
        return lambda value, visit, path: visit(kind, value, path)
    if kind == "set":
        if node.child is None:
            return (lambda value, visit, path: canonical_set(value)) if sets else _unchanged
        seq = _compile(Node("seq", node.child), sets)

        def walk_set(value: Any, visit: Visitor, path: Tuple) -> object:
            value = seq(value, visit, path)
            return canonical_set(value) if sets else value

        return walk_set
    if kind == "seq":
        assert node.child is not None  # _node builds seq and dict nodes only with a child
        item_walk = _compile(node.child, sets)
        if node.child.kind == "any":
            return _untyped_items(item_walk, is_dict=False)

        def walk_seq(value: Any, visit: Visitor, path: Tuple) -> object:
            if not isinstance(value, (list, tuple, set, frozenset)):
                return value
            items = list(value)
            out = [v if v is None else item_walk(v, visit, path + (i,)) for i, v in enumerate(items)]
            if all(a is b for a, b in zip(out, items)):
                return value
            return type(value)(out)

        return walk_seq
    if kind == "dict":
        assert node.child is not None
        value_walk = _compile(node.child, sets)
        if node.child.kind == "any":
            return _untyped_items(value_walk, is_dict=True)

        def walk_dict(value: Any, visit: Visitor, path: Tuple) -> object:
            if not isinstance(value, dict):
                return value
            out = {k: v if v is None else value_walk(v, visit, path + (k,)) for k, v in value.items()}
            if all(out[k] is v for k, v in value.items()):
                return value
            return out

        return walk_dict
    # struct or union: a value of one of its structs walks that struct; anything else the other arm
    if not node.structs:
        assert node.child is not None  # a union node holds a struct or another arm
        return _compile(node.child, sets)
    opaque = frozenset(cls for cls, sub in node.structs.items() if sub is OPAQUE)
    other = _compile(node.child, sets) if node.child is not None else _unchanged
    # the walk of each concrete type seen here, resolved on first sight: a struct's
    # walker may be compiled after this one (recursive schemas), so not at compile time
    by_type: Dict[type, Walker] = {}

    def resolve(cls: type) -> Walker:
        if cls in opaque:
            walk: Walker = _visit_opaque
        elif cls in node.structs:
            walk = walker_for(cls, sets=sets) or _unchanged
        else:
            walk = other
        if len(by_type) < _MAX_TYPES_PER_UNION:
            by_type[cls] = walk
        return walk

    def walk_union(value: Any, visit: Visitor, path: Tuple) -> object:
        walk = by_type.get(type(value))
        if walk is None:
            walk = resolve(type(value))
        return walk(value, visit, path)

    return walk_union


#: Bounds the per-union cache of value types (a peer chooses what types arrive in an untyped arm).
_MAX_TYPES_PER_UNION = 64


def _untyped_items(item_walk: Walker, *, is_dict: bool) -> Walker:
    """The walk of a typed list (or set, tuple) or dict whose items are untyped: plain leaves are passed over, the rest visited.

    A container of plain leaves only (most of them: a dict of server settings,
    a list of token ids) is recognised in C and returned as is; otherwise only
    the items that are not plain leaves cost a call.
    """

    def changed_items(pairs: Any, visit: Visitor, path: Tuple) -> Optional[Dict[Any, object]]:
        changed: Optional[Dict[Any, object]] = None
        for k, v in pairs:
            t = type(v)
            if t in PLAIN_TYPES or (t is int and INT_MIN <= v <= UINT_MAX):
                continue
            nv = item_walk(v, visit, path + (k,))
            if nv is not v:
                if changed is None:
                    changed = {}
                changed[k] = nv
        return changed

    if is_dict:

        def walk_dict(value: Any, visit: Visitor, path: Tuple) -> object:
            if not isinstance(value, dict) or all_plain(value.values()):
                return value
            changed = changed_items(value.items(), visit, path)
            if changed is None:
                return value
            out = dict(value)  # the same keys in the same order
            out.update(changed)
            return out

        return walk_dict

    def walk_seq(value: Any, visit: Visitor, path: Tuple) -> object:
        if not isinstance(value, (list, tuple, set, frozenset)):
            return value
        items = value if type(value) is list or type(value) is tuple else list(value)
        if all_plain(items):
            return value
        changed = changed_items(enumerate(items), visit, path)
        if changed is None:
            return value
        out = list(items)
        for i, nv in changed.items():
            out[i] = nv
        return type(value)(out)

    return walk_seq


def _unchanged(value: Any, visit: Visitor, path: Tuple) -> object:
    return value


def _visit_opaque(value: Any, visit: Visitor, path: Tuple) -> object:
    return visit("opaque", value, path)
