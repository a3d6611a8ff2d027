"""y_ (wire v1): how typed fields travel: nested structs as maps, union fields, enum values, required fields after the base."""

from __future__ import annotations

import torch

from reference_codec import schema as s

from ..registry import case


@case("y_map_encoded_structs", "nested structs without array_like travel as maps keyed by field name (ChecksumInfo, ParallelismInfo)")
def _():
    info = s.ParallelismInfo(role="tp", tp_rank=1, tp_size=2, dp_rank=0, dp_size=1, pp_rank=0, pp_size=1, rank=1, size=2)
    return s.CheckWeightsReqOutput(
        success=True,
        message="ok",
        payload=[s.ChecksumInfo(checksums={"layer.0": "ab12"}, per_gpu_checksum="ff00", parallelism_info=[info])],
    )


@case("y_batch_embedding_output_unions", "embedding unions: list of floats, nested lists, int-keyed sparse dict, bare float; pooled tensors")
def _():
    return s.BatchEmbeddingOutput(
        rids=["e0", "e1", "e2", "e3"],
        finished_reasons=[None] * 4,
        embeddings=[[0.5, -1.0], [[1.0], 2.0], {7: 0.25, 1024: -0.5}, 3.0],
        prompt_tokens=[1, 2, 3, 4],
        cached_tokens=[0, 0, 0, 0],
        placeholder_tokens_idx=None,
        placeholder_tokens_val=None,
        pooled_hidden_states=[None, torch.tensor([1.0, -1.0]), None, None],
    )


@case("y_profile_req_enum_field", "a typed enum field travels as its value (ProfileReqType.STOP_PROFILE is 2)")
def _():
    return s.ProfileReq(req_type=s.ProfileReqType.STOP_PROFILE, output_dir="/tmp/p", num_steps=5, activities=["CPU", "GPU"])


@case("y_load_lora_adapter_req_input", "a LoRA control request: required str fields after the base fields, bool and Optional defaults")
def _():
    return s.LoadLoRAAdapterReqInput(lora_name="sql", lora_path="/loras/sql", pinned=True)
