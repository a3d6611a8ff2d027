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

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .format import parse_record
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
    data, family, raw = parse_record(rel, text, ENGINE_FIELDS)
    if data["family"] != family:
        raise ValueError(f"{rel}: family {data['family']!r} differs from its folder {family!r}")
    for key in ("engine", "release", "type"):
        if not (isinstance(data[key], str) and data[key]):
            raise ValueError(f"{rel}: {key} must be a non-empty string")
    if data["name"][0] != "y" and data["input"] is not None:
        raise ValueError(f"{rel}: only a y_ vector has an input")
    try:
        expected, given = from_json(data["expected"]), from_json(data["input"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{rel}: expected or input is not a plain_json value: {exc}") from None
    return EngineVector(rel, data["name"], data["description"], data["engine"], data["release"], family, data["type"], raw, expected, given, data["reject_reason"])


def load_engine_vectors(directory: str, family: Optional[str] = None) -> List[EngineVector]:
    """Every engine vector file under ``directory`` (only ``family``'s, if given), sorted by path; ``ValueError`` naming a malformed file."""
    return [_parse(rel, text) for rel, text in sorted(engine_vector_files(directory).items()) if family is None or rel.split("/")[0] == family]
