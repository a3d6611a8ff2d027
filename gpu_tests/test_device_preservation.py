"""Tensors sent from ``cuda:N`` decode on ``cuda:N``, in wire v1 and v2, for every tensor-carrying field."""

from __future__ import annotations

import pytest
import torch

from conformance.equivalence import compare
from reference_codec import DecodeError, ReferenceCodec
from reference_codec import schema as s
from reference_codec.dtypes import TORCH_DTYPES
from reference_codec.samples import batch_token_id_output, minimal

CODECS = pytest.mark.parametrize(
    "codec", [ReferenceCodec(), ReferenceCodec(out_of_band_threshold=256)], ids=["wire-v1", "wire-v2"]
)


def devices():
    return [f"cuda:{i}" for i in range(torch.cuda.device_count())] or ["cuda:0"]


def carrier(tensor: torch.Tensor):
    """One message per tensor-carrying field kind: typed, nested typed, untyped and dict-held."""
    out = batch_token_id_output(2)
    out.routed_experts = [tensor, None]
    emb = minimal(s.BatchEmbeddingOutput)
    emb.pooled_hidden_states = [tensor]
    gen = minimal(s.TokenizedGenerateReqInput)
    item = s.MultimodalDataItem(modality=s.Modality.IMAGE, feature=tensor, model_specific_data={"grid": tensor})
    gen.mm_inputs = s.MultimodalProcessorOutput(mm_items=[item], mrope_positions=tensor)
    return [out, emb, gen]


@CODECS
@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "int32", "float8_e4m3fn", "bool"])
def test_tensor_decodes_on_the_device_it_was_sent_from(codec, device, dtype):
    tensor = torch.arange(24, device=device).reshape(4, 6).to(TORCH_DTYPES[dtype])
    for msg in carrier(tensor):
        got = codec.decode(codec.encode(msg))
        assert compare(msg, got) is None, compare(msg, got)


@CODECS
@pytest.mark.parametrize("device", devices())
def test_non_contiguous_cuda_tensor_arrives_contiguous_on_its_device(codec, device):
    tensor = torch.randn(8, 6, device=device, dtype=torch.bfloat16).t()
    got = codec.decode(codec.encode(carrier(tensor)[0])).routed_experts[0]
    assert got.device == tensor.device and got.is_contiguous() and torch.equal(got, tensor)


def test_map_location_moves_tensors_to_another_device():
    tensor = torch.ones(3, device="cuda:0")
    frames = ReferenceCodec().encode(carrier(tensor)[0])
    got = ReferenceCodec(map_location="cpu").decode(frames).routed_experts[0]
    assert got.device.type == "cpu" and got.tolist() == [1.0, 1.0, 1.0]
    target = f"cuda:{torch.cuda.device_count() - 1}"
    got = ReferenceCodec(map_location={"cuda:0": target}).decode(frames).routed_experts[0]
    assert str(got.device) == target


def test_a_device_this_process_lacks_is_a_decode_error():
    tensor = torch.ones(3, device="cuda:0")
    frames = ReferenceCodec().encode(carrier(tensor)[0])
    missing = f"cuda:{torch.cuda.device_count()}"
    body = bytes(frames[0]).replace(b"\xa6cuda:0", b"\xa6" + missing.encode()) if len(missing) == 6 else None
    if body is None:
        pytest.skip("device index has more than one digit")
    with pytest.raises(DecodeError, match="map_location"):
        ReferenceCodec().decode([body])


def test_out_of_band_frames_of_cuda_tensors_carry_the_host_bytes():
    tensor = torch.randn(1024, device="cuda:0")
    codec = ReferenceCodec(out_of_band_threshold=1024)
    frames = codec.encode(carrier(tensor)[0])
    assert len(frames) >= 2
    assert bytes(frames[-1]) == tensor.cpu().numpy().tobytes()
