"""Findings of the fuzz loop, shrunk and kept as files that become ``n_`` golden vectors.

A finding file (``conformance/fuzz/findings/<name>.json``) holds the minimal
frames that broke an implementation, what they did to it, and what the
reference codec says about them. ``python -m conformance.vectors generate``
turns each into ``v1/n_fuzz_<name>.json`` (when the reference rejects the
frames, which it must for every finding kept here), so every implementation
is then held to rejecting them cleanly. The cases that do so
(:mod:`conformance.vectors.cases.fuzz_findings`) import this module; it needs
only the vector file format (:mod:`conformance.vectors.format`) back.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass
from typing import List, Optional

from conformance.vectors.format import DESCRIPTION_LENGTH
from reference_codec import DecodeError, ReferenceCodec
from reference_codec.schema import MESSAGE_TYPES

from .harness import Harness
from .minimise import minimise
from .pickle_probe import PickleProbe

__all__ = ["FINDINGS_DIR", "SavedFinding", "describe", "shrink_and_save", "load_findings"]

FINDINGS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "findings")


@dataclass
class SavedFinding:
    name: str
    description: str
    found_in: str
    signature: str
    error: str
    frames: List[str]
    reference_reason: Optional[str]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:40]


def describe(found_in: str, kind: str, error_type: Optional[str], error: str, attack: str, seed_label: str) -> str:
    """One ASCII line that fits a golden vector's description (:data:`conformance.vectors.format.DESCRIPTION_LENGTH`).

    It says where the finding was found, what broke, and which attack on which seed message
    produced it; the error text is cut to fit (the full error stays in the finding's ``error`` field).
    """
    limit = DESCRIPTION_LENGTH[1]
    head = f"fuzz finding in {found_in} ({attack} on a {seed_label}, shrunk): {kind}"
    if error_type:
        head += f" {error_type}"
    text = " ".join(error.encode("ascii", "backslashreplace").decode("ascii").split())
    line = f"{head}: {text}" if text else head
    if len(line) > limit:
        line = line[: limit - 3].rstrip() + "..."
    return line


def shrink_and_save(codec, finding, *, directory: str = FINDINGS_DIR, max_tests: int = 3000) -> Optional[SavedFinding]:
    """Shrink ``finding`` (a :class:`~.loop.Finding` with frames) against ``codec`` and write it; None if it no longer reproduces."""
    if not finding.frames or finding.kind in ("slow", "hang", "crash"):
        return None  # timing and process deaths are not reproduced in-process; the loop reports them
    frames = [bytes.fromhex(f) for f in finding.frames]
    harness = Harness(codec, PickleProbe(), message_types=MESSAGE_TYPES.values())  # findings are saved as reference-wire vectors
    target = harness.run(frames)
    if target.signature != finding.signature:
        return None
    small = minimise(frames, lambda f: harness.run(f).signature == target.signature, max_tests=max_tests)
    outcome = harness.run(small)
    if outcome.signature != target.signature:  # flaky under shrinking (a RecursionError depends on stack depth)
        small, outcome = frames, target
    try:
        ReferenceCodec().decode(small)
        reason = None
    except DecodeError as exc:
        reason = exc.reason
    digest = hashlib.sha1(b"".join(small)).hexdigest()[:8]
    name = f"{_slug(codec.name)}_{_slug(outcome.error_type or outcome.kind)}_{digest}"
    saved = SavedFinding(
        name=name,
        description=describe(codec.name, outcome.kind, outcome.error_type, outcome.error, finding.attack, finding.seed_label),
        found_in=codec.name,
        signature=outcome.signature,
        error=outcome.error[:500],
        frames=[f.hex() for f in small],
        reference_reason=reason,
    )
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, f"{name}.json"), "w") as fh:
        json.dump(asdict(saved), fh, indent=1)
        fh.write("\n")
    return saved


def load_findings(directory: str = FINDINGS_DIR) -> List[SavedFinding]:
    """Every saved finding, by name."""
    out = []
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        with open(path) as fh:
            out.append(SavedFinding(**json.load(fh)))
    return out
