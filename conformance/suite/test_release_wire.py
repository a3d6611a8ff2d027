"""Property 9: the installed engine's wire still reads, and is read by, the last release's.

Beside the properties of its codec, a gate on a development branch judges
its schema against the last release (:mod:`conformance.schema_diff.last_release`):
the engine's message families as installed here, snapshotted from its own
classes, against the newest checked-in snapshot of an older release (or the
one ``--against-release`` names; ``none`` turns the check off). One test per
message type and one per family: a field inserted mid-struct fails naming
the struct, the field, the direction (an old sender to this build, this build
to an old receiver) and what the receiver does (refuses, misreads silently).
A message type or family the last release lacks is new, not a break.

An engine without releases (the reference schema, a plug-in's) or a release
with no older snapshot (the first) has nothing to compare with: one skipped
test says so. A pickle codec skips it: its fields travel by name.
"""

from __future__ import annotations

import functools
from typing import Dict, List, Optional, Tuple

import pytest

from conformance.engines import installed_version
from conformance.findings import Finding
from conformance.properties import ENGINE, PropertyFailure
from conformance.schema_diff.compare import Change
from conformance.schema_diff.last_release import BaselineError, baseline, breaks_by_case, cases, compare_with
from conformance.schema_diff.snapshot import SnapshotError, engine_snapshot

#: Changes named in one failure, at most.
_SHOWN = 8


@functools.lru_cache(maxsize=None)
def _judged(against: Optional[str]) -> Tuple[Optional[str], Dict[str, List[Change]], List[str], str]:
    """``(skip reason or None, breaks by case, every case, label)`` for the installed engine against ``against``."""
    release = installed_version(ENGINE.package)
    if not ENGINE.families or not ENGINE.snapshots_dir:
        return f"engine {ENGINE.name} keeps no release snapshots: no last release to compare its wire with", {}, [], ""
    if release is None:
        return f"{ENGINE.package} is not installed here: no release to compare", {}, [], ""
    try:
        base = baseline(ENGINE, release, against)
    except (BaselineError, SnapshotError) as exc:
        raise pytest.UsageError(f"--against-release: {exc}") from None
    if base is None:
        why = "--against-release none" if against else f"no snapshot of a release older than {release}"
        return f"{ENGINE.package} {release}: {why}: the wire is not compared with a last release", {}, [], ""
    installed = engine_snapshot(ENGINE, release=release)
    label = f"{ENGINE.package} {release}"
    comparison = compare_with(base, installed, label)
    return None, breaks_by_case(comparison), cases(base.snapshot, installed), f"{ENGINE.package} {base.release}"


def pytest_generate_tests(metafunc):
    if "wire_case" not in metafunc.fixturenames:
        return
    skip, _, every, _ = _judged(metafunc.config.getoption("against_release"))
    metafunc.parametrize("wire_case", every or [skip or "nothing to compare"])


def test_the_wire_against_the_last_release_breaks_no_peer(codec, wire_case, request):
    skip, breaks, _, last = _judged(request.config.getoption("against_release"))
    if skip:
        pytest.skip(skip)
    if codec.caps.executes_code_on_decode:
        pytest.skip(f"{codec.name} sends pickle, whose fields travel by name: the positional wire between releases is not its wire")
    found = breaks.get(wire_case, [])
    if not found:
        return
    release = installed_version(ENGINE.package)
    lines = [
        f"{c.where}: {c.kind}: {c.detail} (old sender -> this build: {c.backward}; this build -> old receiver: {c.forward}; breaks {c.direction})"
        for c in found[:_SHOWN]
    ]
    if len(found) > _SHOWN:
        lines.append(f"... and {len(found) - _SHOWN} more: python -m conformance.schema_diff --against <{last} snapshot> --engine {ENGINE.name} --mode full --all")
    first = found[0]
    raise PropertyFailure(
        codec=codec.name,
        what=f"{ENGINE.package} {release} breaks the wire with {last} at {wire_case}: {first.kind} {first.field or ''}".rstrip(),
        details=lines,
        finding=Finding.of("breaks-schema", first.struct, "; ".join(sorted({f"{c.kind} {c.field}".strip() + f" ({c.direction})" for c in found}))),
    )
