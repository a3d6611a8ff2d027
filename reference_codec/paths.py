"""Naming the place of a value in a message: ``$.output_token_logprobs_val[0][1]``.

Used only on error paths, so clarity beats speed here.
"""

from __future__ import annotations

import functools
import re
from typing import Callable, List, Optional, Tuple

import msgspec
from msgspec import inspect as mi

from .errors import format_path

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
    type_info = _type_info(root_type)
    value = body
    for step in positional:
        type_info = _resolve(type_info, value)
        if isinstance(type_info, mi.StructType) and isinstance(step, int) and type_info.array_like:
            offset = 1 if type_info.tag is not None else 0
            index = step - offset
            if 0 <= index < len(type_info.fields):
                field = type_info.fields[index]
                parts.append(field.name)
                type_info = field.type
            else:
                parts.append(step)
                type_info = mi.AnyType()
        elif isinstance(type_info, mi.StructType) and isinstance(step, str):
            field = next((f for f in type_info.fields if f.encode_name == step), None)
            parts.append(field.name if field else step)
            type_info = field.type if field else mi.AnyType()
        elif isinstance(type_info, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
            parts.append(step)
            type_info = type_info.item_type
        elif isinstance(type_info, mi.TupleType) and isinstance(step, int) and step < len(type_info.item_types):
            parts.append(step)
            type_info = type_info.item_types[step]
        elif isinstance(type_info, mi.DictType):
            parts.append(step)
            type_info = type_info.value_type
        else:
            parts.append(step)
            type_info = mi.AnyType()
        value = _child(value, step)
    return format_path(parts)


@functools.lru_cache(maxsize=16)
def _type_info(root_type: object) -> mi.Type:
    # Inspecting the 100-message union takes ~40 ms; uncached, every rejected
    # frame paid it, so a peer sending junk cost the receiver 40 ms a frame
    # (found by the fuzz loop's throughput).
    return mi.type_info(root_type)


def _child(value: object, step: object) -> object:
    try:
        if isinstance(value, list) and isinstance(step, int):
            return value[step]
        if isinstance(value, dict):
            return value.get(step)
    except IndexError:
        pass
    return None


def _resolve(type_info: mi.Type, value: object) -> mi.Type:
    """Pick the union arm (or struct) that ``value`` in the generic body stands for."""
    if not isinstance(type_info, mi.UnionType):
        return type_info
    arms = [t for t in type_info.types if not isinstance(t, mi.NoneType)]
    if isinstance(value, list) and value and isinstance(value[0], str):
        for arm in arms:
            if isinstance(arm, mi.StructType) and arm.tag == value[0]:
                return arm
    for arm in arms:
        if isinstance(value, list) and isinstance(arm, (mi.ListType, mi.VarTupleType, mi.TupleType, mi.SetType)):
            return arm
        if isinstance(value, list) and isinstance(arm, mi.StructType) and arm.array_like:
            return arm
        if isinstance(value, dict) and isinstance(arm, (mi.DictType, mi.StructType)):
            return arm
    return arms[0] if len(arms) == 1 else mi.AnyType()


