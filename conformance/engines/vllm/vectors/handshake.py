"""Cases of the ``handshake`` family: what the engine core and its front end send once, at startup, with plain msgspec and a declared type.

``EngineCoreReadyResponse`` (engine core -> front end, a dataclass written
as a map) is the message vLLM's Rust front end fell behind on (vLLM PR
#45557 added fixtures for it); ``EngineHandshakeMetadata`` (front end ->
engine core) carries the sockets' addresses. A front end in another language
checks it writes and reads the same maps.
"""

from __future__ import annotations

from typing import Any, Dict, List

import msgspec

from conformance.vectors.engine_build import Frames, ValueCase, case_registrar

__all__ = ["CASES"]

FAMILY = "handshake"
CASES: List[ValueCase] = []


_case = case_registrar(FAMILY, CASES)


def _ready_fields() -> Dict[str, Any]:
    """A single-GPU engine's ready response, the required fields only."""
    return {
        "max_model_len": 32768,
        "num_gpu_blocks": 27000,
        "block_size": 16,
        "dp_stats_address": None,
        "dtype": "bfloat16",
        "vllm_version": "0.34.0",
        "world_size": 1,
        "data_parallel_size": 1,
        "tensor_parallel_size": 1,
        "pipeline_parallel_size": 1,
        "decode_context_parallel_size": 1,
        "data_parallel_rank": 0,
        "max_num_seqs": 256,
        "max_num_batched_tokens": 8192,
        "instance_id": "c0ffee00-0000-4000-8000-000000000001",
        "supports_lora": False,
        "max_loras": 0,
    }


def _ready(**fields: Any):
    from vllm.v1.engine import EngineCoreReadyResponse

    return EngineCoreReadyResponse(**{**_ready_fields(), **fields})


@_case("y_ready_response_required_fields", "EngineCoreReadyResponse", "a single-GPU engine's ready response: the required fields, every optional one at its default")
def _():
    return _ready()


@_case("y_ready_response_data_parallel", "EngineCoreReadyResponse", "rank 1 of 2 data-parallel engines: stats and coordinator addresses, a KV cache size, a float concurrency")
def _():
    return _ready(
        dp_stats_address="tcp://10.0.0.1:5570",
        data_parallel_size=2,
        data_parallel_rank=1,
        kv_cache_size_tokens=432000,
        kv_cache_max_concurrency=13.18,
        effective_attention_block_size=16,
        coord_store_port=29555,
        coordinator_input_address="tcp://10.0.0.1:5571",
        coordinator_output_address="tcp://10.0.0.1:5572",
        enable_expert_parallel=True,
    )


@_case("n_ready_response_without_instance_id", "EngineCoreReadyResponse", "a ready response from a sender that predates instance_id: a required field is missing", reason="missing required field `instance_id`")
def _():
    fields = _ready_fields()
    del fields["instance_id"]
    return Frames([msgspec.msgpack.encode(fields)])


@_case("n_ready_response_as_array", "EngineCoreReadyResponse", "the ready response's values written as an array in field order: the dataclass is a map", reason="Expected `object`, got `array`")
def _():
    return Frames([msgspec.msgpack.encode(list(_ready_fields().values()))])


@_case("i_ready_response_unknown_field", "EngineCoreReadyResponse", "a ready response from a newer engine, with a field this release does not know: msgspec skips it")
def _():
    return Frames([msgspec.msgpack.encode({**_ready_fields(), "kv_offload_tiers": ["cpu", "disk"]})])


@_case("y_handshake_metadata", "EngineHandshakeMetadata", "the front end's addresses for one engine and the parallel config it overrides")
def _():
    from vllm.v1.engine.utils import EngineHandshakeMetadata, EngineZmqAddresses

    addresses = EngineZmqAddresses(inputs=["ipc:///tmp/vllm-in-0"], outputs=["ipc:///tmp/vllm-out-0"], coordinator_input=None, coordinator_output=None)
    return EngineHandshakeMetadata(addresses=addresses, parallel_config={"data_parallel_master_ip": "10.0.0.1", "data_parallel_master_port": 29550, "_data_parallel_master_port_list": [29551, 29552]})
