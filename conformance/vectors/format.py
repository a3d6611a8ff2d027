"""What a golden vector file is, and how to read one.

Each vector is one JSON file, ``v1/<name>.json`` or ``v2/<name>.json``, whose
name says what an implementation must do with its frames:

``y_<name>``  must decode, to ``expected``;
``n_<name>``  must be rejected with the implementation's declared decode error
              (``reject_reason`` is a substring of the reference codec's
              ``DecodeError.reason``, for the reference's own tests only);
``i_<name>``  implementation-defined: accepting and rejecting are both fine,
              but nothing may crash with any other error. When ``expected`` is
              not null, an implementation that accepts must decode to it.

A file holds exactly these keys::

    {
      "name": "y_flush_cache_req_input",     # the file name without ".json"
      "description": "one line: what it tests and why",  # ASCII, 10 to 140 characters
      "wire": "v1",                          # or "v2": the directory it is in
      "frames": ["dc0004b2466c...", ...],    # lowercase hex, frame 0 is the body
      "expected": {"$struct": ...},          # conformance.neutral form, or null
      "reject_reason": null                  # a string for n_ vectors only
    }

Files are ASCII JSON. ``expected`` is in the neutral form of
:mod:`conformance.neutral`; every tensor in it is on ``"cpu"``. v2 vectors may
have several frames and need an implementation that reads out-of-band buffers.

This module only reads: the files are written by :mod:`conformance.vectors.build`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

__all__ = [
    "VECTORS_DIR",
    "WIRE_VERSIONS",
    "KINDS",
    "FIELDS",
    "V2_THRESHOLD",
    "DESCRIPTION_LENGTH",
    "check_description",
    "parse_record",
    "vector_files",
    "GoldenVector",
    "load_vectors",
]

#: Where the checked-in vectors live: ``v1/`` and ``v2/`` below this package.
VECTORS_DIR = os.path.dirname(os.path.abspath(__file__))
WIRE_VERSIONS: Tuple[str, ...] = ("v1", "v2")
KINDS: Dict[str, str] = {
    "y": "must decode to expected",
    "n": "must be rejected with the declared decode error",
    "i": "implementation-defined: decode (to expected, if given) or the declared decode error",
}
#: The keys of every vector file, in the order they are written.
FIELDS: Tuple[str, ...] = ("name", "description", "wire", "frames", "expected", "reject_reason")
#: The out-of-band threshold the v2 vectors were encoded with (buffers of 64 bytes or more leave the body).
V2_THRESHOLD = 64
DESCRIPTION_LENGTH = (10, 140)  # a description is one line a reader takes in at a glance


def check_description(where: str, description: object) -> None:
    """Raise ValueError unless ``description`` is one ASCII line of ``DESCRIPTION_LENGTH`` characters."""
    low, high = DESCRIPTION_LENGTH
    if not (isinstance(description, str) and low <= len(description) <= high and description.isascii() and "\n" not in description):
        raise ValueError(f"{where}: description must be one ASCII line of {low} to {high} characters: {description!r:.200}")


def vector_files(directory: str) -> Dict[str, str]:
    """``{"v1/y_x.json": text}`` for every ``.json`` file in ``directory``'s ``v1/`` and ``v2/`` (a missing one is empty)."""
    found: Dict[str, str] = {}
    for version in WIRE_VERSIONS:
        folder = os.path.join(directory, version)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if name.endswith(".json"):
                with open(os.path.join(folder, name), encoding="ascii", errors="replace", newline="") as fh:
                    found[f"{version}/{name}"] = fh.read()
    return found


@dataclass(frozen=True)
class GoldenVector:
    """One vector file as read from disk."""

    file: str  # "v1/y_flush_cache_req_input.json"
    name: str
    description: str
    wire: str
    frames: List[bytes] = field(repr=False)
    expected: Any = field(repr=False)
    reject_reason: Optional[str]

    @property
    def kind(self) -> str:
        return self.name[0]

    @property
    def filename(self) -> str:
        return os.path.basename(self.file)


def parse_record(rel: str, text: str, fields) -> Tuple[Dict[str, Any], str, List[bytes]]:
    """A vector file's JSON checked for what every vector file shares: exactly ``fields`` in order, a ``y_``/``n_``/``i_`` name that is
    the file's, a description, hex frames, and a ``reject_reason``/``expected`` that fit the kind. Returns the record, its folder and
    its frames; ``ValueError`` naming the file and what is wrong."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{rel}: not JSON: {exc}") from None
    if not isinstance(data, dict) or list(data) != list(fields):
        raise ValueError(f"{rel}: keys must be exactly {list(fields)} in order")
    folder, filename = rel.split("/")
    name = data["name"]
    if not isinstance(name, str) or filename != f"{name}.json" or name[:2] not in ("y_", "n_", "i_"):
        raise ValueError(f"{rel}: name must be the file name without .json and start with y_, n_ or i_")
    check_description(rel, data["description"])
    frames = data["frames"]
    if not isinstance(frames, list) or not all(isinstance(f, str) and f == f.lower() for f in frames):
        raise ValueError(f"{rel}: frames must be a list of lowercase hex strings")
    try:
        raw = [bytes.fromhex(f) for f in frames]
    except ValueError:
        raise ValueError(f"{rel}: a frame is not hex") from None
    kind, reason, expected = name[0], data["reject_reason"], data["expected"]
    if (kind == "n") != isinstance(reason, str) or (reason is not None and not isinstance(reason, str)):
        raise ValueError(f"{rel}: reject_reason must be a string for n_ vectors and null otherwise")
    if kind == "y" and expected is None:
        raise ValueError(f"{rel}: a y_ vector needs an expected value")
    if kind == "n" and expected is not None:
        raise ValueError(f"{rel}: an n_ vector's expected must be null")
    return data, folder, raw


def _parse(rel: str, text: str) -> GoldenVector:
    data, version, raw = parse_record(rel, text, FIELDS)
    if data["wire"] != version:
        raise ValueError(f"{rel}: wire {data['wire']!r} differs from its directory {version!r}")
    return GoldenVector(rel, data["name"], data["description"], version, raw, data["expected"], data["reject_reason"])


def load_vectors(directory: str = VECTORS_DIR) -> List[GoldenVector]:
    """Every vector file under ``directory``, sorted by path; ``ValueError`` naming a malformed file."""
    return [_parse(rel, text) for rel, text in sorted(vector_files(directory).items())]
