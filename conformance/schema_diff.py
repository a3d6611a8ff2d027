"""Compare two versions of a positional (``array_like``) schema and name what breaks the wire.

With positional encoding a field is identified by its index, so the only
compatible change to a message is appending fields with defaults at the tail.
Anything else silently shifts every later field: a new SGLang field inserted
in the middle of ``TokenizedGenerateReqInput`` makes an older peer read
``session_id`` where ``lora_id`` was. This check catches that before it ships::

    python -m conformance.schema_diff OLD_MODULE:MAPPING NEW_MODULE:MAPPING

where each side names a ``Mapping[tag, struct class]`` (for instance
``reference_codec.schema:MESSAGE_TYPES``). Exit status 1 on a breaking change.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional

import msgspec
from msgspec import inspect as mi

__all__ = ["Change", "diff_schemas", "diff_struct", "type_text", "main"]


@dataclass(frozen=True)
class Change:
    """One difference between schema versions; ``breaking`` ones corrupt positional decoding."""

    tag: str
    kind: str
    detail: str
    breaking: bool

    def __str__(self) -> str:
        return f"{'BREAKING' if self.breaking else 'compatible'}: {self.tag}: {self.kind}: {self.detail}"


def type_text(t: mi.Type) -> str:
    """A structural spelling of a msgspec type, with structs and enums by name (so versions compare)."""
    if isinstance(t, mi.StructType):
        return t.cls.__name__
    if isinstance(t, mi.EnumType):
        return f"enum {t.cls.__name__}{sorted(m.value for m in t.cls)!r}"
    if isinstance(t, mi.UnionType):
        return " | ".join(sorted(type_text(a) for a in t.types))
    if isinstance(t, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
        return f"{type(t).__name__[:-4].lower()}[{type_text(t.item_type)}]"
    if isinstance(t, mi.TupleType):
        return f"tuple[{', '.join(type_text(x) for x in t.item_types)}]"
    if isinstance(t, mi.DictType):
        return f"dict[{type_text(t.key_type)}, {type_text(t.value_type)}]"
    if isinstance(t, mi.LiteralType):
        return f"literal{sorted(map(repr, t.values))}"
    if isinstance(t, mi.CustomType):
        return f"{t.cls.__module__}.{t.cls.__qualname__}"
    if isinstance(t, mi.IntType):
        return "int"  # bounds are validation, not wire layout
    return type(t).__name__.removesuffix("Type").lower()


def _default_text(field: mi.Field) -> Optional[str]:
    if field.required:
        return None
    if field.default_factory is not msgspec.NODEFAULT:
        try:
            return repr(field.default_factory())
        except Exception:
            return f"factory {field.default_factory!r}"
    return repr(field.default)


def diff_struct(tag: str, old: type, new: type) -> List[Change]:
    """Changes from struct ``old`` to struct ``new`` that share wire tag ``tag``."""
    a, b = mi.type_info(old), mi.type_info(new)
    changes: List[Change] = []
    for attr in ("array_like", "tag", "tag_field"):
        if getattr(a, attr) != getattr(b, attr):
            changes.append(Change(tag, f"{attr} changed", f"{getattr(a, attr)!r} -> {getattr(b, attr)!r}", True))
    old_names = [f.encode_name for f in a.fields]
    new_names = [f.encode_name for f in b.fields]
    positional = a.array_like and b.array_like
    common = min(len(old_names), len(new_names))
    for i in range(common):
        fa, fb = a.fields[i], b.fields[i]
        if fa.encode_name != fb.encode_name:
            if fa.encode_name in new_names and fb.encode_name not in old_names:
                kind = "field inserted"
                detail = f"{fb.encode_name!r} at position {i}, before {fa.encode_name!r}: every later field shifts"
            elif fb.encode_name in old_names and fa.encode_name not in new_names:
                kind = "field removed"
                detail = f"{fa.encode_name!r} at position {i}: every later field shifts"
            else:
                kind = "field renamed or reordered"
                detail = f"position {i}: {fa.encode_name!r} -> {fb.encode_name!r}"
            changes.append(Change(tag, kind, detail, positional or fb.encode_name not in old_names))
            if positional:
                return changes  # later positions are all shifted; the first break is what matters
            continue
        ta, tb = type_text(fa.type), type_text(fb.type)
        if ta != tb:
            changes.append(Change(tag, "type changed", f"{fa.encode_name!r}: {ta} -> {tb}", True))
        da, db = _default_text(fa), _default_text(fb)
        if da != db:
            breaking = db is None  # a field becoming required rejects older senders' messages
            changes.append(Change(tag, "default changed", f"{fa.encode_name!r}: {da} -> {db}", breaking))
    for f in b.fields[common:]:
        changes.append(
            Change(
                tag,
                "field appended",
                f"{f.encode_name!r} at the tail" + ("" if not f.required else " without a default: older senders' messages fail"),
                f.required,
            )
        )
    for f in a.fields[common:]:
        if f.encode_name not in new_names:
            changes.append(Change(tag, "field removed", f"{f.encode_name!r} at the tail: newer readers ignore it, older readers get its default", False))
    return changes


def diff_schemas(old: Mapping[str, type], new: Mapping[str, type]) -> List[Change]:
    """Every change between two ``tag -> class`` mappings, message by message, in tag order."""
    changes: List[Change] = []
    for tag in sorted(set(old) | set(new)):
        if tag not in new:
            changes.append(Change(tag, "message removed", "peers still sending it will be refused", True))
        elif tag not in old:
            changes.append(Change(tag, "message added", "older peers cannot decode it", False))
        else:
            changes.extend(diff_struct(tag, old[tag], new[tag]))
    return changes


def _load(spec: str) -> Any:
    module, _, attr = spec.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split(".") if attr else []:
        obj = getattr(obj, part)
    return obj


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.schema_diff", description=__doc__.split("\n\n")[0])
    parser.add_argument("old", help="MODULE:MAPPING of the older schema")
    parser.add_argument("new", help="MODULE:MAPPING of the newer schema")
    parser.add_argument("--all", action="store_true", help="print compatible changes too")
    args = parser.parse_args(argv)
    changes = diff_schemas(_load(args.old), _load(args.new))
    breaking = [c for c in changes if c.breaking]
    for change in changes if args.all else breaking:
        print(change)
    print(f"{len(breaking)} breaking change(s), {len(changes) - len(breaking)} compatible")
    return 1 if breaking else 0


if __name__ == "__main__":
    sys.exit(main())
