"""Cases of the ``mooncake`` family: the Mooncake KV connector's side channel between a decode (D) and a prefill (P) machine.

D sends a pull (``MooncakeXferMetadata``) or a lease heartbeat
(``MooncakeLeaseHeartbeat``) on one socket; P tries a frame as a heartbeat
first, and a frame with no transfer ids is a pull. P answers with
``MooncakeXferResponse``. All three omit their defaults. The
``y_pull_read_as_heartbeat`` vector is that rule as bytes: a pull read as a
heartbeat has no ids.
"""

from __future__ import annotations

from typing import List

import msgspec

from conformance.vectors.engine_build import Frames, ValueCase, case_registrar

__all__ = ["CASES"]

FAMILY = "mooncake"
CASES: List[ValueCase] = []


_case = case_registrar(FAMILY, CASES)


def _connector():
    import vllm.distributed.kv_transfer.kv_connector.v1.mooncake.mooncake_connector as connector

    return connector


def _pull(**fields):
    return _connector().MooncakeXferMetadata(
        remote_hostname="10.0.0.2",
        remote_port=17100,
        remote_tp_size=2,
        remote_tp_rank=1,
        req_blocks={"req-0": ("xfer-0", [[4, 5, 6]])},
        kv_caches_base_addr=[140000000000000, 140000100000000],
        block_lens=[65536, 65536],
        kv_block_lens=[32768, 32768],
        **fields,
    )


@_case("y_pull", "MooncakeXferMetadata", "a pull of one request's blocks from one layer group, every defaulted field at its default (so omitted)")
def _():
    return _pull()


@_case("y_pull_with_layout", "MooncakeXferMetadata", "a pull that carries its registered layout and a layout id, with pipeline parallelism 2")
def _():
    return _pull(registered_layer_names=["model.layers.0.attn"], registered_layer_indices=[0], registered_group_indices=[0], registered_row_offsets=[-1], remote_pp_size=2, layout_id=987654321)


@_case("y_heartbeat", "MooncakeLeaseHeartbeat", "a lease heartbeat renewing two transfers")
def _():
    return _connector().MooncakeLeaseHeartbeat(lease_transfer_ids=["xfer-0", "xfer-1"])


@_case("y_pull_read_as_heartbeat", "MooncakeLeaseHeartbeat", "a pull's bytes read as a heartbeat, as P first reads every frame: no transfer ids, so P takes it for a pull")
def _():
    return Frames([msgspec.msgpack.encode(_pull())])


@_case("y_response_layout_miss", "MooncakeXferResponse", "P does not hold the pull's layout: status LAYOUT_MISS (an IntEnum, written as 3) and the layout id")
def _():
    connector = _connector()
    return connector.MooncakeXferResponse(status=connector.MooncakeXferResponseStatus.LAYOUT_MISS, layout_id=987654321)


@_case("n_pull_port_as_str", "MooncakeXferMetadata", "a pull whose remote_port is the string '17100'", reason="Expected `int`, got `str`")
def _():
    fields = msgspec.to_builtins(_pull())
    return Frames([msgspec.msgpack.encode({**fields, "remote_port": "17100"})])


@_case("n_response_unknown_status", "MooncakeXferResponse", "a response with status 9: not a MooncakeXferResponseStatus", reason="Invalid enum value 9")
def _():
    return Frames([msgspec.msgpack.encode({"status": 9})])


@_case("i_heartbeat_duplicate_key", "MooncakeLeaseHeartbeat", "a heartbeat map with lease_transfer_ids twice: msgspec keeps the last, other decoders may keep the first or refuse")
def _():
    key = msgspec.msgpack.encode("lease_transfer_ids")
    return Frames([b"\x82" + key + msgspec.msgpack.encode(["xfer-0"]) + key + msgspec.msgpack.encode(["xfer-1"])])
