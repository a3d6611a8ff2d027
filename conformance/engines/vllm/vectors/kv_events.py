"""Cases of the ``kv-events`` family: ``KVEventBatch`` as vLLM publishes it to routers, and frames routers meet.

On the wire (vLLM 0.34.0) a batch is positional, ``[ts, events,
data_parallel_rank]``; each event is a map tagged by ``"type"``
(``BlockStored``, ``BlockRemoved``, ``AllBlocksCleared``) that leaves out
defaulted fields when they are ``None``. Block hashes are ``bytes`` (sha256)
or, with ``VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES``, an unsigned 64-bit int.
Built messages are written by a plain ``msgspec.msgpack.Encoder`` (the
family's codec); hand-made frames are written here with plain msgpack.
"""

from __future__ import annotations

import struct
from typing import Any, Dict, List

import msgspec

from conformance.vectors.engine_build import Frames, ValueCase, case_registrar

__all__ = ["CASES"]

FAMILY, TYPE = "kv-events", "KVEventBatch"
CASES: List[ValueCase] = []
_encode = msgspec.msgpack.encode
_OMIT = object()


_register = case_registrar(FAMILY, CASES)


def _case(name: str, description: str, reason: str | None = None):
    return _register(name, TYPE, description, reason)


def _kv():
    import vllm.distributed.kv_events as kv

    return kv


def _stored(**fields: Any):
    values: Dict[str, Any] = dict(block_hashes=[1, 2], parent_block_hash=None, token_ids=[1, 2, 3, 4], block_size=2, lora_id=None, medium="GPU", lora_name=None)
    values.update(fields)
    return _kv().BlockStored(**values)


def _batch(*events: Any, ts: float = 1700000000.5, rank: Any = None):
    return _kv().KVEventBatch(ts=ts, events=list(events), data_parallel_rank=rank)


#: A BlockStored event as vLLM writes it (a map, the None fields with defaults left out), for hand-made frames.
_EVENT = {"type": "BlockStored", "block_hashes": [1], "parent_block_hash": None, "token_ids": [1], "block_size": 16, "lora_id": None, "medium": "GPU", "lora_name": None}


def _event(**fields: Any) -> Dict[str, Any]:
    merged = {**_EVENT, **fields}
    return {k: v for k, v in merged.items() if v is not _OMIT}


def _frame(*items: Any) -> Frames:
    return Frames([_encode(list(items))])


def _map(pairs) -> bytes:
    """A msgpack map written pair by pair, so a key may repeat or come anywhere."""
    return bytes([0x80 | len(pairs)]) + b"".join(_encode(k) + _encode(v) for k, v in pairs)


def _batch_of_raw_event(event: bytes) -> Frames:
    return Frames([b"\x92\xcb" + struct.pack(">d", 1.0) + b"\x91" + event])


# --- y_: what vLLM writes, and what it reads by its documented contract ----------------------


@_case("y_block_stored_int_hashes", "BlockStored with int block hashes (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES), int parent, no LoRA")
def _():
    return _batch(_stored(block_hashes=[11, 12], parent_block_hash=10))


@_case("y_block_stored_bytes_hashes", "BlockStored with 32-byte sha256 block hashes and a bytes parent: vLLM's default hashes")
def _():
    return _batch(_stored(block_hashes=[bytes(range(32)), b"\xff" * 32], parent_block_hash=b"\x00" * 32))


@_case("y_block_stored_mixed_hash_kinds", "bytes | int hashes in one list: the union allows both, a router must take both")
def _():
    return _batch(_stored(block_hashes=[7, b"\x01" * 32], parent_block_hash=b"\x02" * 32))


@_case("y_block_stored_u64_edges", "hash 2**64-1 (above i64), parent 2**63, token id 2**32-1, block_size 2**31-1: unsigned edges vLLM sends")
def _():
    return _batch(_stored(block_hashes=[2**64 - 1, 0, 2**63 - 1], parent_block_hash=2**63, token_ids=[0, 2**32 - 1], block_size=2**31 - 1))


@_case("y_block_stored_every_field", "BlockStored with LoRA id and name, extra_keys, group, cache spec, locality, ownership, session, lookahead")
def _():
    return _batch(
        _stored(
            lora_id=3,
            lora_name="adapter-a",
            medium="CPU",
            extra_keys=[("adapter-a", ("mm-hash", 0), "salt"), None],
            block_hashes=[b"\x03" * 32, b"\x04" * 32],
            group_idx=1,
            kv_cache_spec_kind="sliding_window",
            kv_cache_spec_sliding_window=4096,
            locality="LOCAL",
            ownership="tier-2",
            session_id="session-1",
            lookahead_token_ids=[[5, 6], []],
        )
    )


@_case("y_block_stored_medium_none", "BlockStored with medium None and lora_name None: required nullable fields written as nil")
def _():
    return _batch(_stored(medium=None))


@_case("y_block_removed", "BlockRemoved of two int hashes from the GPU, no group")
def _():
    return _batch(_kv().BlockRemoved(block_hashes=[11, 12], medium="GPU"))


@_case("y_block_removed_with_group_and_locality", "BlockRemoved with bytes hash, medium STORAGE, group_idx 0, locality REMOTE, ownership")
def _():
    return _batch(_kv().BlockRemoved(block_hashes=[b"\x05" * 32], medium="STORAGE", group_idx=0, locality="REMOTE", ownership="tier-3"))


@_case("y_all_blocks_cleared", "AllBlocksCleared: a tagged event with no fields, a map holding only its tag")
def _():
    return _batch(_kv().AllBlocksCleared())


@_case("y_mixed_batch", "stored, removed and cleared events in one batch, in that order, with data_parallel_rank 0")
def _():
    kv = _kv()
    return _batch(_stored(), kv.BlockRemoved(block_hashes=[1], medium="GPU"), kv.AllBlocksCleared(), rank=0)


@_case("y_empty_batch", "a batch with no events and no data_parallel_rank (None, still written: array_like)")
def _():
    return _batch()


@_case("y_data_parallel_rank_present", "a batch from data-parallel rank 7, one event")
def _():
    return _batch(_kv().AllBlocksCleared(), rank=7)


@_case("y_ts_integral_float", "ts 1700000000.0, a float64 with an integral value: a float to vLLM, whatever a decoder's numbers are")
def _():
    return _batch(ts=1700000000.0)


@_case("y_batch_without_rank", "a two-element batch [ts, events]: vLLM fills data_parallel_rank with None (array_like tail default)")
def _():
    return _frame(1.5, [])


@_case("y_batch_with_appended_field", "a four-element batch: vLLM ignores the extra trailing element, how an array_like struct grows")
def _():
    return _frame(1.5, [], 2, "a field of a later release")


@_case("y_event_with_unknown_key", "a BlockStored map with a key vLLM does not know: ignored, how an event grows")
def _():
    return _frame(1.5, [_event(future_field=[1, {"a": 2}])])


@_case("y_event_tag_last", "a BlockStored map whose 'type' key comes last: msgpack maps are unordered")
def _():
    return _batch_of_raw_event(_map([*[(k, v) for k, v in _EVENT.items() if k != "type"], ("type", "BlockStored")]))


@_case("y_event_defaulted_field_as_nil", "group_idx and session_id written as nil where vLLM would leave them out: read as None")
def _():
    return _frame(1.5, [_event(group_idx=None, session_id=None)])


# --- n_: what vLLM 0.34.0 refuses -------------------------------------------------------------


@_case("n_event_tag_misspelled", "an event tagged 'BlockStore' (a letter short): no such variant", reason="Invalid value 'BlockStore'")
def _():
    return _frame(1.5, [_event(type="BlockStore")])


@_case("n_event_tag_missing", "a BlockStored map without its 'type' key: the union cannot pick a variant", reason="missing required field `type`")
def _():
    return _frame(1.5, [_event(type=_OMIT)])


@_case(
    "n_event_positional_0_23",
    "an event as vLLM 0.23 wrote it, a positional array with its tag first: 0.34 reads only maps",
    reason="Expected `object`, got `array`",
)
def _():
    return _frame(1.5, [["BlockStored", [1], None, [1], 16, None, "GPU", None]])


@_case("n_batch_as_map", "the batch written as a map of its field names: KVEventBatch is array_like", reason="Expected `array`, got `object`")
def _():
    return Frames([_encode({"ts": 1.5, "events": [], "data_parallel_rank": None})])


@_case("n_block_size_str", "block_size as the string '16'", reason="Expected `int`, got `str`")
def _():
    return _frame(1.5, [_event(block_size="16")])


@_case("n_block_size_bool", "block_size true: a bool is not an int to msgspec", reason="Expected `int`, got `bool`")
def _():
    return _frame(1.5, [_event(block_size=True)])


@_case("n_block_size_float", "block_size 16.0, a float64 where int is declared: msgspec refuses it", reason="Expected `int`, got `float`")
def _():
    return _frame(1.5, [_event(block_size=16.0)])


@_case("n_block_hash_float", "a block hash 1.0: neither int nor bytes", reason="Expected `int | bytes`, got `float`")
def _():
    return _frame(1.5, [_event(block_hashes=[1.0])])


@_case("n_block_hash_str", "a block hash written as the str 'ab' instead of bin: refused, a lenient decoder reads bytes", reason="Expected `int | bytes`, got `str`")
def _():
    return _frame(1.5, [_event(block_hashes=["ab"])])


@_case("n_token_ids_not_a_list", "token_ids as one int instead of a list", reason="Expected `array`, got `int`")
def _():
    return _frame(1.5, [_event(token_ids=5)])


@_case("n_required_lora_id_missing", "a BlockStored map without lora_id: required (no default) although nullable", reason="missing required field `lora_id`")
def _():
    return _frame(1.5, [_event(lora_id=_OMIT)])


@_case("n_ts_str", "ts as a string", reason="Expected `float`, got `str`")
def _():
    return _frame("1.5", [])


@_case("n_truncated_batch", "a valid one-event batch cut in the middle of its event", reason="truncated")
def _():
    whole = _encode([1.5, [_event()]])
    return Frames([whole[: len(whole) // 2]])


@_case("n_trailing_bytes", "a valid empty batch followed by one more byte (nil)", reason="trailing characters")
def _():
    return Frames([_encode([1.5, [], None]) + b"\xc0"])


@_case("n_empty_frame", "an empty frame", reason="truncated")
def _():
    return Frames([b""])


# --- i_: implementation-defined ---------------------------------------------------------------


@_case("i_ts_int", "ts written as the int 2 where float is declared: msgspec reads 2.0, a strict decoder may refuse")
def _():
    return _frame(2, [])


@_case("i_ts_float32", "ts as msgpack float32 1.5: vLLM writes float64; widening is fine, refusing too")
def _():
    return Frames([b"\x92\xca" + struct.pack(">f", 1.5) + b"\x90"])


@_case("i_ts_nan", "ts NaN: valid msgpack, not a time; vLLM reads it")
def _():
    return _frame(float("nan"), [])


@_case("i_block_hash_negative", "a block hash -1: vLLM's int allows it, its producers never send it (hashes are unsigned 64-bit)")
def _():
    return _frame(1.5, [_event(block_hashes=[-1])])


@_case("i_data_parallel_rank_over_i32", "data_parallel_rank 2**31: vLLM's int takes it; a router's i32 may refuse")
def _():
    return _frame(1.5, [], 2**31)


@_case("i_duplicate_key", "an event map with 'medium' twice (GPU, then CPU): vLLM keeps the last; refusing is fine")
def _():
    return _batch_of_raw_event(_map([*_EVENT.items(), ("medium", "CPU")]))
