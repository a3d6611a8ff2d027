"""Naming the place of a value in a message: ``$.output_token_logprobs_val[0][1]``.

Used only on error paths, so clarity beats speed here.
"""

from __future__ import annotations

import re
from typing import Callable, List, Optional, Tuple

import msgspec
from msgspec import inspect as mi

from .errors import format_path
from .type_tree import MAPPING_TYPES, element_type, type_info, unwrap

__all__ = ["locate", "named_path", "parse_msgspec_path", "generic_body"]

_PATH_RE = re.compile(r" - at `(?:(?P<key>[^`$][^`]*)` in `)?(?P<path>\$[^`]*)`$")
_TOKEN_RE = re.compile(r"\[(\d+)\]|\.([A-Za-z_][A-Za-z_0-9]*)|\[([^\]]*)\]")


def locate(root: object, match: Callable[[object], bool], limit: int = 100_000) -> Optional[Tuple]:
    """Path parts of the first value under ``root`` (structs, lists, tuples, dicts) for which ``match`` is true."""
    stack: List[Tuple[object, Tuple]] = [(root, ())]
    seen = 0
    while stack and seen < limit:
        value, path = stack.pop()
        seen += 1
        if match(value):
            return path
        children: List[Tuple[object, Tuple]] = []
        if isinstance(value, msgspec.Struct):
            children = [(getattr(value, f), path + (f,)) for f in value.__struct_fields__]
        elif isinstance(value, (list, tuple)):
            children = [(v, path + (i,)) for i, v in enumerate(value)]
        elif isinstance(value, dict):
            for k, v in value.items():
                children.append((k, path + (k,)))
                children.append((v, path + (k,)))
        stack.extend(reversed(children))
    return None


def parse_msgspec_path(message: str) -> Tuple[str, Optional[List]]:
    """Split a msgspec error message into (reason, path parts) when it ends in `` - at `$...` ``."""
    m = _PATH_RE.search(message)
    if not m:
        return message, None
    parts: List = []
    for idx, attr, key in _TOKEN_RE.findall(m.group("path")[1:]):
        parts.append(int(idx) if idx else (attr or key.strip("'\"")))
    reason = message[: m.start()]
    if m.group("key"):  # msgspec's "at `key` in `$[3]`": the offending part is a dict key
        reason += " (in a dict key)"
    return reason, parts


def generic_body(body) -> object:
    """The body decoded without a schema, ext values left opaque; None if it is not msgpack."""
    try:
        return msgspec.msgpack.decode(body, ext_hook=lambda code, data: msgspec.msgpack.Ext(code, bytes(data)))
    except Exception:
        return None


def named_path(root_type: object, body: object, positional: List) -> str:
    """Translate a positional path into the body (``[0][14][2]``) into field names (``$.rids[2]``)."""
    parts: List = []
    field: Optional[mi.Field]  # None where a map key names no field
    # type_info is cached: uncached, every rejected frame paid the ~40 ms of
    # inspecting the 100-message union, so a peer sending junk cost the
    # receiver 40 ms a frame (found by the fuzz loop's throughput).
    t = type_info(root_type)
    value = body
    for step in positional:
        t = _resolve(t, value)
        item = element_type(t)
        if isinstance(t, mi.StructType) and isinstance(step, int) and t.array_like:
            offset = 1 if t.tag is not None else 0
            index = step - offset
            if 0 <= index < len(t.fields):
                field = t.fields[index]
                parts.append(field.name)
                t = field.type
            else:
                parts.append(step)
                t = mi.AnyType()
        elif isinstance(t, mi.StructType) and isinstance(step, str):
            field = next((f for f in t.fields if f.encode_name == step), None)
            parts.append(field.name if field else step)
            t = field.type if field else mi.AnyType()
        elif item is not None:
            parts.append(step)
            t = item
        elif isinstance(t, mi.TupleType) and isinstance(step, int) and step < len(t.item_types):
            parts.append(step)
            t = t.item_types[step]
        elif isinstance(t, MAPPING_TYPES):
            parts.append(step)
            t = t.value_type
        else:
            parts.append(step)
            t = mi.AnyType()
        value = _child(value, step)
    return format_path(parts)


def _child(value: object, step: object) -> object:
    try:
        if isinstance(value, list) and isinstance(step, int):
            return value[step]
        if isinstance(value, dict):
            return value.get(step)
    except IndexError:
        pass
    return None


def _resolve(t: mi.Type, value: object) -> mi.Type:
    """``t`` without Metadata, and for a union the arm (or struct) that ``value`` in the generic body stands for."""
    t = unwrap(t)
    if not isinstance(t, mi.UnionType):
        return t
    arms = [unwrap(a) for a in t.types if not isinstance(unwrap(a), mi.NoneType)]
    if isinstance(value, list) and value and isinstance(value[0], str):
        for arm in arms:
            if isinstance(arm, mi.StructType) and arm.tag == value[0]:
                return arm
    for arm in arms:
        if isinstance(value, list) and (element_type(arm) is not None or isinstance(arm, mi.TupleType)):
            return arm
        if isinstance(value, list) and isinstance(arm, mi.StructType) and arm.array_like:
            return arm
        if isinstance(value, dict) and isinstance(arm, (*MAPPING_TYPES, mi.StructType)):
            return arm
    return arms[0] if len(arms) == 1 else mi.AnyType()


