"""What an engine-neutral golden vector file is, and how to read one: any engine's wire, compared as plain values.

The vectors of :mod:`conformance.vectors.format` carry the reference
schema's neutral form (SGLang's messages). An engine whose messages are its
own (vLLM's engine core, its KV events) declares
:class:`~conformance.engines.profile.ValueVectors`: a directory with one
folder per message family, and in it one JSON file per vector, named as
in JSONTestSuite::

    <directory>/<family>/y_<name>.json   must decode, to ``expected``
    <directory>/<family>/n_<name>.json   must be refused (a decode error)
    <directory>/<family>/i_<name>.json   implementation-defined: decoding to
                                         ``expected`` or refusing are both
                                         fine; ``expected`` is what the
                                         engine's own decoder reads (null: it
                                         refuses)

A file holds exactly these keys, in this order::

    {
      "name": "y_block_stored_int_hashes",   # the file name without ".json"
      "description": "one ASCII line, 10 to 140 characters",
      "engine": "vllm", "release": "0.34.0", # whose wire reference wrote and read it
      "family": "kv-events",                 # the folder it is in
      "type": "KVEventBatch",                # the socket's declared type: decode_value's "type"
      "frames": ["93cb3ff0...", ...],         # lowercase hex; frame 0 is the body, the rest out-of-band buffers
      "expected": {...},                     # the engine-neutral value (PROTOCOL.md §9), as conformance.vectors.plain_json writes it
      "input": [...],                        # y_ only, or null: the value as encode_value takes it (plain_json)
      "reject_reason": null                  # n_ only: a substring of the engine's own decoder's message
    }

``expected`` is :func:`conformance.releases.host.neutral` of what the
engine's own decoder returned: a struct as a map of its wire field names
(its tag first, when tagged), an enum as its value, a set as a sorted array,
a tensor as ``{"__tensor__": {"dtype", "shape", "data"}}``. ``input`` is
null where the message cannot be built from plain values (a tensor inside).

This module only reads; :mod:`conformance.vectors.engine_build` writes.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .format import check_description
from .plain_json import from_json

__all__ = ["ENGINE_FIELDS", "EngineVector", "engine_vector_files", "load_engine_vectors"]

#: The keys of every engine vector file, in the order they are written.
ENGINE_FIELDS: Tuple[str, ...] = ("name", "description", "engine", "release", "family", "type", "frames", "expected", "input", "reject_reason")


@dataclass(frozen=True)
class EngineVector:
    """One engine vector file as read from disk; ``expected`` and ``input`` are plain values (bytes as bytes)."""

    file: str  # "kv-events/y_block_stored_int_hashes.json", relative to the engine's vector directory
    name: str
    description: str
    engine: str
    release: str
    family: str
    type: str
    frames: List[bytes] = field(repr=False)
    expected: Any = field(repr=False)
    input: Any = field(repr=False)
    reject_reason: Optional[str]

    @property
    def kind(self) -> str:
        return self.name[0]


def engine_vector_files(directory: str) -> Dict[str, str]:
    """``{"<family>/<name>.json": text}`` for every ``.json`` file one folder below ``directory`` (a missing directory is empty)."""
    found: Dict[str, str] = {}
    if not os.path.isdir(directory):
        return found
    for family in sorted(os.listdir(directory)):
        folder = os.path.join(directory, family)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if name.endswith(".json"):
                with open(os.path.join(folder, name), encoding="ascii", errors="replace", newline="") as fh:
                    found[f"{family}/{name}"] = fh.read()
    return found


def _parse(rel: str, text: str) -> EngineVector:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{rel}: not JSON: {exc}") from None
    if not isinstance(data, dict) or list(data) != list(ENGINE_FIELDS):
        raise ValueError(f"{rel}: keys must be exactly {list(ENGINE_FIELDS)} in order")
    family, filename = rel.split("/")
    name = data["name"]
    if not isinstance(name, str) or filename != f"{name}.json" or name[:2] not in ("y_", "n_", "i_"):
        raise ValueError(f"{rel}: name must be the file name without .json and start with y_, n_ or i_")
    if data["family"] != family:
        raise ValueError(f"{rel}: family {data['family']!r} differs from its folder {family!r}")
    for key in ("engine", "release", "type"):
        if not (isinstance(data[key], str) and data[key]):
            raise ValueError(f"{rel}: {key} must be a non-empty string")
    check_description(rel, data["description"])
    frames = data["frames"]
    if not isinstance(frames, list) or not all(isinstance(f, str) and f == f.lower() for f in frames):
        raise ValueError(f"{rel}: frames must be a list of lowercase hex strings")
    try:
        raw = [bytes.fromhex(f) for f in frames]
    except ValueError:
        raise ValueError(f"{rel}: a frame is not hex") from None
    kind, reason, expected, given = name[0], data["reject_reason"], data["expected"], data["input"]
    if (kind == "n") != isinstance(reason, str) or (reason is not None and not isinstance(reason, str)):
        raise ValueError(f"{rel}: reject_reason must be a string for n_ vectors and null otherwise")
    if kind == "y" and expected is None:
        raise ValueError(f"{rel}: a y_ vector needs an expected value")
    if kind == "n" and expected is not None:
        raise ValueError(f"{rel}: an n_ vector's expected must be null")
    if kind != "y" and given is not None:
        raise ValueError(f"{rel}: only a y_ vector has an input")
    try:
        expected, given = from_json(expected), from_json(given)
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{rel}: expected or input is not a plain_json value: {exc}") from None
    return EngineVector(rel, name, data["description"], data["engine"], data["release"], family, data["type"], raw, expected, given, reason)


def load_engine_vectors(directory: str, family: Optional[str] = None) -> List[EngineVector]:
    """Every engine vector file under ``directory`` (only ``family``'s, if given), sorted by path; ``ValueError`` naming a malformed file."""
    return [_parse(rel, text) for rel, text in sorted(engine_vector_files(directory).items()) if family is None or rel.split("/")[0] == family]
