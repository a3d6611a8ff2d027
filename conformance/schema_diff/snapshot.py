"""Schema snapshots: an engine's wire schema as its encoder writes it, recorded as JSON from the runtime classes.

A snapshot lets two releases of one engine be compared although they cannot
be imported into one process: each release's snapshot is written in that
release's own environment (:mod:`conformance.releases`) and the diff
(:mod:`.compare`) reads two files.

What it records
===============

For each :class:`~conformance.engines.profile.MessageFamily` of the engine
(or one family given by a module): its framing, its root message types, its
msgpack ext codes, and every struct, dataclass and NamedTuple reachable from a
root, **in encoding order**, each with

* its form: ``array_like`` (positional) or a map, the tag field and tag value,
  ``kw_only``, ``omit_defaults``, ``forbid_unknown_fields``;
* each field's name on the wire, whether it is required or its default, and
  its type tree as ``msgspec.inspect`` sees it at runtime (unions, containers,
  constraints such as ``Meta(ge=0)`` kept), structs and enums by reference;
* each enum's members.

Everything comes from the runtime classes through ``msgspec.inspect``, never
from annotations read as text: a field whose ``TYPE_CHECKING`` branch names one
type but whose runtime annotation resolves to another is recorded as msgspec
encodes and decodes it. A struct msgspec cannot inspect (an annotation that
does not resolve at runtime) is recorded with the error, because the engine's
own decoder fails on it the same way.

The file is canonical JSON (sorted keys, two-space indent), so a release's
snapshot checked into a repository diffs line by line in review.
"""

from __future__ import annotations

import enum
import importlib
import json
import os
import platform
import types as pytypes
from typing import Any, Callable, Dict, List, Mapping, Optional, Set, Union

import msgspec
from msgspec import inspect as mi

from conformance.engines.profile import family_absent, installed_version
from reference_codec.type_tree import MAPPING_TYPES, RECORD_TYPES, STRUCT_TYPES, is_untyped, type_info

__all__ = [
    "SNAPSHOT_FORMAT",
    "TypeNode",
    "FieldRecord",
    "StructRecord",
    "EnumRecord",
    "FamilySnapshot",
    "Snapshot",
    "SnapshotError",
    "take_family",
    "take_snapshot",
    "classes_snapshot",
    "engine_snapshot",
    "installed_version",
    "module_snapshot",
    "module_roots",
    "discover_messages",
    "default_text",
    "write",
    "struct_key",
    "dumps",
    "load",
]

#: The ``format`` of a snapshot file; a reader refuses any other.
SNAPSHOT_FORMAT = "ipc-conformance/schema-snapshot/1"


class SnapshotError(ValueError):
    """A snapshot cannot be written (no messages found, a class msgspec cannot read) or read (not a snapshot, another format)."""


class TypeNode(msgspec.Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """One node of a field's type tree.

    ``kind`` is msgspec's name for it (``int``, ``str``, ``list``, ``dict``,
    ``tuple``, ``union``, ``literal``, ``struct``, ``enum``, ``custom``, ...).
    ``ref`` names a struct or enum in the snapshot's tables; ``item`` is a
    collection's element, ``key``/``value`` a mapping's, ``items`` a fixed
    tuple's positions, ``types`` a union's arms (msgspec's order), ``values`` a
    literal's; ``cls`` a custom type's ``module.qualname``; ``constraints``
    msgspec's bounds (``ge``, ``max_length``, ``pattern``, ...).
    """

    kind: str
    ref: Optional[str] = None
    item: Optional["TypeNode"] = None
    key: Optional["TypeNode"] = None
    value: Optional["TypeNode"] = None
    items: Optional[List["TypeNode"]] = None
    types: Optional[List["TypeNode"]] = None
    values: Optional[List[Any]] = None
    cls: Optional[str] = None
    constraints: Dict[str, Any] = {}


class FieldRecord(msgspec.Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """A field: its Python ``name``, its ``encode_name`` on the wire, its type, and its default (``None``: required)."""

    name: str
    encode_name: str
    type: TypeNode
    required: bool
    default: Optional[str] = None


class StructRecord(msgspec.Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """A struct, dataclass or NamedTuple class: its form on the wire and its fields in encoding order."""

    name: str
    module: str
    kind: str
    array_like: bool
    fields: List[FieldRecord] = []
    tag_field: Optional[str] = None
    tag: Union[str, int, None] = None
    kw_only: bool = False
    omit_defaults: bool = False
    forbid_unknown_fields: bool = False
    #: Why msgspec cannot read the class (its fields are then unknown), or None.
    error: Optional[str] = None


class EnumRecord(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """An enum: the values on the wire, by member name."""

    name: str
    module: str
    members: Dict[str, Union[int, str]]


class FamilySnapshot(msgspec.Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """One family: how a frame's type is known, its messages (name -> struct key) and its ext codes (code -> what)."""

    framing: str
    messages: Dict[str, str]
    description: str = ""
    ext_types: Dict[str, str] = {}


class Snapshot(msgspec.Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """A schema snapshot (see the module docstring); ``structs`` and ``enums`` are keyed ``module.QualName``."""

    format: str
    engine: str
    release: str
    families: Dict[str, FamilySnapshot]
    structs: Dict[str, StructRecord]
    enums: Dict[str, EnumRecord] = {}
    #: What wrote it: Python, msgspec and the engine's package versions.
    written_with: Dict[str, str] = {}
    #: Families of the engine this release does not have, or whose modules did not import here: name -> why.
    absent: Dict[str, str] = {}

    def message_count(self) -> int:
        return sum(len(f.messages) for f in self.families.values())


def struct_key(cls: type) -> str:
    """The key of a class in a snapshot's tables: ``module.QualName``."""
    return f"{cls.__module__}.{cls.__qualname__}"


class _Writer:
    def __init__(self) -> None:
        self.structs: Dict[str, StructRecord] = {}
        self.enums: Dict[str, EnumRecord] = {}
        self._pending: List[type] = []

    def add_root(self, cls: type) -> str:
        key = struct_key(cls)
        if key not in self.structs:
            self._record(cls)
        return key

    def drain(self) -> None:
        while self._pending:
            cls = self._pending.pop(0)
            if struct_key(cls) not in self.structs:
                self._record(cls)

    def _record(self, cls: type) -> None:
        key = struct_key(cls)
        try:
            info = type_info(cls)
        except Exception as exc:  # an annotation that does not resolve at runtime: msgspec's decoder fails the same way
            self.structs[key] = StructRecord(name=cls.__name__, module=cls.__module__, kind="struct", array_like=False, error=f"{type(exc).__name__}: {exc}")
            return
        if not isinstance(info, STRUCT_TYPES):
            raise SnapshotError(f"{key} is not a Struct, dataclass or NamedTuple class (msgspec reads it as {type(info).__name__})")
        record = StructRecord(name=cls.__name__, module=cls.__module__, kind="struct", array_like=True)
        self.structs[key] = record  # before the fields: a struct that holds itself refers to its own key
        if isinstance(info, mi.StructType):
            config = getattr(cls, "__struct_config__", None)
            record.array_like = info.array_like
            record.tag_field = info.tag_field
            record.tag = info.tag
            record.forbid_unknown_fields = info.forbid_unknown_fields
            record.kw_only = bool(getattr(config, "kw_only", False))
            record.omit_defaults = bool(getattr(config, "omit_defaults", False))
        else:  # a NamedTuple is written as an array, a dataclass as a map
            record.kind = "namedtuple" if isinstance(info, mi.NamedTupleType) else "dataclass"
            record.array_like = record.kind == "namedtuple"
        record.fields = [
            FieldRecord(name=f.name, encode_name=f.encode_name, type=self._node(f.type), required=f.required, default=default_text(f)) for f in info.fields
        ]

    def _node(self, t: mi.Type) -> TypeNode:
        found: Dict[str, Any] = {}
        while isinstance(t, mi.Metadata):
            extra = t.extra or {}
            for name, meta in (("ge", "min"), ("le", "max")):
                if meta in extra:
                    found.setdefault(name, extra[meta])
            t = t.type
        for name in ("gt", "ge", "lt", "le", "multiple_of", "min_length", "max_length", "pattern", "tz"):
            value = getattr(t, name, None)
            if value is not None and name not in found:
                found[name] = value
        node = self._shape(t)
        node.constraints = found
        return node

    def _shape(self, t: mi.Type) -> TypeNode:
        if isinstance(t, RECORD_TYPES):
            if isinstance(t, mi.TypedDictType):  # a plain map with named keys: recorded as the dict it is on the wire
                return TypeNode(kind="typeddict", cls=struct_key(t.cls), items=[self._node(f.type) for f in t.fields], values=[f.encode_name for f in t.fields])
            if struct_key(t.cls) not in self.structs:
                self._pending.append(t.cls)
            return TypeNode(kind="struct", ref=struct_key(t.cls))
        if isinstance(t, mi.EnumType):
            key = struct_key(t.cls)
            if key not in self.enums:
                self.enums[key] = EnumRecord(name=t.cls.__name__, module=t.cls.__module__, members={m.name: m.value for m in t.cls})
            return TypeNode(kind="enum", ref=key)
        if isinstance(t, mi.UnionType):
            return TypeNode(kind="union", types=[self._node(a) for a in t.types])
        if isinstance(t, mi.CollectionType):  # list, set, frozenset, variadic tuple
            return TypeNode(kind=_kind(t), item=self._node(t.item_type))
        if isinstance(t, MAPPING_TYPES):
            return TypeNode(kind="dict", key=self._node(t.key_type), value=self._node(t.value_type))
        if isinstance(t, mi.TupleType):
            return TypeNode(kind="tuple", items=[self._node(x) for x in t.item_types])
        if isinstance(t, mi.LiteralType):
            return TypeNode(kind="literal", values=sorted(t.values, key=repr))
        if is_untyped(t):  # ``object`` is read like ``Any``: whatever the wire holds
            return TypeNode(kind="any")
        if isinstance(t, mi.CustomType):
            return TypeNode(kind="custom", cls=f"{t.cls.__module__}.{t.cls.__qualname__}")
        return TypeNode(kind=_kind(t))


def _kind(t: mi.Type) -> str:
    return type(t).__name__.removesuffix("Type").lower()


def default_text(field: mi.Field) -> Optional[str]:
    """A field's default as text (``None`` when it is required); a factory other than an empty container is named, not called."""
    if field.required:
        return None
    factory = field.default_factory
    if factory is not msgspec.NODEFAULT:
        if factory in (list, dict, set, frozenset, tuple, bytearray):
            return repr(factory())
        # Another factory's value may differ per call (uuid4().hex): name it instead.
        return f"factory {getattr(factory, '__module__', '')}.{getattr(factory, '__qualname__', repr(factory))}"
    value = field.default
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    return repr(value)


def take_family(writer: _Writer, roots: Mapping[str, type], *, framing: str, description: str = "", ext_types: Optional[Mapping[int, str]] = None) -> FamilySnapshot:
    messages = {name: writer.add_root(cls) for name, cls in sorted(roots.items())}
    writer.drain()
    return FamilySnapshot(framing=framing, messages=messages, description=description, ext_types={str(k): v for k, v in sorted((ext_types or {}).items())})


def take_snapshot(
    families: Mapping[str, Callable[[_Writer], FamilySnapshot]], *, engine: str, release: str, package: Optional[str] = None
) -> Snapshot:
    """A snapshot of the families given as ``name -> (writer -> FamilySnapshot)``; ``SnapshotError`` if they hold no message."""
    writer = _Writer()
    taken = {name: make(writer) for name, make in families.items()}
    snapshot = Snapshot(
        format=SNAPSHOT_FORMAT,
        engine=engine,
        release=release,
        families=taken,
        structs=dict(sorted(writer.structs.items())),
        enums=dict(sorted(writer.enums.items())),
        written_with=_written_with(package),
    )
    if not snapshot.message_count():
        raise SnapshotError(f"{engine} {release}: no message types found, nothing to record")
    return snapshot


def _written_with(package: Optional[str]) -> Dict[str, str]:
    found = {"python": platform.python_version(), "msgspec": msgspec.__version__}
    version = installed_version(package)
    if package and version:
        found[package] = version
    return found


def classes_snapshot(roots: Mapping[str, type], *, framing: str, engine: str, release: str) -> Snapshot:
    """A one-family snapshot (family ``messages``) of classes of this process, ``name -> class``; empty when ``roots`` is."""
    writer = _Writer()
    family = take_family(writer, roots, framing=framing)
    return Snapshot(
        format=SNAPSHOT_FORMAT,
        engine=engine,
        release=release,
        families={"messages": family},
        structs=dict(sorted(writer.structs.items())),
        enums=dict(sorted(writer.enums.items())),
        written_with=_written_with(None),
    )


def engine_snapshot(engine: Any, *, release: Optional[str] = None, families: Optional[List[str]] = None) -> Snapshot:
    """The snapshot of an :class:`~conformance.engines.profile.Engine`'s families, from the release installed in this process.

    A family the installed release does not have (a module of the engine's
    own package is missing, or ``FamilyNotInRelease``) is left out and named
    in ``absent``; a family that does not import for another reason (this
    environment lacks a dependency) raises :class:`SnapshotError`. ``families`` keeps only those named. ``release`` defaults to
    the installed version of the engine's package.
    """
    if not engine.families:
        raise SnapshotError(f"engine {engine.name!r} declares no message families (Engine.families)")
    version = release or installed_version(engine.package) or "unreleased"

    def family(fam: Any) -> Callable[[_Writer], FamilySnapshot]:
        return lambda writer: take_family(writer, roots[fam.name], framing=fam.framing, description=fam.description, ext_types=fam.ext_types())

    roots: Dict[str, Mapping[str, type]] = {}
    absent: Dict[str, str] = {}
    for fam in engine.families:
        if families and fam.name not in families:
            continue
        try:
            roots[fam.name] = fam.roots()
        except ImportError as exc:
            if not family_absent(exc, engine.package):
                # Recording it as absent would write "this release has no such family" into the history for good.
                raise SnapshotError(
                    f"family {fam.name!r} of {engine.name} {version} did not import, and not because the release lacks it: "
                    f"{type(exc).__name__}: {exc} (install the dependency into this environment and take the snapshot again)"
                ) from exc
            absent[fam.name] = f"{type(exc).__name__}: {exc}"
    snapshot = take_snapshot({fam.name: family(fam) for fam in engine.families if fam.name in roots}, engine=engine.name, release=version, package=engine.package)
    snapshot.absent = absent
    return snapshot


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

    def tag(cls: type) -> Any:
        info = type_info(cls)
        return info.tag if isinstance(info, mi.StructType) else None

    found: Dict[str, type] = {}
    seen: Set[type] = set()
    while queue:
        cls = queue.pop()
        if cls in seen:
            continue
        seen.add(cls)
        queue.extend(cls.__subclasses__())
        value = tag(cls)
        if not isinstance(value, str) or not ours(cls):
            continue
        if any(isinstance(tag(sub), str) and ours(sub) for sub in cls.__subclasses__()):
            continue
        other = found.get(value)
        if other is not None and other is not cls:
            raise ValueError(f"{module.__name__}: tag {value!r} is used by {other.__qualname__} and {cls.__qualname__}")
        found[value] = cls
    return dict(sorted(found.items()))


def module_roots(spec: str, roots: Optional[List[str]] = None) -> Mapping[str, type]:
    """``MODULE`` (its tagged messages, or the classes ``roots`` names in it) or ``MODULE:ATTR`` (a mapping of name to class, or a module) as ``name -> class``."""
    module_name, _, attr = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise SnapshotError(f"cannot import {module_name!r}: {exc}") from exc
    for part in attr.split(".") if attr else []:
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SnapshotError(f"{module_name!r} has no attribute {attr!r}") from None
    if isinstance(obj, pytypes.ModuleType):
        if roots:
            missing = [r for r in roots if not isinstance(getattr(obj, r, None), type)]
            if missing:
                raise SnapshotError(f"{spec!r} has no class {', '.join(map(repr, missing))} (named by --roots)")
            return {r: getattr(obj, r) for r in roots}
        return discover_messages(obj)
    if not isinstance(obj, Mapping):
        raise SnapshotError(f"{spec!r} is neither a module nor a mapping of message name to class (got {type(obj).__qualname__})")
    return dict(obj) if not roots else {r: obj[r] for r in roots}


def module_snapshot(spec: str, roots: Optional[List[str]] = None, *, framing: Optional[str] = None) -> Snapshot:
    """A one-family snapshot of ``spec`` (see :func:`module_roots`); framing ``tagged`` unless roots are named."""
    found = module_roots(spec, roots)
    if not found:
        hint = "" if roots else ": it has no string-tagged msgspec.Struct classes; name the untagged message classes with --roots A,B (an engine's families)"
        raise SnapshotError(f"{spec!r}: no message classes found{hint}")
    return classes_snapshot(found, framing=framing or ("typed" if roots else "tagged"), engine=spec, release="module")


def dumps(snapshot: Snapshot) -> str:
    """Canonical JSON text of a snapshot (sorted keys, two-space indent, final newline)."""
    return json.dumps(msgspec.to_builtins(snapshot), indent=2, sort_keys=True) + "\n"


def load(path: Union[str, os.PathLike]) -> Snapshot:
    """Read a snapshot file; ``SnapshotError`` naming the file and what is wrong with it."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise SnapshotError(f"cannot read snapshot {os.fspath(path)!r}: {exc.strerror}") from exc
    try:
        snapshot = msgspec.json.decode(data, type=Snapshot)
    except msgspec.ValidationError as exc:
        raise SnapshotError(f"{os.fspath(path)!r} is not a schema snapshot: {exc}") from exc
    except msgspec.DecodeError as exc:
        raise SnapshotError(f"{os.fspath(path)!r} is not JSON: {exc}") from exc
    if snapshot.format != SNAPSHOT_FORMAT:
        raise SnapshotError(f"{os.fspath(path)!r} is a snapshot of format {snapshot.format!r}; this tool reads {SNAPSHOT_FORMAT!r}")
    return snapshot


def write(snapshot: Snapshot, path: Union[str, os.PathLike]) -> None:
    """Write ``snapshot`` to ``path`` (folders created)."""
    folder = os.path.dirname(os.fspath(path))
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(dumps(snapshot))

