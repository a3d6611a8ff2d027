"""``python -m conformance.engines.sglang.sync``: follow a new SGLang release.

With the release installed (``pip install --no-deps sglang==X`` and its
pure-Python dependencies, as ``tox -e sglang`` does), it

1. reads SGLang's message classes (every tagged ``msgspec.Struct`` of
   ``sglang.srt.managers.io_struct`` that derives from a tagged base);
2. writes the fields snapshot the reference's tests compare against
   (``reference_codec/tests/sglang_<version>_fields.json``: each message's
   field names in order with their defaults);
3. prints the recursive schema diff from SGLang to the reference
   (:mod:`conformance.schema_diff`): the reference's documented differences;
4. says what the reference must add to mirror the release: new messages,
   fields SGLang appended, and any change SGLang made that positional
   decoding cannot follow. "no change needed" when there is none.

Exit status 0 when no change is needed, 1 otherwise (``--check`` also fails
when the snapshot on disk is not what it would write, and writes nothing).

Moving the reference to the next release is then: install it, run this, add
what it lists to :mod:`reference_codec.schema` (tail fields only), set
``SCHEMA_VERSION``, regenerate the vectors (``python -m conformance.vectors
generate``), update the failure list (``python -m conformance --codec sglang
--failure-list conformance/engines/sglang/failure_lists/sglang-<version>.txt
--update-failure-list``) and the pins in ``tox.ini`` and ``constraints/``.
"""

from __future__ import annotations

import argparse
import enum
import importlib
import json
import os
import sys
import types
from typing import Any, Dict, List, Mapping, Optional, cast

import msgspec
from msgspec import inspect as mi

from conformance.schema_diff import diff_schemas, discover_messages

__all__ = ["engine_messages", "fields_snapshot", "snapshot_path", "documented", "to_add", "main"]

DEFAULT_MODULE = "sglang.srt.managers.io_struct"


def engine_messages(module: types.ModuleType) -> Dict[str, type]:
    """The engine's message classes: discovered tagged structs that derive from a tagged base (``BaseReq``)."""
    def has_tagged_base(cls: type) -> bool:
        return any(isinstance(getattr(mi.type_info(b), "tag", None), str) for b in cls.__mro__[1:] if issubclass(b, msgspec.Struct) and b is not msgspec.Struct)

    return {tag: cls for tag, cls in discover_messages(module).items() if has_tagged_base(cls)}


def _default_text(field: mi.Field) -> Optional[str]:
    if field.required:
        return None
    if field.default_factory is not msgspec.NODEFAULT:
        return f"msgspec.field(default_factory={getattr(field.default_factory, '__name__', repr(field.default_factory))})"
    value = field.default
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    return repr(value)


def fields_snapshot(messages: Mapping[str, type], source: str) -> Dict[str, Any]:
    """``{"source": ..., "messages": {tag: [[field, default or None], ...]}}`` in tag order."""
    return {
        "messages": {tag: [[f.name, _default_text(f)] for f in cast(mi.StructType, mi.type_info(cls)).fields] for tag, cls in sorted(messages.items())},
        "source": source,
    }


def snapshot_path(version: str) -> str:
    """Where the fields snapshot of SGLang ``version`` lives: beside the reference schema's tests, which compare with it."""
    import reference_codec

    return os.path.join(os.path.dirname(os.path.abspath(reference_codec.__file__)), "tests", f"sglang_{version.replace('.', '_')}_fields.json")


def documented(change: Any) -> Optional[str]:
    """The reason a schema-diff change is a deliberate difference of the reference, or None."""
    from reference_codec.schema import DOCUMENTED_DIFFERENCES

    return DOCUMENTED_DIFFERENCES.get((change.struct, change.field)) if change.field else None


def to_add(reference: Mapping[str, type], engine: Mapping[str, type]) -> List[str]:
    """What the reference lacks to mirror ``engine``: one instruction per line (empty: no change needed).

    Documented differences (:data:`reference_codec.schema.DOCUMENTED_DIFFERENCES`) are not asked for.
    """
    lines = []
    for change in diff_schemas(reference, engine):
        if documented(change):
            continue
        if change.kind == "message added":
            cls = engine[change.tag]
            fields = ", ".join(f.name for f in cast(mi.StructType, mi.type_info(cls)).fields)
            lines.append(f"add message {change.tag} ({fields}) to reference_codec/schema")
        elif change.kind == "field appended":
            lines.append(f"append to {change.where}: {change.detail}")
        elif change.kind in ("message removed",):
            lines.append(f"{change.tag}: the release no longer has it; keep it while peers may still send it, or remove it")
        elif change.breaks("backward"):
            lines.append(f"the release changed {change.where} in a way positional decoding cannot follow ({change.kind}: {change.detail}); decide, and document it")
    return lines


def _dump(snapshot: Dict[str, Any]) -> str:
    return json.dumps(snapshot, indent=1, ensure_ascii=False) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.engines.sglang.sync", description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", default=DEFAULT_MODULE, help=f"the engine's message module (default {DEFAULT_MODULE})")
    parser.add_argument("--version", default=None, help="the release, for the snapshot's name (default: the installed sglang's __version__)")
    parser.add_argument("--snapshot", default=None, help="where to write the fields snapshot (default reference_codec/tests/sglang_<version>_fields.json)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the snapshot on disk differs or the reference needs a change")
    args = parser.parse_args(argv)

    try:
        module = importlib.import_module(args.module)
    except Exception as exc:
        parser.error(f"cannot import {args.module!r} (is the release installed? see tox -e sglang): {exc}")
    version = args.version or getattr(importlib.import_module(args.module.split(".")[0]), "__version__", None)
    if not version:
        parser.error("the release has no __version__; give --version")

    from conformance.schema_diff import diff_schemas
    from reference_codec.schema import MESSAGE_TYPES, SCHEMA_VERSION

    engine = engine_messages(module)
    path = args.snapshot or snapshot_path(version)
    text = _dump(fields_snapshot(engine, f"sglang {version} {args.module}"))
    status = 0
    if args.check:
        current = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if current != text:
            print(f"snapshot {path} is not what sglang {version} gives: rerun without --check to rewrite it")
            status = 1
    else:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(f"wrote {path} ({len(engine)} messages of sglang {version})")
    differences = [c for c in diff_schemas(engine, MESSAGE_TYPES) if c.breaks("backward")]
    undocumented = [c for c in differences if not documented(c)]
    print(
        f"schema diff sglang {version} -> reference ({SCHEMA_VERSION}): {len(differences)} breaking difference(s), "
        f"{len(undocumented)} of them not documented"
    )
    for change in differences:
        reason = documented(change)
        print(f"  {change}" + (f"\n      documented: {reason}" if reason else "\n      NOT DOCUMENTED"))
    if undocumented:
        status = 1
    needed = to_add(MESSAGE_TYPES, engine)
    if needed:
        print(f"to mirror sglang {version}, the reference needs:")
        for line in needed:
            print(f"  {line}")
        status = 1
    else:
        print("no change needed" + ("" if version == SCHEMA_VERSION else f" (set SCHEMA_VERSION to {version!r})"))
        if version != SCHEMA_VERSION:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
