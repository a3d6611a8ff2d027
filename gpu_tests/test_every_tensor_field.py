"""Every tensor-carrying field of the schema keeps the device of its tensor, on every visible GPU.

``TENSOR_FIELDS`` lists each field declared as ``torch.Tensor`` (found by
walking the schema, so a new one fails the coverage test until it is added
here) and each untyped field that carries tensors in SGLang
(``MultimodalDataItem.feature`` and friends, ``PositionalEmbeds.embeds``).
Each is tested in wire v1 (one frame) and v2 (out-of-band frames), with
contiguous and non-contiguous bfloat16 and float8 tensors.
"""

from __future__ import annotations

from typing import Callable, Dict

import pytest
import torch
from msgspec import inspect as mi

from conformance.equivalence import compare
from reference_codec import ReferenceCodec
from reference_codec import schema as s
from reference_codec.samples import batch_token_id_output, minimal
from reference_codec.schema import MESSAGE_TYPES
from reference_codec.type_tree import reachable_structs, struct_info, walk


def _mm(**fields) -> s.TokenizedGenerateReqInput:
    msg = minimal(s.TokenizedGenerateReqInput)
    msg.mm_inputs = s.MultimodalProcessorOutput(mm_items=[s.MultimodalDataItem(modality=s.Modality.IMAGE)], **fields)
    return msg


def _item(**fields) -> s.TokenizedEmbeddingReqInput:
    msg = minimal(s.TokenizedEmbeddingReqInput)
    msg.mm_inputs = s.MultimodalProcessorOutput(mm_items=[s.MultimodalDataItem(modality=s.Modality.VIDEO, **fields)])
    return msg


def _token_output(field: str, t: torch.Tensor) -> s.BatchTokenIDOutput:
    out = batch_token_id_output(2)
    setattr(out, field, [t, None])
    return out


def _embedding(t: torch.Tensor) -> s.BatchEmbeddingOutput:
    out = minimal(s.BatchEmbeddingOutput)
    out.pooled_hidden_states = [t]
    return out


def _positional(t: torch.Tensor) -> s.TokenizedGenerateReqInput:
    msg = minimal(s.TokenizedGenerateReqInput)
    msg.positional_embed_overrides = s.PositionalEmbeds(embeds=t, positions=[0, 1])
    return msg


#: Field -> a message carrying ``tensor`` in it.
TENSOR_FIELDS: Dict[str, Callable[[torch.Tensor], object]] = {
    "BatchTokenIDOutput.routed_experts": lambda t: _token_output("routed_experts", t),
    "BatchTokenIDOutput.indexer_topk": lambda t: _token_output("indexer_topk", t),
    "BatchEmbeddingOutput.pooled_hidden_states": _embedding,
    "MultimodalProcessorOutput.mrope_positions": lambda t: _mm(mrope_positions=t),
    "MultimodalProcessorOutput.mrope_position_delta": lambda t: _mm(mrope_position_delta=t),
    "MultimodalProcessorOutput.vision_position_ids": lambda t: _mm(vision_position_ids=t),
    "MultimodalProcessorOutput.visible_frame_counts": lambda t: _mm(visible_frame_counts=t),
    "MultimodalProcessorOutput.token_type_ids": lambda t: _mm(token_type_ids=t),
    # Untyped in SGLang and here; tensors are what they usually carry.
    "MultimodalDataItem.feature": lambda t: _item(feature=t),
    "MultimodalDataItem.precomputed_embeddings": lambda t: _item(precomputed_embeddings=t),
    "MultimodalDataItem.model_specific_data": lambda t: _item(model_specific_data={"grid": t, "nested": [t]}),
    "PositionalEmbeds.embeds": _positional,
}

CODECS = pytest.mark.parametrize(
    "codec", [ReferenceCodec(), ReferenceCodec(out_of_band_threshold=16)], ids=["wire-v1", "wire-v2"]
)


def devices():
    return [f"cuda:{i}" for i in range(torch.cuda.device_count())] or ["cuda:0"]


def typed_tensor_fields():
    """``Struct.field`` for every field whose declared type contains ``torch.Tensor``, in any message."""
    return {
        f"{cls.__name__}.{f.name}"
        for cls in reachable_structs(MESSAGE_TYPES.values())
        for f in struct_info(cls).fields
        if any(isinstance(t, mi.CustomType) and t.cls is torch.Tensor for _, t in walk(f.type, into_structs=False))
    }


def test_every_tensor_typed_field_of_the_schema_is_covered_here():
    missing = typed_tensor_fields() - set(TENSOR_FIELDS)
    assert not missing, f"add these tensor fields to TENSOR_FIELDS: {sorted(missing)}"


def _tensor(device: str, dtype: torch.dtype, contiguous: bool) -> torch.Tensor:
    t = torch.arange(48, device=device, dtype=torch.float32).reshape(6, 8) / 7
    t = t.to(dtype)
    return t if contiguous else t.t()


@CODECS
@pytest.mark.parametrize("field", sorted(TENSOR_FIELDS))
@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize(
    "dtype,contiguous",
    [(torch.float32, True), (torch.bfloat16, False), (torch.float8_e4m3fn, True), (torch.float8_e5m2, False)],
    ids=["float32", "bfloat16-transposed", "float8_e4m3fn", "float8_e5m2-transposed"],
)
def test_a_tensor_in_each_field_decodes_on_its_device_with_its_dtype_and_values(codec, field, device, dtype, contiguous):
    sent = TENSOR_FIELDS[field](_tensor(device, dtype, contiguous))
    got = codec.decode(codec.encode(sent))
    difference = compare(sent, got)
    assert difference is None, f"{field} on {device}: {difference}"


@pytest.mark.parametrize("field", sorted(TENSOR_FIELDS))
def test_map_location_moves_each_field_to_another_device(field):
    target = f"cuda:{torch.cuda.device_count() - 1}" if torch.cuda.device_count() > 1 else "cpu"
    sent = TENSOR_FIELDS[field](_tensor("cuda:0", torch.bfloat16, True))
    got = ReferenceCodec(map_location={"cuda:0": target}).decode(ReferenceCodec().encode(sent))
    expected = TENSOR_FIELDS[field](_tensor(target, torch.bfloat16, True))
    difference = compare(expected, got)
    assert difference is None, f"{field} mapped to {target}: {difference}"
