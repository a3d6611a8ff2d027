"""Compare two versions of a positional (``array_like``) schema, nested structs included, and name what breaks the wire.

With positional encoding a field is identified by its index, so the only
compatible change to a message is appending fields with defaults at the tail.
Anything else silently shifts every later field: a field inserted in the
middle of ``SamplingParams`` (carried inside ``TokenizedGenerateReqInput``)
makes an older peer read ``top_p`` from another field's bytes, without an
error. This check catches that before it ships::

    python -m conformance.schema_diff OLD NEW [--all] [--json]

where each side is a module (``sglang.srt.managers.io_struct``: its tagged
message classes are found, see :func:`discover_messages`) or
``MODULE:MAPPING`` naming a ``Mapping[tag, struct class]``
(``reference_codec.schema:MESSAGE_TYPES``). It prints the breaking changes
(``--all``: every change), one line a reviewer can paste into a PR, and
exits 1 on a breaking change.

What is compared
================

Every struct reachable from a message, through ``Optional``, unions, lists,
sets, dicts and tuples, is compared with its namesake in the other version at
the same place, field by field; each change names its path
(``TokenizedGenerateReqInput.sampling_params -> SamplingParams``).

Breaking (old and new peers misread each other, or one refuses the other):

* a field inserted, removed or reordered anywhere but the tail of a
  positional struct (for a struct encoded as a map, fields match by name);
* a field appended without a default, or removed from the tail while it had
  none (the older side requires it);
* a type change whose new type does not accept every old value (a narrowed
  union, ``list`` to ``bytes``), and a constraint tightened (``Meta(ge=0)``
  added to an ``int``); constrained types compare by their base type and
  their constraints;
* a default removed (the field became required);
* ``array_like``, ``tag`` or ``tag_field`` changed; a message removed.

Compatible: a field appended at the tail with a default, a field removed from
the tail that had a default, a changed default, a widened type or a loosened
constraint (older readers still refuse values only the new type allows: the
line says so), a message added.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import types as pytypes
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

import msgspec
from msgspec import inspect as mi

from reference_codec.type_tree import MAPPING_TYPES, children, type_info, unwrap

__all__ = ["Change", "diff_schemas", "diff_struct", "discover_messages", "load_schema", "type_text", "summary_line", "main"]


@dataclass(frozen=True)
class Change:
    """One difference between schema versions; ``breaking`` ones corrupt positional decoding or refuse a peer.

    ``path`` is where it is: the message tag, then ``.field -> Struct`` for
    each nested struct on the way (``TokenizedGenerateReqInput.sampling_params -> SamplingParams``).
    """

    tag: str
    kind: str
    detail: str
    breaking: bool
    path: str = ""
    #: The field the change is about, where it is about one.
    field: str = ""

    @property
    def where(self) -> str:
        return self.path or self.tag

    @property
    def struct(self) -> str:
        """The name of the struct class the change is in (the message's own tag at the top level)."""
        return self.where.rpartition(" -> ")[2] or self.tag

    def __str__(self) -> str:
        return f"{'BREAKING' if self.breaking else 'compatible'}: {self.where}: {self.kind}: {self.detail}"

    def as_dict(self) -> Dict[str, Any]:
        return {**asdict(self), "where": self.where, "struct": self.struct}


# --- types ------------------------------------------------------------------------

#: The range an unconstrained ``int`` field is read as: int64. msgpack itself
#: carries up to 2**64-1, but IPC schemas mean int64 by ``int`` (SGLang's senders
#: never write more; the reference declares its int fields ``Int64`` and the
#: few that carry more ``UInt64``), so ``int`` and ``Int64`` are the same type
#: here and only a bound inside that range is a constraint.
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1


def type_text(t: mi.Type) -> str:
    """A structural spelling of a msgspec type, structs and enums by name, constraints left out (see :func:`constraints`)."""
    t = unwrap(t)
    if isinstance(t, mi.StructType):
        return t.cls.__name__
    if isinstance(t, mi.EnumType):
        return f"enum {t.cls.__name__}{sorted(m.value for m in t.cls)!r}"
    if isinstance(t, mi.UnionType):
        return " | ".join(sorted(type_text(a) for a in t.types))
    if isinstance(t, mi.CollectionType):  # list, set, frozenset, vartuple
        return f"{type(t).__name__[:-4].lower()}[{type_text(t.item_type)}]"
    if isinstance(t, mi.TupleType):
        return f"tuple[{', '.join(type_text(x) for x in t.item_types)}]"
    if isinstance(t, MAPPING_TYPES):  # a frozendict is the same msgpack map
        return f"dict[{type_text(t.key_type)}, {type_text(t.value_type)}]"
    if isinstance(t, mi.LiteralType):
        return f"literal{sorted(map(repr, t.values))}"
    if isinstance(t, mi.CustomType):
        return f"{t.cls.__module__}.{t.cls.__qualname__}"
    return type(t).__name__.removesuffix("Type").lower()


_LOWER = ("gt", "ge", "min_length")
_UPPER = ("lt", "le", "max_length")
_EXACT = ("multiple_of", "pattern")


def constraints(t: mi.Type) -> Dict[str, Any]:
    """The value constraints of a (possibly ``Annotated``) type: msgspec's bounds, and ``min``/``max`` of ``Meta(extra=...)``.

    Integer bounds equal to int64's are dropped (see :data:`_INT_MIN`): ``int`` and ``Int64`` compare equal.
    """
    found: Dict[str, Any] = {}
    while isinstance(t, mi.Metadata):
        extra = t.extra or {}
        if "min" in extra:
            found["ge"] = extra["min"]
        if "max" in extra:
            found["le"] = extra["max"]
        t = t.type
    for name in (*_LOWER, *_UPPER, *_EXACT):
        value = getattr(t, name, None)
        if value is not None and name not in found:
            found[name] = value
    if isinstance(t, mi.IntType):
        found["ge"] = max(found.get("ge", _INT_MIN), _INT_MIN) if found.get("ge") is not None else _INT_MIN
        found["le"] = found["le"] if found.get("le") is not None else _INT_MAX
        for name, default in (("ge", _INT_MIN), ("le", _INT_MAX)):
            if found[name] == default:
                del found[name]
    return found


def _constraint_changes(old: mi.Type, new: mi.Type) -> Tuple[List[str], List[str]]:
    """(tightened, loosened) constraint descriptions from ``old`` to ``new``."""
    a, b = constraints(old), constraints(new)
    if isinstance(unwrap(old), mi.IntType) and isinstance(unwrap(new), mi.IntType):
        for bounds in (a, b):  # an absent int bound is int64's, so that moving it either way reads right
            bounds.setdefault("ge", _INT_MIN)
            bounds.setdefault("le", _INT_MAX)
    tightened, loosened = [], []
    for name in sorted(set(a) | set(b)):
        x, y = a.get(name), b.get(name)
        if x == y:
            continue
        text = f"{name} {x!r} -> {y!r}"
        if x is None:
            tightened.append(text)
        elif y is None:
            loosened.append(text)
        elif name in _LOWER:
            (tightened if y > x else loosened).append(text)
        elif name in _UPPER:
            (tightened if y < x else loosened).append(text)
        else:
            tightened.append(text)
    return tightened, loosened


def _arms(t: mi.Type) -> Set[str]:
    t = unwrap(t)
    if isinstance(t, mi.UnionType):
        return {type_text(a) for a in t.types}
    return {type_text(t)}


def _widens(old: mi.Type, new: mi.Type) -> bool:
    """Whether every value of ``old`` decodes as ``new`` (a union gaining arms; an int read as a float)."""
    a, b = _arms(old), _arms(new)
    if "int" in a and "float" in b:
        a = (a - {"int"}) | {"float"}
    return a <= b


def _arm_key(t: mi.Type) -> str:
    """Which arm of another version's union this one is: structs and enums by name, the rest by kind."""
    t = unwrap(t)
    if isinstance(t, (mi.StructType, mi.EnumType, mi.CustomType)):
        return t.cls.__name__
    return type(t).__name__


def _matched(old: mi.Type, new: mi.Type, out: List[Tuple[mi.Type, mi.Type]]) -> None:
    """The types at the same places of ``old`` and ``new``: struct pairs of one name (to compare in turn) and leaf pairs (to compare constraints).

    Union arms match by :func:`_arm_key`, containers by their item, key and value types
    (the same :func:`~reference_codec.type_tree.children` step on both sides).
    """
    a, b = unwrap(old), unwrap(new)
    if isinstance(a, mi.StructType) and isinstance(b, mi.StructType):
        if a.cls.__name__ == b.cls.__name__:
            out.append((a, b))
        return
    if isinstance(a, mi.UnionType) or isinstance(b, mi.UnionType):
        arms_a = a.types if isinstance(a, mi.UnionType) else (old,)
        arms_b = {_arm_key(x): x for x in (b.types if isinstance(b, mi.UnionType) else (new,))}
        for x in arms_a:
            y = arms_b.get(_arm_key(x))
            if y is not None:
                _matched(x, y, out)
        return
    if type(a) is not type(b):
        return
    if isinstance(a, (mi.CollectionType, mi.TupleType)) or isinstance(a, MAPPING_TYPES):
        if not isinstance(a, mi.TupleType):
            out.append((old, new))  # the collection's own length bounds
        theirs = dict(children(b))
        for step, x in children(a):
            y = theirs.get(step)
            if y is not None:
                _matched(x, y, out)
    else:
        out.append((old, new))


def _default_text(field: mi.Field) -> Optional[str]:
    if field.required:
        return None
    factory = field.default_factory
    if factory is not msgspec.NODEFAULT:
        if factory in (list, dict, set, frozenset, tuple, bytearray):
            return repr(factory())
        # Another factory's value may differ per call (uuid4().hex): name it instead.
        return f"factory {getattr(factory, '__module__', '')}.{getattr(factory, '__qualname__', repr(factory))}"
    return repr(field.default)


# --- structs ----------------------------------------------------------------------


def diff_struct(tag: str, old: type, new: type, *, _path: str = "", _seen: Optional[Set[Tuple[type, type]]] = None) -> List[Change]:
    """Changes from struct ``old`` to struct ``new`` (message ``tag``), and in every struct nested in them.

    A pair of nested classes is compared once per call, at the first path
    that reaches it (fields in declaration order).
    """
    seen = set() if _seen is None else _seen
    seen.add((old, new))
    path = _path or tag
    a, b = _struct_type(old), _struct_type(new)
    changes: List[Change] = []

    def change(kind: str, detail: str, breaking: bool, field: str = "") -> None:
        changes.append(Change(tag, kind, detail, breaking, path if _path else "", field))

    for attr in ("array_like", "tag", "tag_field"):
        if getattr(a, attr) != getattr(b, attr):
            change(f"{attr} changed", f"{getattr(a, attr)!r} -> {getattr(b, attr)!r}", True)
    positional = a.array_like and b.array_like
    pairs: List[Tuple[str, mi.Field, mi.Field]] = []
    if positional:
        shifted = _positional_fields(a, b, change, pairs)
    else:
        shifted = False
        _named_fields(a, b, change, pairs)
    for name, fa, fb in pairs:
        _field_changes(name, fa, fb, change)
    if shifted:
        return changes  # every later position reads another field; nothing nested below it means anything
    for name, fa, fb in pairs:
        matched: List[Tuple[mi.Type, mi.Type]] = []
        _matched(fa.type, fb.type, matched)
        for x, y in matched:
            if isinstance(x, mi.StructType) and isinstance(y, mi.StructType) and (x.cls, y.cls) not in seen:
                changes += diff_struct(tag, x.cls, y.cls, _path=f"{path}.{name} -> {y.cls.__name__}", _seen=seen)
    return changes


def _struct_type(cls: type) -> mi.StructType:
    info = type_info(cls)
    if not isinstance(info, mi.StructType):
        raise TypeError(f"{cls!r} is not a msgspec.Struct class")
    return info


def _about(change, field: str):
    return lambda kind, detail, breaking: change(kind, detail, breaking, field)


def _positional_fields(a, b, change, pairs) -> bool:
    """Fields matched by position; True when a field shifted (the first break is the one that matters)."""
    old_names = [f.encode_name for f in a.fields]
    new_names = [f.encode_name for f in b.fields]
    common = min(len(old_names), len(new_names))
    for i in range(common):
        fa, fb = a.fields[i], b.fields[i]
        if fa.encode_name != fb.encode_name:
            of = f"{i} of {len(new_names)}"
            if fa.encode_name in new_names and fb.encode_name not in old_names:
                change("field inserted", f"{fb.encode_name!r} at {of}, before {fa.encode_name!r}: every later field shifts", True, fb.encode_name)
            elif fb.encode_name in old_names and fa.encode_name not in new_names:
                change("field removed", f"{fa.encode_name!r} at {i} of {len(old_names)}: every later field shifts", True, fa.encode_name)
            else:
                change("field renamed or reordered", f"position {of}: {fa.encode_name!r} -> {fb.encode_name!r}", True)
            return True
        pairs.append((fa.encode_name, fa, fb))
    for i, f in enumerate(b.fields[common:], common):
        if f.required:
            change("field appended", f"{f.encode_name!r} at {i} of {len(new_names)} without a default: older senders' messages fail", True, f.encode_name)
        else:
            change("field appended", f"{f.encode_name!r} at the tail ({i} of {len(new_names)})", False, f.encode_name)
    for f in a.fields[common:]:
        if f.required:
            change("field removed", f"{f.encode_name!r} at the tail: older readers require it", True, f.encode_name)
        else:
            change("field removed", f"{f.encode_name!r} at the tail: newer readers ignore it, older readers get its default", False, f.encode_name)
    return False


def _named_fields(a, b, change, pairs) -> None:
    """Fields of structs encoded as maps, matched by name (their order does not matter on the wire)."""
    old = {f.encode_name: f for f in a.fields}
    new = {f.encode_name: f for f in b.fields}
    for name, f in new.items():
        if name in old:
            pairs.append((name, old[name], f))
        else:
            change("field added", f"{name!r}" + (" without a default: older senders' messages fail" if f.required else ""), f.required, name)
    for name, f in old.items():
        if name not in new:
            change("field removed", f"{name!r}" + (": older readers require it" if f.required else ": older readers get its default"), f.required, name)


def _field_changes(name: str, fa: mi.Field, fb: mi.Field, change) -> None:
    change = _about(change, name)
    ta, tb = type_text(fa.type), type_text(fb.type)
    if ta != tb:
        if _widens(fa.type, fb.type):
            change("type widened", f"{name!r}: {ta} -> {tb} (older readers refuse values only the new type allows)", False)
        else:
            change("type changed", f"{name!r}: {ta} -> {tb}", True)
    else:
        tightened, loosened = [], []
        matched: List[Tuple[mi.Type, mi.Type]] = []
        _matched(fa.type, fb.type, matched)
        for x, y in matched:
            if not isinstance(unwrap(x), mi.StructType):
                more_tight, more_loose = _constraint_changes(x, y)
                tightened += more_tight
                loosened += more_loose
        if tightened:
            change("constraint tightened", f"{name!r}: {', '.join(tightened)}: older senders' values may be refused", True)
        if loosened:
            change("constraint loosened", f"{name!r}: {', '.join(loosened)} (older readers refuse the new values)", False)
    da, db = _default_text(fa), _default_text(fb)
    if da != db:
        if db is None:
            change("default removed", f"{name!r}: {da} -> required: older senders' messages without it fail", True)
        else:
            change("default changed", f"{name!r}: {da} -> {db}", False)


# --- schemas ----------------------------------------------------------------------


def diff_schemas(old: Mapping[str, type], new: Mapping[str, type]) -> List[Change]:
    """Every change between two ``tag -> class`` mappings, message by message in tag order, nested structs included."""
    changes: List[Change] = []
    for tag in sorted(set(old) | set(new)):
        if tag not in new:
            changes.append(Change(tag, "message removed", "peers still sending it will be refused", True))
        elif tag not in old:
            changes.append(Change(tag, "message added", "older peers cannot decode it", False))
        else:
            changes.extend(diff_struct(tag, old[tag], new[tag]))
    return changes


def discover_messages(module: pytypes.ModuleType) -> Dict[str, type]:
    """The tagged message classes of ``module``: every string-tagged ``msgspec.Struct`` subclass reachable from its classes.

    Reachable: the module's struct classes and their subclasses at any depth;
    a subclass counts when the module names it or it is defined in the module
    or below it (a plug-in's own subclass of a base is not part of this schema). A tagged class
    with tagged subclasses is a base (``BaseReq``), not a message, and is
    left out. ``ValueError`` if two classes share a tag.
    """
    name = module.__name__
    queue = [obj for obj in vars(module).values() if isinstance(obj, type) and issubclass(obj, msgspec.Struct) and obj is not msgspec.Struct]
    listed = set(queue)

    def ours(cls: type) -> bool:
        return cls in listed or cls.__module__ == name or cls.__module__.startswith(name + ".")

    found: Dict[str, type] = {}
    seen: Set[type] = set()
    while queue:
        cls = queue.pop()
        if cls in seen:
            continue
        seen.add(cls)
        queue.extend(cls.__subclasses__())
        tag = _struct_type(cls).tag
        if not isinstance(tag, str) or not ours(cls):
            continue
        if any(isinstance(_struct_type(sub).tag, str) and ours(sub) for sub in cls.__subclasses__()):
            continue
        other = found.get(tag)
        if other is not None and other is not cls:
            raise ValueError(f"{module.__name__}: tag {tag!r} is used by {other.__qualname__} and {cls.__qualname__}")
        found[tag] = cls
    return dict(sorted(found.items()))


def load_schema(spec: str) -> Mapping[str, type]:
    """``MODULE`` (its messages, discovered) or ``MODULE:ATTR`` (a mapping, or a module to discover) as ``tag -> class``."""
    module_name, _, attr = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise ValueError(f"cannot import {module_name!r}: {exc}") from exc
    for part in attr.split(".") if attr else []:
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"{module_name!r} has no attribute {attr!r}") from None
    if isinstance(obj, pytypes.ModuleType):
        return discover_messages(obj)
    if not isinstance(obj, Mapping):
        raise ValueError(f"{spec!r} is neither a module nor a mapping of tag to struct class (got {type(obj).__qualname__})")
    return obj


def summary_line(changes: List[Change], old: str, new: str) -> str:
    """One line for a PR: the verdict, the counts, and the first breaking change."""
    breaking = [c for c in changes if c.breaking]
    if not breaking:
        return f"schema diff {old} -> {new}: compatible ({len(changes)} compatible change(s))"
    return f"schema diff {old} -> {new}: {len(breaking)} BREAKING change(s), first: {breaking[0].where}: {breaking[0].kind}: {breaking[0].detail}"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.schema_diff", description=__doc__.split("\n\n")[0])
    parser.add_argument("old", help="the older schema: MODULE (its tagged message classes) or MODULE:MAPPING")
    parser.add_argument("new", help="the newer schema, likewise")
    parser.add_argument("--all", action="store_true", help="print compatible changes too")
    parser.add_argument("--json", action="store_true", help="print the changes as JSON instead")
    args = parser.parse_args(argv)
    try:
        old, new = load_schema(args.old), load_schema(args.new)
    except ValueError as exc:
        parser.error(str(exc))
    changes = diff_schemas(old, new)
    breaking = [c for c in changes if c.breaking]
    if args.json:
        print(json.dumps({"old": args.old, "new": args.new, "breaking": len(breaking), "changes": [c.as_dict() for c in changes]}, indent=1))
    else:
        for c in changes if args.all else breaking:
            print(c)
        print(f"{len(breaking)} breaking change(s), {len(changes) - len(breaking)} compatible")
        print(summary_line(changes, args.old, args.new))
    return 1 if breaking else 0


if __name__ == "__main__":
    sys.exit(main())
