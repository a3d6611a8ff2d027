"""Messages drawn from a schema snapshot, in the shape the sender's classes take them, and the comparison of what was sent with what was read.

The driver of a cross-release round trip imports neither release: it draws a
message from the *sender's* snapshot (:func:`message_strategy`) as plain
values shaped the way ``msgspec.convert`` builds the sender's class from them
(a positional struct as an array in field order with its tag first, a map
struct as a map of wire names), the sender's host builds and encodes it, the
receiver's host decodes it, and :func:`differences` compares the two neutral
forms (structs as maps of wire names) on the fields both carry.

What cannot be drawn from a snapshot: a custom type (a tensor, an array), a
datetime and the like. A field of such a type is drawn as its other union
arms (``None`` for ``Optional[Tensor]``); a struct that requires one cannot be
drawn, and a message that needs it is "not confirmable" live.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Tuple

from hypothesis import strategies as st

from conformance.schema_diff.snapshot import Snapshot, TypeNode

__all__ = ["message_strategy", "differences", "MAX_DEPTH"]

#: Structs nested deeper than this are not drawn (a recursive schema ends; a field that needs one is left at its default).
MAX_DEPTH = 5
_INT64 = (-(2**63), 2**63 - 1)


#: What an untyped field may hold on the wire: JSON-like values, nested (a sender typed ``Any`` sends whatever it has).
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**31), 2**31), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6))
_ANY = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)), max_leaves=6)


def message_strategy(snapshot: Snapshot, struct_key: str) -> st.SearchStrategy[Any]:
    """Values of the struct ``struct_key`` of ``snapshot``, shaped for ``msgspec.convert`` into the sender's class; ``st.nothing()`` when it cannot be drawn."""
    return _Drawer(snapshot).struct(struct_key, 0)


class _Drawer:
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    def node(self, node: TypeNode, depth: int) -> st.SearchStrategy[Any]:
        kind, c = node.kind, node.constraints
        if kind == "none":
            return st.none()
        if kind == "bool":
            return st.booleans()
        if kind == "int":
            lo = max(c.get("ge", _INT64[0]), c["gt"] + 1 if "gt" in c else _INT64[0])
            hi = min(c.get("le", _INT64[1]), c["lt"] - 1 if "lt" in c else _INT64[1])
            return st.integers(lo, hi) if lo <= hi else st.nothing()
        if kind == "float":
            lo = c.get("ge", c.get("gt"))
            hi = c.get("le", c.get("lt"))
            return st.floats(
                min_value=None if lo is None else float(lo),
                max_value=None if hi is None else float(hi),
                exclude_min="gt" in c,
                exclude_max="lt" in c,
                allow_nan=False,
                allow_infinity=False,
            )
        if kind == "str":
            if "pattern" in c:
                return st.from_regex(c["pattern"])
            lo = c.get("min_length", 0)
            return st.text(min_size=lo, max_size=max(lo, min(c.get("max_length", 8), 8)))
        if kind in ("bytes", "bytearray", "memoryview"):
            return st.binary(min_size=c.get("min_length", 0), max_size=max(c.get("min_length", 0), min(c.get("max_length", 8), 8)))
        if kind == "any":
            return _ANY
        if kind == "literal":
            return st.sampled_from(node.values) if node.values else st.nothing()
        if kind == "enum":
            members = list(self.snapshot.enums[node.ref or ""].members.values())
            return st.sampled_from(members) if members else st.nothing()
        if kind == "union":
            arms = [self.node(a, depth) for a in node.types or ()]
            arms = [a for a in arms if not a.is_empty]
            return st.one_of(arms) if arms else st.nothing()
        if kind in ("list", "vartuple", "set", "frozenset"):
            assert node.item is not None
            item = self.node(node.item, depth)
            lo = c.get("min_length", 0)
            hi = max(lo, min(c.get("max_length", 3), 3))
            if item.is_empty:
                return st.just([]) if lo == 0 else st.nothing()
            unique = kind in ("set", "frozenset")
            return st.lists(item, min_size=lo, max_size=hi, unique_by=(lambda x: repr(x)) if unique else None)
        if kind == "tuple":
            return st.tuples(*(self.node(x, depth) for x in node.items or ())).map(list)
        if kind == "dict":
            assert node.key is not None and node.value is not None
            key, value = self.node(node.key, depth), self.node(node.value, depth)
            if key.is_empty or value.is_empty:
                return st.just({}) if c.get("min_length", 0) == 0 else st.nothing()
            keys = key.filter(lambda k: not isinstance(k, (list, dict)))
            return st.dictionaries(keys, value, min_size=c.get("min_length", 0), max_size=max(c.get("min_length", 0), 3))
        if kind == "typeddict":
            names = [str(v) for v in node.values or ()]
            return st.fixed_dictionaries({n: self.node(t, depth) for n, t in zip(names, node.items or ())})
        if kind == "struct":
            return self.struct(node.ref or "", depth + 1)
        return st.nothing()  # custom types, datetimes, ext, raw: no plain value to draw

    def struct(self, key: str, depth: int) -> st.SearchStrategy[Any]:
        record = self.snapshot.structs[key]
        if record.error or depth > MAX_DEPTH:
            return st.nothing()
        fields = [(f, self.node(f.type, depth)) for f in record.fields]
        if any(s.is_empty for f, s in fields if f.required):
            return st.nothing()
        if record.array_like:
            # Every field up to the last one that can be drawn; a tail the sender would fill with defaults may be cut off.
            last = max((i for i, (f, s) in enumerate(fields) if not s.is_empty), default=-1)
            if any(s.is_empty for f, s in fields[: last + 1]):
                return st.nothing()
            head = [st.just(record.tag)] if record.tag is not None else []
            return st.tuples(*head, *(s for _, s in fields[: last + 1])).map(list)
        drawn = {f.encode_name: s for f, s in fields if not s.is_empty}
        required = {name: s for name, s in drawn.items() if next(f for f, _ in fields if f.encode_name == name).required}
        optional = {name: s for name, s in drawn.items() if name not in required}
        base: Dict[str, st.SearchStrategy[Any]] = {}
        if record.tag is not None:
            base[record.tag_field or "type"] = st.just(record.tag)
        return st.fixed_dictionaries({**base, **required}, optional=optional)


def differences(sent: Any, read: Any, path: str = "$", limit: int = 8, *, strict: bool = False, words: Tuple[str, str] = ("sent", "read")) -> List[str]:
    """Where ``read`` differs from ``sent`` (neutral forms): ``$.sampling_params.top_p: sent 0.9, read 0.05``.

    By default only on the fields both carry, and an int equals a float of the
    same value (two releases' schemas may differ). ``strict``: a key present
    on one side only differs (``$.medium: sent 'GPU', read absent``), an int
    differs from a float (``1`` is not ``1.0``) and ``0.0`` from ``-0.0``: the
    comparison of a decoder's answer with a golden vector. ``words`` name the
    two sides in the lines (``("expected", "got")``). At most ``limit`` lines.
    """
    found: List[str] = []
    _diff(sent, read, path, found, limit, strict, words)
    return found


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _step(path: str, key: Any) -> str:
    return f"{path}.{key}" if isinstance(key, str) and key.isidentifier() else f"{path}[{key!r}]"


def _diff(a: Any, b: Any, path: str, found: List[str], limit: int, strict: bool, words: Tuple[str, str]) -> None:
    if len(found) >= limit:
        return
    left, right = words
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a:
            if key in b:
                _diff(a[key], b[key], _step(path, key), found, limit, strict, words)
            elif strict and len(found) < limit:
                found.append(f"{_step(path, key)}: {left} {_short(a[key])}, {right} absent")
        if strict:
            for key in b:
                if key not in a and len(found) < limit:
                    found.append(f"{_step(path, key)}: {left} absent, {right} {_short(b[key])}")
        return
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            found.append(f"{path}: {left} {len(a)} item(s), {right} {len(b)}")
            return
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, f"{path}[{i}]", found, limit, strict, words)
        return
    if _same(a, b, strict):
        return
    found.append(f"{path}: {left} {_short(a)}, {right} {_short(b)}")


def _same(a: Any, b: Any, strict: bool = False) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and (not strict or math.copysign(1.0, a) == math.copysign(1.0, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and type(a) is not type(b):
        return not strict and a == b
    return type(a) is type(b) and a == b
