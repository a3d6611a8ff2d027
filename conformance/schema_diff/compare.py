"""Compare two schema snapshots and say, for every change, which way it breaks the wire and how the receiver fails.

A change is judged the way a schema registry judges it, in two directions:

* **backward**: an *old sender* to a *new receiver* (the new release reading
  what the previous one wrote: a rolling upgrade, an older prefill server
  feeding a newer decode server);
* **forward**: a *new sender* to an *old receiver* (a router or gateway built
  against the previous release reading the new one).

and in each direction the receiver's fate is one of :data:`EFFECTS`: it
reads the message correctly (``ok``), **refuses** it with a decode error,
**misreads** it silently (a value lands in the wrong field, or a default
replaces what was sent), or, where it depends on the values, **refuses or
misreads**. ``--mode backward`` fails on changes that break backward,
``forward`` on forward, ``full`` on either.

How a receiver reads a sender's struct (msgspec's rules, which every engine's
codec here follows):

* **positional** (``array_like``): the receiver's field *k* reads the
  sender's element *k*, whatever its name. An element the sender does not
  write leaves the receiver's default, or fails a required field; elements
  past the receiver's last field are skipped, unless it forbids unknown
  fields. So a field inserted or removed anywhere but the tail shifts every
  later field: the receiver misreads where the shifted values fit the types
  and refuses where they do not.
* **a map**: fields match by wire name; a missing one takes the receiver's
  default (or fails a required field), an unknown one is skipped unless
  forbidden. With ``omit_defaults`` a sender leaves out a field equal to *its*
  default, so a changed default is read as the receiver's: a silent misread.
* **types**: a value decodes when the receiver's type accepts it (an ``int``
  where a ``float`` is expected does); a type that accepts only some of the
  sender's values (a narrowed union, a tightened bound, an enum that lost a
  member) refuses those.
* **messages and ext codes**: a message type or an ext code the receiver does
  not know is refused.

Nested structs are compared wherever a field reaches them (through unions
and containers), each pair once, and each change names its path
(``TokenizedGenerateReqInput.sampling_params -> SamplingParams``). Below a
positional struct whose fields shifted nothing is compared: every later field
already reads the wrong bytes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Mapping, Set, Tuple

from .snapshot import FieldRecord, Snapshot, SnapshotError, StructRecord, TypeNode, classes_snapshot

__all__ = [
    "OK",
    "REFUSES",
    "MISREADS",
    "REFUSES_OR_MISREADS",
    "EFFECTS",
    "MODES",
    "Change",
    "Comparison",
    "compare",
    "diff_schemas",
    "diff_struct",
    "type_text",
    "summary_line",
]

OK, REFUSES, MISREADS, REFUSES_OR_MISREADS = "ok", "refuses", "misreads", "refuses or misreads"
#: A receiver's fate, from harmless to worst.
EFFECTS = (OK, REFUSES, REFUSES_OR_MISREADS, MISREADS)
#: ``--mode`` values: which directions a breaking change is judged in.
MODES = ("backward", "forward", "full")


@dataclass(frozen=True)
class Change:
    """One difference between two schema versions, and what it does in each direction.

    ``path`` is where it is: the message, then ``.field -> Struct`` for each
    nested struct on the way (``TokenizedGenerateReqInput.sampling_params -> SamplingParams``).
    ``backward``: what a new receiver does with an old sender's message;
    ``forward``: what an old receiver does with a new sender's (:data:`EFFECTS`).
    """

    tag: str
    kind: str
    detail: str
    backward: str = OK
    forward: str = OK
    path: str = ""
    #: The field the change is about, where it is about one.
    field: str = ""
    #: The family the message belongs to ("" for a one-family comparison).
    family: str = ""

    @property
    def where(self) -> str:
        return self.path or self.tag

    @property
    def struct(self) -> str:
        """The name of the struct class the change is in (the message's own name at the top level)."""
        return self.where.rpartition(" -> ")[2] or self.tag

    @property
    def breaking(self) -> bool:
        """Whether it breaks in either direction (``--mode full``)."""
        return self.breaks("full")

    def breaks(self, mode: str) -> bool:
        """Whether it breaks the wire in ``mode`` (:data:`MODES`)."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        return (mode != "forward" and self.backward != OK) or (mode != "backward" and self.forward != OK)

    @property
    def direction(self) -> str:
        """``backward``, ``forward``, ``both`` or ``none``: which way it breaks."""
        back, fwd = self.backward != OK, self.forward != OK
        return "both" if back and fwd else "backward" if back else "forward" if fwd else "none"

    def __str__(self) -> str:
        verdict = "BREAKING" if self.breaking else "compatible"
        return f"{verdict}: {self.where}: {self.kind}: {self.detail} [old->new {self.backward}; new->old {self.forward}]"

    def as_dict(self) -> Dict[str, Any]:
        return {**asdict(self), "where": self.where, "struct": self.struct, "direction": self.direction, "breaking": self.breaking}


@dataclass(frozen=True)
class Comparison:
    """The changes between two snapshots, and how much was compared (a comparison of nothing judges nothing)."""

    old: str
    new: str
    changes: List[Change]
    messages: int
    structs: int

    def breaking(self, mode: str = "full") -> List[Change]:
        return [c for c in self.changes if c.breaks(mode)]


def _worst(*effects: str) -> str:
    found = [e for e in effects if e != OK]
    if not found:
        return OK
    if all(e == REFUSES for e in found):
        return REFUSES
    if all(e == MISREADS for e in found):
        return MISREADS
    return REFUSES_OR_MISREADS


# --- types ------------------------------------------------------------------------

#: The range an unconstrained ``int`` field is read as: int64. msgpack itself
#: carries up to 2**64-1, but IPC schemas mean int64 by ``int`` (SGLang's senders
#: never write more; the reference declares its int fields ``Int64`` and the
#: few that carry more ``UInt64``), so ``int`` and ``Int64`` are the same type
#: here and only a bound inside that range is a constraint.
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1
_LOWER = ("gt", "ge", "min_length")
_UPPER = ("lt", "le", "max_length")

#: What each kind of node is on the msgpack wire, to tell types that share no value.
_WIRE_KIND = {
    "none": "nil",
    "bool": "bool",
    "int": "int",
    "float": "float",
    "str": "str",
    "bytes": "bin",
    "bytearray": "bin",
    "memoryview": "bin",
    "list": "array",
    "set": "array",
    "frozenset": "array",
    "vartuple": "array",
    "tuple": "array",
    "namedtuple": "array",
    "dict": "map",
    "typeddict": "map",
    "ext": "ext",
    "datetime": "ext",
}


class _Side:
    """One snapshot, with its tables at hand."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    def struct(self, node_or_key: Any) -> StructRecord:
        key: str = (node_or_key.ref or "") if isinstance(node_or_key, TypeNode) else node_or_key
        return self.snapshot.structs[key]

    def enum_values(self, node: TypeNode) -> List[Any]:
        assert node.ref is not None
        return sorted(self.snapshot.enums[node.ref].members.values(), key=repr)

    def text(self, node: TypeNode) -> str:
        """A structural spelling, structs and enums by name, constraints left out."""
        kind = node.kind
        if kind == "struct":
            return self.struct(node).name
        if kind == "enum":
            assert node.ref is not None
            return f"enum {self.snapshot.enums[node.ref].name}{self.enum_values(node)!r}"
        if kind == "union":
            return " | ".join(sorted(self.text(a) for a in node.types or ()))
        if node.item is not None:
            return f"{kind}[{self.text(node.item)}]"
        if kind == "tuple":
            return f"tuple[{', '.join(self.text(x) for x in node.items or ())}]"
        if kind == "dict":
            assert node.key is not None and node.value is not None
            return f"dict[{self.text(node.key)}, {self.text(node.value)}]"
        if kind == "literal":
            return f"literal{[repr(v) for v in node.values or ()]}"
        if kind == "custom":
            return str(node.cls)
        if kind == "typeddict":
            return f"typeddict {node.cls}"
        return kind

    def arms(self, node: TypeNode) -> List[TypeNode]:
        return list(node.types or ()) if node.kind == "union" else [node]

    def wire_kinds(self, node: TypeNode) -> Set[str]:
        """The msgpack kinds a value of ``node`` can be written as (an unknown custom type can be anything)."""
        found: Set[str] = set()
        for arm in self.arms(node):
            if arm.kind == "struct":
                record = self.struct(arm)
                found.add("array" if record.array_like else "map")
            elif arm.kind == "enum":
                found |= {"int" if isinstance(v, int) else "str" for v in self.enum_values(arm)}
            elif arm.kind == "literal":
                found |= {"nil" if v is None else "int" if isinstance(v, int) else "str" for v in arm.values or ()}
            elif arm.kind in ("any", "custom", "raw"):
                found.add("*")
            else:
                found.add(_WIRE_KIND.get(arm.kind, arm.kind))
        return found


def _constraints(node: TypeNode) -> Dict[str, Any]:
    found = dict(node.constraints)
    found.pop("tz", None)
    if node.kind == "int":
        for name, default in (("ge", _INT_MIN), ("le", _INT_MAX)):
            if found.get(name) == default:
                del found[name]
    return found


def _constraint_changes(old: TypeNode, new: TypeNode) -> Tuple[List[str], List[str]]:
    """(tightened, loosened) constraint descriptions from ``old`` to ``new``."""
    a, b = _constraints(old), _constraints(new)
    if old.kind == "int" and new.kind == "int":
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


def _accepts(receiver: _Side, r: TypeNode, sender: _Side, s: TypeNode) -> str:
    """Whether a receiver of type ``r`` accepts the values of a sender's type ``s``: ``all``, ``some`` or ``none``.

    Containers are compared through their items (an empty container passes
    whatever its item type, so disjoint items make ``some``); structs of one
    name accept each other here (their own fields are compared where the diff
    reaches them); constraints are compared elsewhere.
    """
    verdicts = [_best(receiver, r, sender, arm) for arm in sender.arms(s)]
    if all(v == "all" for v in verdicts):
        return "all"
    if all(v == "none" for v in verdicts):
        return "none"
    return "some"


_RANK = {"none": 0, "some": 1, "all": 2}


def _best(receiver: _Side, r: TypeNode, sender: _Side, s: TypeNode) -> str:
    """The best any arm of ``r`` does with the values of the single (non-union) type ``s``."""
    best = "none"
    for arm in receiver.arms(r):
        verdict = _accepts_one(receiver, arm, sender, s)
        if _RANK[verdict] > _RANK[best]:
            best = verdict
    return best


_COLLECTIONS = ("list", "set", "frozenset", "vartuple")


def _accepts_one(receiver: _Side, r: TypeNode, sender: _Side, s: TypeNode) -> str:
    if r.kind == "any":
        return "all"
    if s.kind == "any":
        return "some"
    if r.kind == "struct" and s.kind == "struct":
        a, b = receiver.struct(r), sender.struct(s)
        if a.name == b.name:
            return "all"
        return "some" if a.array_like == b.array_like else "none"
    if r.kind == "enum" and s.kind == "enum":
        mine, theirs = set(receiver.enum_values(r)), set(sender.enum_values(s))
        return "all" if theirs <= mine else "some" if theirs & mine else "none"
    if r.kind == "literal" and s.kind == "literal":
        mine_l, theirs_l = set(map(repr, r.values or ())), set(map(repr, s.values or ()))
        return "all" if theirs_l <= mine_l else "some" if theirs_l & mine_l else "none"
    if r.kind in _COLLECTIONS and s.kind in _COLLECTIONS:
        assert r.item is not None and s.item is not None
        items = _accepts(receiver, r.item, sender, s.item)
        return "some" if items == "none" else items  # an empty one passes
    if r.kind == "tuple" and s.kind == "tuple":
        if len(r.items or ()) != len(s.items or ()):
            return "none"
        found = [_accepts(receiver, x, sender, y) for x, y in zip(r.items or (), s.items or ())]
        return "all" if all(v == "all" for v in found) else "none" if "none" in found else "some"
    if r.kind == "dict" and s.kind == "dict":
        assert r.key is not None and s.key is not None and r.value is not None and s.value is not None
        found = [_accepts(receiver, r.key, sender, s.key), _accepts(receiver, r.value, sender, s.value)]
        return "all" if all(v == "all" for v in found) else "some"
    if r.kind == s.kind and r.kind not in ("custom", "typeddict"):
        return "all"
    if r.kind == s.kind and r.cls == s.cls:
        return "all"
    if r.kind == "float" and s.kind == "int":
        return "all"
    mine_w, theirs_w = receiver.wire_kinds(r), sender.wire_kinds(s)
    return "some" if mine_w & theirs_w or "*" in mine_w | theirs_w else "none"


def _slot_effect(acceptance: str, same_field: bool) -> str:
    if acceptance == "none":
        return REFUSES
    if same_field:
        return OK if acceptance == "all" else REFUSES
    return MISREADS if acceptance == "all" else REFUSES_OR_MISREADS


def _matched(a_side: _Side, a: TypeNode, b_side: _Side, b: TypeNode, out: List[Tuple[TypeNode, TypeNode]]) -> None:
    """The nodes at the same places of ``a`` and ``b``: struct pairs of one name, and leaf or container pairs (for their constraints)."""
    if a.kind == "union" or b.kind == "union":
        theirs = {_arm_key(b_side, x): x for x in b_side.arms(b)}
        for x in a_side.arms(a):
            y = theirs.get(_arm_key(a_side, x))
            if y is not None:
                _matched(a_side, x, b_side, y, out)
        return
    if a.kind != b.kind:
        return
    if a.kind == "struct":
        if a_side.struct(a).name == b_side.struct(b).name:
            out.append((a, b))
        return
    out.append((a, b))
    for p, q in ((a.item, b.item), (a.key, b.key), (a.value, b.value), *zip(a.items or (), b.items or ())):
        if p is not None and q is not None:
            _matched(a_side, p, b_side, q, out)


def _arm_key(side: _Side, node: TypeNode) -> str:
    if node.kind == "struct":
        return side.struct(node).name
    if node.kind == "enum":
        return side.snapshot.enums[node.ref or ""].name
    if node.kind == "custom":
        return str(node.cls)
    return node.kind


def type_text(node: TypeNode, snapshot: Snapshot) -> str:
    """How the diff spells a type of ``snapshot``."""
    return _Side(snapshot).text(node)


# --- structs ----------------------------------------------------------------------


class _Differ:
    def __init__(self, old: Snapshot, new: Snapshot, family: str = "") -> None:
        self.old, self.new = _Side(old), _Side(new)
        self.family = family
        self.seen: Set[Tuple[str, str]] = set()

    def struct(self, tag: str, old_key: str, new_key: str, path: str = "") -> List[Change]:
        self.seen.add((old_key, new_key))
        a, b = self.old.struct(old_key), self.new.struct(new_key)
        where = path or tag
        changes: List[Change] = []

        def change(kind: str, detail: str, backward: str = OK, forward: str = OK, field: str = "") -> None:
            changes.append(Change(tag, kind, detail, backward, forward, path, field, self.family))

        for record in (a, b):
            if record.error:
                side = "old" if record is a else "new"
                change("struct unreadable", f"{side} {record.name}: msgspec cannot read it ({record.error}): its fields cannot be compared", REFUSES, REFUSES)
        if a.error or b.error:
            return changes
        if a.array_like != b.array_like:
            forms = f"{'array' if a.array_like else 'map'} -> {'array' if b.array_like else 'map'}"
            change("array_like changed", f"{a.array_like!r} -> {b.array_like!r} ({forms}): each side expects the other form", REFUSES, REFUSES)
            return changes
        for attr in ("tag_field", "tag"):
            x, y = getattr(a, attr), getattr(b, attr)
            if x != y:
                change(f"{attr} changed", f"{x!r} -> {y!r}: the receiver does not recognise the sender's tag", REFUSES, REFUSES)
        pairs: List[Tuple[str, FieldRecord, FieldRecord]] = []
        if a.array_like:
            shifted = self._positional(a, b, change, pairs)
        else:
            shifted = False
            self._named(a, b, change, pairs)
        for name, fa, fb in pairs:
            self._field(name, fa, fb, a, b, change)
        if shifted:
            return changes  # every later position reads another field; nothing nested below it means anything
        for name, fa, fb in pairs:
            matched: List[Tuple[TypeNode, TypeNode]] = []
            _matched(self.old, fa.type, self.new, fb.type, matched)
            for x, y in matched:
                if x.kind == "struct" and y.kind == "struct" and (x.ref, y.ref) not in self.seen:
                    assert x.ref is not None and y.ref is not None
                    changes += self.struct(tag, x.ref, y.ref, f"{where}.{name} -> {self.new.struct(y).name}")
        return changes

    def _read_positional(self, sender_side: _Side, sender: StructRecord, receiver_side: _Side, receiver: StructRecord, start: int) -> Tuple[str, List[str]]:
        """What a positional receiver does with a positional sender's array from position ``start`` on: the effect, and the fields that read another field's value.

        One slot whose types share no value, or a required field left
        without a value, refuses every such message: that decides it.
        """
        effects: List[str] = []
        wrong: List[str] = []
        certain_refusal = False
        for k, rf in enumerate(receiver.fields):
            if k < start:
                continue
            if k >= len(sender.fields):
                certain_refusal |= rf.required
                continue
            sf = sender.fields[k]
            same = sf.encode_name == rf.encode_name
            acceptance = _accepts(receiver_side, rf.type, sender_side, sf.type)
            certain_refusal |= acceptance == "none"
            if not same:
                wrong.append(f"{rf.encode_name}<-{sf.encode_name}")
            effects.append(_slot_effect(acceptance, same))
        if len(sender.fields) > len(receiver.fields) and receiver.forbid_unknown_fields:
            certain_refusal = True
        return (REFUSES if certain_refusal else _worst(*effects)), wrong

    def _positional(self, a: StructRecord, b: StructRecord, change, pairs) -> bool:
        """Fields matched by position; True when a field shifted (reported once, with what each direction reads)."""
        old_names = [f.encode_name for f in a.fields]
        new_names = [f.encode_name for f in b.fields]
        common = min(len(old_names), len(new_names))
        for i in range(common):
            fa, fb = a.fields[i], b.fields[i]
            if fa.encode_name != fb.encode_name:
                backward, b_wrong = self._read_positional(self.old, a, self.new, b, i)
                forward, _ = self._read_positional(self.new, b, self.old, a, i)
                reads = f"; old->new reads {', '.join(b_wrong[:4])}{'...' if len(b_wrong) > 4 else ''}" if b_wrong else ""
                of = f"{i} of {len(new_names)}"
                if fa.encode_name in new_names and fb.encode_name not in old_names:
                    change("field inserted", f"{fb.encode_name!r} at {of}, before {fa.encode_name!r}: every later field shifts{reads}", backward, forward, fb.encode_name)
                elif fb.encode_name in old_names and fa.encode_name not in new_names:
                    change("field removed", f"{fa.encode_name!r} at {i} of {len(old_names)}: every later field shifts{reads}", backward, forward, fa.encode_name)
                else:
                    change("field renamed or reordered", f"position {of}: {fa.encode_name!r} -> {fb.encode_name!r}{reads}", backward, forward, fb.encode_name)
                return True
            pairs.append((fa.encode_name, fa, fb))
        for i, f in enumerate(b.fields[common:], common):
            # An old sender's array stops before it: the new receiver needs a default.
            # A new sender's longer array: the old receiver skips the extra element unless it forbids unknown fields.
            forward = REFUSES if a.forbid_unknown_fields else OK
            if f.required:
                change("field appended", f"{f.encode_name!r} at {i} of {len(new_names)} without a default: older senders' messages fail", REFUSES, forward, f.encode_name)
            else:
                change("field appended", f"{f.encode_name!r} at the tail ({i} of {len(new_names)})", OK, forward, f.encode_name)
        for f in a.fields[common:]:
            backward = REFUSES if b.forbid_unknown_fields else OK
            if f.required:
                change("field removed", f"{f.encode_name!r} at the tail: older readers require it", backward, REFUSES, f.encode_name)
            else:
                change("field removed", f"{f.encode_name!r} at the tail: newer readers ignore it, older readers get its default", backward, OK, f.encode_name)
        return False

    def _named(self, a: StructRecord, b: StructRecord, change, pairs) -> None:
        """Fields of structs encoded as maps, matched by wire name (their order does not matter on the wire)."""
        old = {f.encode_name: f for f in a.fields}
        new = {f.encode_name: f for f in b.fields}
        for name, f in new.items():
            if name in old:
                pairs.append((name, old[name], f))
            else:
                forward = REFUSES if a.forbid_unknown_fields else OK
                backward = REFUSES if f.required else OK
                change("field added", f"{name!r}" + (" without a default: older senders' messages fail" if f.required else ""), backward, forward, name)
        for name, f in old.items():
            if name not in new:
                backward = REFUSES if b.forbid_unknown_fields else OK
                forward = REFUSES if f.required else OK
                change("field removed", f"{name!r}" + (": older readers require it" if f.required else ": older readers get its default"), backward, forward, name)

    def _field(self, name: str, fa: FieldRecord, fb: FieldRecord, a: StructRecord, b: StructRecord, change) -> None:
        def about(kind: str, detail: str, backward: str = OK, forward: str = OK) -> None:
            change(kind, detail, backward, forward, name)

        ta, tb = self.old.text(fa.type), self.new.text(fb.type)
        if ta != tb:
            backward = _slot_effect(_accepts(self.new, fb.type, self.old, fa.type), True)
            forward = _slot_effect(_accepts(self.old, fa.type, self.new, fb.type), True)
            kind = "type widened" if backward == OK else "type changed"
            note = " (older readers refuse values only the new type allows)" if backward == OK and forward != OK else ""
            about(kind, f"{name!r}: {ta} -> {tb}{note}", backward, forward)
        else:
            tightened, loosened = [], []
            matched: List[Tuple[TypeNode, TypeNode]] = []
            _matched(self.old, fa.type, self.new, fb.type, matched)
            for x, y in matched:
                if x.kind != "struct":
                    more_tight, more_loose = _constraint_changes(x, y)
                    tightened += more_tight
                    loosened += more_loose
            if tightened:
                about("constraint tightened", f"{name!r}: {', '.join(tightened)}: older senders' values may be refused", REFUSES, OK)
            if loosened:
                about("constraint loosened", f"{name!r}: {', '.join(loosened)} (older readers refuse the new values)", OK, REFUSES)
        if fa.default != fb.default:
            # Only a map sender that omits defaults leaves a field out (msgspec writes every field of an
            # array); the receiver then needs the field not to be required, and reads its own default.
            if fb.default is None:
                about("default removed", f"{name!r}: {fa.default} -> required: older senders that omit it fail", REFUSES if _omits_defaults(a) else OK, OK)
            elif fa.default is None:
                about("default added", f"{name!r}: required -> {fb.default}", OK, REFUSES if _omits_defaults(b) else OK)
            else:
                backward = MISREADS if _omits_defaults(a) else OK
                forward = MISREADS if _omits_defaults(b) else OK
                note = ": a sender that omits defaults is read with the other side's default" if backward != OK or forward != OK else ""
                about("default changed", f"{name!r}: {fa.default} -> {fb.default}{note}", backward, forward)


def _omits_defaults(record: StructRecord) -> bool:
    """Whether a sender of ``record`` leaves out fields equal to their default: a map struct with ``omit_defaults``."""
    return record.omit_defaults and not record.array_like


# --- snapshots --------------------------------------------------------------------


def compare(old: Snapshot, new: Snapshot, *, old_name: str = "old", new_name: str = "new") -> Comparison:
    """Every change from ``old`` to ``new``, family by family and message by message; ``SnapshotError`` if nothing is compared.

    Families match by name; when each side has exactly one family they match
    whatever their names (a module against an engine's one family).
    """
    changes: List[Change] = []
    pairs: List[Tuple[str, str, str]] = []
    old_f, new_f = old.families, new.families
    if len(old_f) == 1 and len(new_f) == 1 and set(old_f) != set(new_f):
        pairs.append(("", next(iter(old_f)), next(iter(new_f))))
    else:
        multi = len(set(old_f) | set(new_f)) > 1
        for name in sorted(set(old_f) | set(new_f)):
            unknown = {side: snap.absent[name] for side, snap in (("old", old), ("new", new)) if name in snap.absent}
            if unknown:
                reasons = "; ".join(f"{side}: {why}" for side, why in unknown.items())
                changes.append(Change(name, "family not compared", f"not recorded in the {' and '.join(unknown)} snapshot ({reasons})", family=name))
            elif name not in new_f:
                changes.append(Change(name, "family removed", f"{len(old_f[name].messages)} message type(s) the new release no longer reads", REFUSES, OK, family=name))
            elif name not in old_f:
                changes.append(Change(name, "family added", f"{len(new_f[name].messages)} message type(s) older releases cannot read", OK, REFUSES, family=name))
            else:
                pairs.append((name if multi else "", name, name))
    compared_messages = 0
    differ_seen: Set[Tuple[str, str]] = set()
    for label, a_name, b_name in pairs:
        fa, fb = old_f[a_name], new_f[b_name]
        differ = _Differ(old, new, label)
        for tag in sorted(set(fa.messages) | set(fb.messages)):
            if tag not in fb.messages:
                changes.append(Change(tag, "message removed", "older senders' messages of this type are refused", REFUSES, OK, family=label))
            elif tag not in fa.messages:
                changes.append(Change(tag, "message added", "older receivers refuse it", OK, REFUSES, family=label))
            else:
                compared_messages += 1
                changes += differ.struct(tag, fa.messages[tag], fb.messages[tag])
        if fa.framing != fb.framing:
            changes.append(Change(label or a_name, "framing changed", f"{fa.framing} -> {fb.framing}", REFUSES, REFUSES, family=label))
        changes += _ext_changes(label or a_name, fa.ext_types, fb.ext_types, label)
        differ_seen |= differ.seen
    if not compared_messages and not any(c.kind in ("message removed", "message added", "family removed", "family added") for c in changes):
        raise SnapshotError(f"{old_name} -> {new_name}: no message type to compare (0 messages, 0 structs): refusing to judge an empty comparison")
    return Comparison(old_name, new_name, changes, compared_messages, len(differ_seen))


def _ext_changes(where: str, old: Mapping[str, str], new: Mapping[str, str], family: str) -> List[Change]:
    changes = []
    for code in sorted(set(old) | set(new), key=int):
        if code not in new:
            changes.append(Change(where, "ext code removed", f"ext {code} ({old[code]}): the new receiver refuses what older senders write", REFUSES, OK, family=family))
        elif code not in old:
            changes.append(Change(where, "ext code added", f"ext {code} ({new[code]}): older receivers refuse it", OK, REFUSES, family=family))
        elif old[code] != new[code]:
            changes.append(Change(where, "ext code meaning changed", f"ext {code}: {old[code]} -> {new[code]}", MISREADS, MISREADS, family=family))
    return changes


# --- live classes -----------------------------------------------------------------


def diff_schemas(old: Mapping[str, type], new: Mapping[str, type]) -> List[Change]:
    """Every change between two ``name -> class`` mappings of this process (snapshotted first), nested structs included."""
    a = classes_snapshot(old, framing="tagged", engine="old", release="")
    b = classes_snapshot(new, framing="tagged", engine="new", release="")
    return compare(a, b).changes


def diff_struct(tag: str, old: type, new: type) -> List[Change]:
    """Changes from class ``old`` to class ``new`` (message ``tag``), and in every struct nested in them."""
    return diff_schemas({tag: old}, {tag: new})


def summary_line(comparison: Comparison, mode: str = "full") -> str:
    """One line for a PR: the verdict in ``mode``, the counts, and the first breaking change."""
    breaking = comparison.breaking(mode)
    head = f"schema diff {comparison.old} -> {comparison.new} ({mode}; {comparison.messages} message types, {comparison.structs} structs compared)"
    if not breaking:
        return f"{head}: compatible ({len(comparison.changes)} change(s), none breaking {mode})"
    first = breaking[0]
    return f"{head}: {len(breaking)} BREAKING change(s), first: {first.where}: {first.kind}: {first.detail}"

