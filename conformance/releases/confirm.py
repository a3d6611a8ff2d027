"""Confirm a snapshot diff live: release N's own encoder against release N+1's own decoder, and the reverse, with drawn messages.

For every message type the diff says breaks in a direction, the driver
searches (Hypothesis ``find``: drawn, then shrunk to the smallest witness)
for a message of the *sender's* schema that the *receiver* refuses or
misreads on a field both carry. Each side is a
:mod:`~conformance.releases.host` process in its own release's
environment, so both releases' real code runs. The result per message and
direction is an :class:`Observation`: ``refuses`` (with the receiver's
error), ``misreads`` (with the differing paths), ``ok`` (no draw broke: the
predicted break was not seen), or ``not confirmable`` (why: the sender's
schema cannot be drawn from a snapshot, or the type does not exist on one
side). :func:`annotate` then gives each breaking change of the diff the
symptom seen live.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

import msgspec
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis.errors import NoSuchExample, Unsatisfiable

from conformance.schema_diff.compare import OK, Change
from conformance.schema_diff.snapshot import Snapshot, StructRecord, TypeNode
from conformance.testee.client import TesteeCodec

from .values import differences, message_strategy

__all__ = ["Observation", "HostProcess", "confirm_messages", "annotate", "outer_tag", "DIRECTIONS"]

#: (direction, sender, receiver): backward is the old release sending to the new one.
DIRECTIONS = (("backward", "old", "new"), ("forward", "new", "old"))


@dataclass(frozen=True)
class Observation:
    """What one message type did live in one direction."""

    family: str
    message: str
    direction: str
    outcome: str  # "refuses", "misreads", "ok", "not confirmable"
    detail: str
    #: The shrunk witness as sent (neutral form, bounded), when a break was seen.
    witness: str = ""
    draws: int = 0


class HostProcess:
    """A running :mod:`~conformance.releases.host` for one release and family, spoken to over the testee framing.

    ``HostProcess(python, engine, family)`` starts the host in that Python;
    ``HostProcess(argv=[...])`` starts any other program that answers the
    engine-neutral operations (``conformance/PROTOCOL.md`` §9), such as a
    consumer written in another language, in the same role.
    """

    def __init__(
        self,
        python: Optional[str] = None,
        engine: Optional[str] = None,
        family: Optional[str] = None,
        *,
        argv: Optional[Sequence[str]] = None,
        root: Optional[str] = None,
        timeout: float = 60.0,
    ) -> None:
        if argv is None:
            if python is None or engine is None or family is None:
                raise TypeError("HostProcess needs python, engine and family, or argv")
            root = root or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            env: Optional[Dict[str, str]] = dict(os.environ, PYTHONPATH=root + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""))
            argv = [python, "-m", "conformance.releases.host", "--engine", engine, "--family", family]
        elif python is not None or engine is not None or family is not None:
            raise TypeError("HostProcess takes argv or python, engine and family, not both")
        else:
            env = None
        self.testee = TesteeCodec(list(argv), env=env, timeout=timeout, startup_timeout=180.0)
        self.hello = self.testee.request("hello")
        self.name = str(self.hello.get("name"))
        self.messages = set(self.hello.get("messages", ()))

    def call(self, op: str, **fields: Any) -> Dict[str, Any]:
        return self.testee.request(op, **fields)

    def close(self) -> None:
        self.testee.close()

    def __enter__(self) -> "HostProcess":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _bounded(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def outer_tag(frames: Sequence[bytes], tag_field: Optional[str]) -> Optional[str]:
    """The tag the first frame carries at its top level (``[tag, ...]`` or ``{tag_field: tag}``), or None."""
    try:
        top = msgspec.msgpack.decode(frames[0], ext_hook=lambda code, data: None)
    except (msgspec.DecodeError, IndexError):
        return None
    if isinstance(top, list) and top and isinstance(top[0], str):
        return top[0]
    if isinstance(top, dict) and tag_field and isinstance(top.get(tag_field), str):
        return top[tag_field]
    return None


def _round_trip(sender: HostProcess, receiver: HostProcess, message: str, value: Any, wrapped: Optional[Dict[str, int]] = None, tag: Any = None, tag_field: Optional[str] = None) -> Tuple[str, str, Any]:
    """(outcome, detail, sent) of one message: ``invalid`` when the sender's own class refuses the drawn value.

    ``wrapped`` counts frames the sender wrote under another top-level tag than
    the message's own ``tag`` (a wrapper such as a pickled fallback): the
    schema does not govern those bytes.
    """
    sent = sender.call("encode_value", type=message, value=value)
    if not sent.get("ok"):
        return ("invalid" if sent.get("error_kind") == "invalid" else "sender failed"), str(sent.get("message")), None
    if wrapped is not None and isinstance(tag, str):
        outer = outer_tag(sent["frames"], tag_field)
        if outer is not None and outer != tag:
            wrapped[outer] = wrapped.get(outer, 0) + 1
    read = receiver.call("decode_value", type=message, frames=sent["frames"])
    if not read.get("ok"):
        if read.get("error_kind") == "decode_error":
            return "refuses", str(read.get("message")), sent["value"]
        return "receiver failed", f"{read.get('error_kind')}: {read.get('message')}", sent["value"]
    diffs = differences(sent["value"], read["value"])
    if diffs:
        return "misreads", "; ".join(diffs), sent["value"]
    return "ok", "", sent["value"]


def confirm_messages(
    family: str,
    messages: Sequence[str],
    snapshots: Dict[str, Snapshot],
    hosts: Dict[str, HostProcess],
    *,
    max_examples: int = 60,
    directions: Sequence[str] = ("backward", "forward"),
) -> List[Observation]:
    """Search each message in each direction for a draw the receiver refuses or misreads; one :class:`Observation` each."""
    found: List[Observation] = []
    for direction, sender_side, receiver_side in DIRECTIONS:
        if direction not in directions:
            continue
        sender, receiver = hosts[sender_side], hosts[receiver_side]
        fam = snapshots[sender_side].families.get(family)
        for message in messages:
            if fam is None or message not in fam.messages or message not in sender.messages:
                found.append(Observation(family, message, direction, "not confirmable", f"the {sender_side} release has no message {message} to send"))
                continue
            theirs = snapshots[receiver_side].families.get(family)
            if message not in receiver.messages and (theirs is None or theirs.framing != "tagged"):
                # A typed socket is declared with the message's type: the receiving release has none to declare.
                found.append(Observation(family, message, direction, "not confirmable", f"the {receiver_side} release has no type {message}: no socket of it reads one (refused by construction)"))
                continue
            observation = _search(family, message, direction, fam.messages[message], snapshots[sender_side], sender, receiver, max_examples)
            if observation.outcome == "refuses" and theirs is not None and message in theirs.messages:
                observation = replace(observation, detail=_name_the_path(observation.detail, snapshots[receiver_side], theirs.messages[message]))
            found.append(observation)
    return found


def _search(family: str, message: str, direction: str, key: str, snapshot: Snapshot, sender: HostProcess, receiver: HostProcess, max_examples: int) -> Observation:
    strategy = message_strategy(snapshot, key)
    if strategy.is_empty:
        return Observation(family, message, direction, "not confirmable", "the sender's schema holds a type a snapshot cannot draw (a tensor, an array) in a required field")
    counts = {"draws": 0, "invalid": 0}
    last: Dict[str, Any] = {}
    wrapped: Dict[str, int] = {}
    record = snapshot.structs[key]

    def breaks(value: Any) -> bool:
        counts["draws"] += 1
        outcome, detail, sent = _round_trip(sender, receiver, message, value, wrapped, record.tag, record.tag_field)
        if outcome in ("invalid", "sender failed"):  # the sender's own class or encoder refused the draw: not a message it sends
            counts["invalid"] += 1
            last.setdefault("sender", detail)
            return False
        if outcome in ("refuses", "misreads", "receiver failed"):
            last.update(outcome=outcome, detail=detail, sent=sent)
            return True
        return False

    try:
        witness = find(
            strategy,
            breaks,
            settings=settings(
                max_examples=max_examples,
                database=None,
                derandomize=True,  # the same witnesses on every run: the report is regenerated and diffed in review
                deadline=None,
                phases=(Phase.generate, Phase.shrink),
                suppress_health_check=list(HealthCheck),
            ),
        )
    except (NoSuchExample, Unsatisfiable):
        if counts["invalid"] == counts["draws"]:
            why = f" (first: {last['sender'][:200]})" if "sender" in last else ""
            return Observation(family, message, direction, "not confirmable", f"all {counts['draws']} draws were refused by the sender's own validation{why}", draws=counts["draws"])
        note = "".join(f"; the sender wrote {n} of them as {outer!r}, not as {record.tag!r}: the schema does not govern those bytes" for outer, n in sorted(wrapped.items()))
        return Observation(family, message, direction, OK, f"{counts['draws'] - counts['invalid']} valid draws read correctly{note}", draws=counts["draws"])
    # find() ends on the shrunk witness; run it once more so the detail is the witness's own.
    outcome, detail, sent = _round_trip(sender, receiver, message, witness)
    if outcome in ("ok", "invalid", "sender failed"):
        outcome, detail, sent = last["outcome"], last["detail"], last["sent"]
    return Observation(family, message, direction, outcome, detail[:500], _bounded(sent), counts["draws"])


_STEP = re.compile(r"\[(\d+|\.\.\.)\]|\.(\w+)")


def named_path(snapshot: Snapshot, key: str, path: str) -> Optional[str]:
    """A decoder's positional error path (`$[6][4]`) in field names (`$.sampling_params.watermarking`), read with the receiver's ``snapshot`` from its struct ``key``; None where it cannot be followed."""
    if not path.startswith("$"):
        return None
    current: Any = snapshot.structs.get(key)
    out = "$"
    for index, name in _STEP.findall(path[1:]):
        for _ in range(8):  # through unions and struct references to the node the step applies to
            if isinstance(current, TypeNode) and current.kind == "union":
                wanted = ("list", "set", "frozenset", "vartuple", "tuple", "dict", "struct")
                current = next((arm for arm in current.types or () if arm.kind in wanted), None)
            elif isinstance(current, TypeNode) and current.kind == "struct":
                current = snapshot.structs.get(current.ref or "")
            else:
                break
        if isinstance(current, StructRecord):
            if name:
                field = next((f for f in current.fields if f.encode_name == name), None)
            elif index.isdigit() and current.array_like:
                i = int(index) - (1 if current.tag is not None else 0)
                field = current.fields[i] if 0 <= i < len(current.fields) else None
            else:
                field = None
            if field is None:
                return None
            out += f".{field.encode_name}"
            current = field.type
        elif isinstance(current, TypeNode) and current.kind in ("list", "set", "frozenset", "vartuple", "tuple", "dict"):
            out += f"[{index or name}]"
            if current.kind == "tuple":
                items = current.items or []
                current = items[int(index)] if index.isdigit() and int(index) < len(items) else None
            else:
                current = current.value if current.kind == "dict" else current.item
        else:
            return None
    return out


def _name_the_path(detail: str, snapshot: Snapshot, key: str) -> str:
    match = re.search(r"at `(\$[^`]*)`", detail)
    if not match:
        return detail
    named = named_path(snapshot, key, match.group(1))
    return f"{detail} ({named})" if named and named != match.group(1) else detail


#: Kinds of change that are about one field (the rest are about a struct's layout, or a whole message).
_FIELD_KINDS = ("type changed", "type widened", "default changed", "default removed", "default added", "constraint tightened", "constraint loosened")


def _witness_is_of(change: Change, detail: str) -> bool:
    """Whether a witness's paths (named, as ``$.a.b``) reach the struct the change is in, and its field where the change is about one; True when the witness names no path."""
    segments = change.where.split(" -> ")
    prefix = "$" + "".join("." + seg.partition(".")[2] for seg in segments[:-1] if seg.partition(".")[2])
    if change.kind in _FIELD_KINDS and change.field:
        prefix += "." + change.field
    paths = [re.sub(r"\[[^\]]*\]", "", p) for p in re.findall(r"\(?(\$\.[\w.\[\]'\-]*)", detail)]
    if not paths:
        return True
    return any(p == prefix or p.startswith(prefix + ".") or prefix.startswith(p + ".") or prefix == "$" for p in paths)


def annotate(changes: Sequence[Change], observations: Sequence[Observation]) -> List[Tuple[Change, str]]:
    """Each breaking change with what was seen live in each direction it breaks: ``"old->new: refuses: Expected `int` ..."``."""
    seen = {(o.family, o.message, o.direction): o for o in observations}
    out: List[Tuple[Change, str]] = []
    for change in changes:
        if not change.breaking:
            continue
        parts = []
        for direction, effect in (("backward", change.backward), ("forward", change.forward)):
            if effect == OK:
                continue
            arrow = "old->new" if direction == "backward" else "new->old"
            o = seen.get((change.family, change.tag, direction))
            if o is None:
                parts.append(f"{arrow}: not run")
            elif o.outcome == OK:
                parts.append(f"{arrow}: NOT SEEN ({o.detail})")
            elif o.outcome == "not confirmable":
                parts.append(f"{arrow}: not confirmable ({o.detail})")
            elif not _witness_is_of(change, o.detail):
                parts.append(f"{arrow}: not isolated: the message's witness broke elsewhere ({o.outcome}: {o.detail})")
            else:
                parts.append(f"{arrow}: {o.outcome}: {o.detail}")
        out.append((change, "; ".join(parts)))
    return out

