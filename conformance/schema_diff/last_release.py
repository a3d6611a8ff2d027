"""The installed engine's wire against the last release's: which earlier snapshot to compare with, and what each message's changes break.

A gate on a development branch asks one question of the wire beside the
properties: does this build still read what the last release sends, and can
the last release read what it sends? :func:`baseline` picks the snapshot to
compare with: the newest checked-in snapshot of the engine
(``Engine.snapshots_dir``, ``<engine>-<version>.json``) of a release older
than the installed one (PEP 440 order, so ``0.5.24.dev0`` compares with
``0.5.23``), or the one named (a version or a snapshot file).
:func:`breaks_by_case` turns the comparison into one case per message type
(``FAMILY/TYPE``) and one per family (``FAMILY``, for its framing and ext
codes), each with the changes that break a peer in either direction.

Additions are not breaks here: a message type or a family older releases do
not have is new, and an older peer never receives it; a field appended at the
tail with a default breaks nothing. Everything else that the diff says breaks
(:meth:`~conformance.schema_diff.compare.Change.breaks`, ``full``) is.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from .compare import Change, Comparison, compare
from .snapshot import Snapshot, load

__all__ = ["ADDITIONS", "Baseline", "BaselineError", "snapshots_of", "baseline", "breaks_by_case", "case_of", "cases", "compare_with", "NONE"]

#: Changes that only add what older peers never receive.
ADDITIONS = ("message added", "family added")
#: ``--against-release none``: no wire check.
NONE = "none"


class BaselineError(ValueError):
    """The release or snapshot named to compare with cannot be found or read."""


@dataclass(frozen=True)
class Baseline:
    """The snapshot the installed engine is compared with: its release and where it came from."""

    release: str
    path: str
    snapshot: Snapshot


def snapshots_of(engine: Any) -> List[Tuple[Version, str]]:
    """``(version, path)`` of every checked-in snapshot of ``engine``, oldest first."""
    folder = getattr(engine, "snapshots_dir", None)
    if not folder or not os.path.isdir(folder):
        return []
    pattern = re.compile(re.escape(engine.name) + r"-(?P<version>.+)\.json\Z")
    found = []
    for name in os.listdir(folder):
        m = pattern.match(name)
        if not m:
            continue
        try:
            found.append((Version(m.group("version")), os.path.join(folder, name)))
        except InvalidVersion:
            continue
    return sorted(found)


def baseline(engine: Any, installed: Optional[str], against: Optional[str] = None) -> Optional[Baseline]:
    """The snapshot to compare the installed release with, or ``None`` when there is none to compare with.

    ``against``: ``None`` (the newest snapshot of a release older than
    ``installed``), a version the engine has a snapshot of, a snapshot file,
    or :data:`NONE`. ``BaselineError`` when what it names does not exist.
    """
    if against == NONE:
        return None
    if against:
        if against.endswith(".json") or os.sep in against:
            if not os.path.exists(against):
                raise BaselineError(f"no snapshot file {against}")
            snapshot = load(against)
            return Baseline(snapshot.release or os.path.basename(against), against, snapshot)
        by_version = {str(v): p for v, p in snapshots_of(engine)}
        if against not in by_version:
            raise BaselineError(f"{engine.name} has no snapshot of release {against} (it has {', '.join(by_version) or 'none'})")
        return Baseline(against, by_version[against], load(by_version[against]))
    if installed is None:
        return None
    try:
        current = Version(installed)
    except InvalidVersion:
        return None
    earlier = [(v, p) for v, p in snapshots_of(engine) if v < current]
    if not earlier:
        return None
    version, path = earlier[-1]
    return Baseline(str(version), path, load(path))


def case_of(change: Change) -> str:
    """The case a change is judged in: ``FAMILY/TYPE`` for a message's change, ``FAMILY`` for the family's own (framing, ext codes)."""
    family = change.family or ""
    if change.kind.startswith(("family ", "framing ", "ext code ")):
        return family or change.tag
    return f"{family}/{change.tag}" if family else change.tag


def breaks_by_case(comparison: Comparison) -> Dict[str, List[Change]]:
    """Every case of the comparison (each message type of either side, each family), with the changes that break a peer; empty lists for those that break none."""
    cases: Dict[str, List[Change]] = {}
    for change in comparison.changes:
        cases.setdefault(case_of(change), [])
        if change.breaking and change.kind not in ADDITIONS:
            cases[case_of(change)].append(change)
    return cases


def cases(old: Snapshot, new: Snapshot) -> List[str]:
    """Every case two snapshots give: each family (``FAMILY``) and each message type of either (``FAMILY/TYPE``), sorted."""
    names = set(old.families) | set(new.families)
    multi = len(names) > 1
    found = set()
    for name in names:
        found.add(name)
        for snap in (old, new):
            family = snap.families.get(name)
            if family is not None:
                found.update(f"{name}/{tag}" if multi else tag for tag in family.messages)
    return sorted(found)


def compare_with(baseline: Baseline, installed: Snapshot, label: str) -> Comparison:
    """The comparison of the baseline's snapshot (old) with the installed one (new), families matched by name."""
    return compare(baseline.snapshot, installed, old_name=f"{baseline.release}", new_name=label)
