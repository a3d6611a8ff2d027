"""A §9 testee of vLLM 0.34.0's KV events without vLLM: msgspec structs mirroring ``vllm/distributed/kv_events.py``, and broken variants of them.

Test-only, run as a program by the meta-tests of the engine vectors::

    python -m conformance.tests.kv_events_mirror [--break misspelled-tag|dropped-field|lenient-trailing]

The mirror declares the same classes, options and field order as vLLM
0.34.0, so it must pass every vLLM KV-event vector with no failure list;
each ``--break`` is one bug a router's decoder could have, which the vectors
test must catch:

``misspelled-tag``   ``BlockStored`` tagged ``"BlockStore"`` (a letter short);
``dropped-field``    ``BlockStored`` without its ``medium`` field (read and written without it);
``lenient-trailing`` ``rmp_serde::from_slice``-style: bytes after the message are ignored.

It answers through :class:`conformance.releases.host.CodecHost`'s own
``handle``, so its neutral form is the host's.
"""

# No `from __future__ import annotations`: msgspec resolves the local classes' annotations at definition.
import argparse
import sys
from typing import Any, List, Optional, Union

import msgspec

from conformance.engines.plain_codec import PlainCodec
from conformance.releases.host import CodecHost
from conformance.testee.reference_testee import serve

ExternalBlockHash = Union[bytes, int]


def mirror_types(broken: Optional[str] = None) -> type:
    """``KVEventBatch`` as vLLM 0.34.0 declares it, or with the bug ``broken``."""

    class KVCacheEvent(msgspec.Struct, omit_defaults=True, gc=False, tag=True):
        pass

    stored_tag = "BlockStore" if broken == "misspelled-tag" else "BlockStored"

    if broken == "dropped-field":

        class BlockStored(KVCacheEvent, tag=stored_tag):  # type: ignore[call-arg]
            block_hashes: List[ExternalBlockHash]
            parent_block_hash: Optional[ExternalBlockHash]
            token_ids: List[int]
            block_size: int
            lora_id: Optional[int]
            lora_name: Optional[str]
            extra_keys: Optional[List[Optional[tuple]]] = None
            group_idx: Optional[int] = None
            kv_cache_spec_kind: Optional[str] = None
            kv_cache_spec_sliding_window: Optional[int] = None
            locality: Optional[str] = None
            ownership: Optional[str] = None
            session_id: Optional[str] = None
            lookahead_token_ids: Optional[List[List[int]]] = None

    else:

        class BlockStored(KVCacheEvent, tag=stored_tag):  # type: ignore[call-arg,no-redef]
            block_hashes: List[ExternalBlockHash]
            parent_block_hash: Optional[ExternalBlockHash]
            token_ids: List[int]
            block_size: int
            lora_id: Optional[int]
            medium: Optional[str]
            lora_name: Optional[str]
            extra_keys: Optional[List[Optional[tuple]]] = None
            group_idx: Optional[int] = None
            kv_cache_spec_kind: Optional[str] = None
            kv_cache_spec_sliding_window: Optional[int] = None
            locality: Optional[str] = None
            ownership: Optional[str] = None
            session_id: Optional[str] = None
            lookahead_token_ids: Optional[List[List[int]]] = None

    class BlockRemoved(KVCacheEvent):
        block_hashes: List[ExternalBlockHash]
        medium: Optional[str]
        group_idx: Optional[int] = None
        locality: Optional[str] = None
        ownership: Optional[str] = None

    class AllBlocksCleared(KVCacheEvent):
        pass

    class KVEventBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
        ts: float
        events: List[Union[BlockStored, BlockRemoved, AllBlocksCleared]]
        data_parallel_rank: Optional[int] = None

    return KVEventBatch


class _LenientCodec(PlainCodec):
    """Decodes the first msgpack value of the frame and ignores what follows it."""

    def decode(self, frames: List[bytes], cls: Optional[type]) -> Any:
        value, _ = _first_value(frames[0])
        return msgspec.convert(value, cls, strict=True) if cls is not None else value


def _first_value(frame: bytes):
    for end in range(len(frame), 0, -1):
        try:
            return msgspec.msgpack.decode(frame[:end]), end
        except msgspec.DecodeError:
            continue
    raise msgspec.DecodeError("Input data was truncated")


def host(broken: Optional[str] = None) -> CodecHost:
    """A :class:`CodecHost` for the mirror (or its broken variant), built without an engine."""
    testee = CodecHost.__new__(CodecHost)
    testee.types = {"KVEventBatch": mirror_types(broken)}
    testee.tagged = False
    testee.codec = _LenientCodec() if broken == "lenient-trailing" else PlainCodec()
    testee.name = f"kv-events-mirror{f' (broken: {broken})' if broken else ''}"
    return testee


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.tests.kv_events_mirror")
    parser.add_argument("--break", dest="broken", choices=["misspelled-tag", "dropped-field", "lenient-trailing"])
    args = parser.parse_args(argv)
    return serve(host(args.broken))  # type: ignore[arg-type]


if __name__ == "__main__":
    sys.exit(main())
