"""Golden bytes: the wire layout of wire.py, checked byte for byte against hand-written encodings."""

from __future__ import annotations

from array import array

import numpy as np
import torch

from reference_codec import ReferenceCodec
from reference_codec import schema as s
from reference_codec.samples import minimal

V1 = ReferenceCodec()


_FIXEXT = {1: 0xD4, 2: 0xD5, 4: 0xD6, 8: 0xD7, 16: 0xD8}


def ext8(code: int, payload: bytes) -> bytes:
    """msgpack ext of a short payload: fixext for 1/2/4/8/16 bytes, else ext 8."""
    assert len(payload) < 256
    if len(payload) in _FIXEXT:
        return bytes([_FIXEXT[len(payload)], code]) + payload
    return bytes([0xC7, len(payload), code]) + payload


def feature_ext(value) -> bytes:
    """The encoded bytes of ``value`` as the untyped feature of a minimal embedding request."""
    msg = minimal(s.TokenizedEmbeddingReqInput)
    msg.mm_inputs = s.MultimodalProcessorOutput(mm_items=[s.MultimodalDataItem(modality=s.Modality.IMAGE, feature=value)])
    body = V1.encode(msg)[0]
    marker = b"\x9b\x01\xc0\xc0\xc0\x01"  # mm_item array: modality, hash, pad_value, offsets, format
    start = body.index(marker) + len(marker)
    return body[start:]


def test_flush_cache_request_is_a_positional_array_led_by_its_tag():
    body = V1.encode(s.FlushCacheReqInput(rid="a", timeout_s=1.5))
    assert body == [b"\x94\xb2FlushCacheReqInput\xa1a\xc0\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00"]


def test_abort_request_writes_every_field_including_defaults():
    msg = s.AbortReq(rid="r", finished_reason={"type": "abort", "status_code": 400})
    expected = (
        b"\x97\xa8AbortReq\xa1r\xc0\xc2"
        b"\x82\xa4type\xa5abort\xabstatus_code\xcd\x01\x90"
        b"\xc0\xc0"
    )
    assert V1.encode(msg) == [expected]


def test_int16_tensor_uses_the_buffer_layout_with_shape_dtype_device_metadata():
    meta = b"\x93\x91\x02\xa5int16\xa3cpu"
    payload = len(meta).to_bytes(4, "big") + meta + b"\x01\x00\x02\x00"
    assert feature_ext(torch.tensor([1, 2], dtype=torch.int16)).startswith(ext8(2, payload))


def test_zero_d_bfloat16_tensor_has_an_empty_shape_and_two_bytes():
    meta = b"\x93\x90\xa8bfloat16\xa3cpu"
    raw = b"\x80\x3f"  # bfloat16 1.0, little-endian
    payload = len(meta).to_bytes(4, "big") + meta + raw
    assert feature_ext(torch.tensor(1.0, dtype=torch.bfloat16)).startswith(ext8(2, payload))


def test_big_endian_ndarray_keeps_its_dtype_string_and_raw_byte_order():
    meta = b"\x92\x91\x02\xa3>i4"
    payload = len(meta).to_bytes(4, "big") + meta + b"\x00\x00\x00\x01\x00\x00\x00\x02"
    assert feature_ext(np.array([1, 2], dtype=">i4")).startswith(ext8(3, payload))


def test_token_id_array_uses_ext_1_with_its_typecode():
    msg = minimal(s.TokenizedGenerateReqInput)
    msg.input_ids = array("q", [1, -1])
    body = V1.encode(msg)[0]
    payload = b"\x00\x00\x00\x02\xa1q" + (1).to_bytes(8, "little") + (-1).to_bytes(8, "little", signed=True)
    assert ext8(1, payload) in body


def test_reference_value_extensions_have_their_documented_payloads():
    assert feature_ext((1, "a")).startswith(ext8(64, b"\x92\x01\xa1a"))
    assert feature_ext(torch.Size([2, 3])).startswith(ext8(65, b"\x92\x02\x03"))
    assert feature_ext(np.float32(1.0)).startswith(ext8(66, b"\x00\x00\x00\x04\xa3<f4" + b"\x00\x00\x80\x3f"))
    assert feature_ext(2**64).startswith(ext8(67, b"\x01" + b"\x00" * 8))
    assert feature_ext(-(2**127)).startswith(b"\xd8\x43" + b"\x80" + b"\x00" * 15)  # fixext16
    assert feature_ext(s.Modality.AUDIO).startswith(ext8(68, b"\x92\xa8Modality\x03"))


def test_out_of_band_tensor_points_at_its_frame_and_the_frame_is_its_raw_bytes():
    codec = ReferenceCodec(out_of_band_threshold=8)
    msg = minimal(s.TokenizedEmbeddingReqInput)
    tensor = torch.arange(4, dtype=torch.int32)
    msg.mm_inputs = s.MultimodalProcessorOutput(mm_items=[s.MultimodalDataItem(modality=s.Modality.IMAGE, feature=tensor)])
    body, frame = codec.encode(msg)
    meta = b"\x93\x91\x04\xa5int32\xa3cpu"
    payload = len(meta).to_bytes(4, "big") + meta + (1).to_bytes(4, "big")
    assert ext8(34, payload) in body
    assert bytes(frame) == tensor.numpy().tobytes()
