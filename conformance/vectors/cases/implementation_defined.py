"""i_ (wire v1, one v2): frames an implementation may accept or refuse (but not crash on), with the value it must decode to if it accepts.

Among them are three ``n_`` cases, untyped values that decode to something no encoder
writes (a timestamp ext, array and timestamp map keys), which the reference refuses.
"""

from __future__ import annotations

import msgspec
import torch

from reference_codec import schema as s
from reference_codec import wire

from ..registry import Ext, Raw, case, message_body, oob_ext, tensor_message, untyped_message


@case("i_int_for_float_field", "a msgpack int where float is declared: msgspec accepts it as 1.0; a stricter decoder may refuse")
def _():
    return Raw([message_body("FlushCacheReqInput", "a", None, 1)], s.FlushCacheReqInput(rid="a", timeout_s=1.0))


@case("i_float32_for_float_field", "msgpack float32 where float64 is declared: the wire never writes it; widening to 1.5 is fine")
def _():
    return Raw([message_body("FlushCacheReqInput", "a", None, msgspec.Raw(b"\xca\x3f\xc0\x00\x00"))], s.FlushCacheReqInput(rid="a", timeout_s=1.5))


@case("i_cuda_device_tensor", "a tensor sent from 'cuda:0': kept on cuda:0 where it exists, refused (or mapped) where it does not")
def _():
    return Raw([tensor_message([[1], "float32", "cuda:0"], b"\x00\x00\x80\x3f")])


@case("i_device_without_index", "device 'cuda' without an index is valid wire text; placing it depends on the machine")
def _():
    return Raw([tensor_message([[1], "float32", "cuda"], b"\x00\x00\x80\x3f")])


@case(
    "n_timestamp_ext_in_untyped_field",
    "msgpack's timestamp ext (-1) in an untyped field: a datetime the reference never writes and could not re-encode on a second hop",
    reason="msgpack timestamp ext -1",
)
def _():
    return Raw([untyped_message(Ext(-1, (1700000000).to_bytes(4, "big")))])


@case(
    "n_array_map_key_in_untyped_field",
    "an untyped map keyed by an array: decodes to a tuple key that no encoder writes (found by fuzzing the testee)",
    reason="map key of type tuple in an untyped field",
)
def _():
    return Raw([untyped_message(msgspec.Raw(b"\x81\x92\x01\x02\xc0"))])


@case(
    "n_timestamp_map_key_in_untyped_field",
    "an untyped map keyed by msgpack's timestamp ext (-1): a datetime key that no encoder writes",
    reason="map key of type datetime in an untyped field",
)
def _():
    return Raw([untyped_message(msgspec.Raw(b"\x81\xd6\xff" + (1700000000).to_bytes(4, "big") + b"\xc0"))])


@case("i_duplicate_map_keys", "a Dict[str, Any] map holding key 'a' twice: last-wins, first-wins or refusal are all seen in practice")
def _():
    return Raw([message_body("GetInternalStateReqOutput", None, None, msgspec.Raw(b"\x82\xa1a\x01\xa1a\x02"))])


@case("i_unknown_key_in_map_struct", "a map-encoded struct (ChecksumInfo) with a key the schema lacks: ignored by msgspec")
def _():
    checksum = {"checksums": {}, "per_gpu_checksum": "x", "parallelism_info": [], "added_later": 1}
    expected = s.CheckWeightsReqOutput(
        success=True, message="m", payload=[s.ChecksumInfo(checksums={}, per_gpu_checksum="x", parallelism_info=[])]
    )
    return Raw([message_body("CheckWeightsReqOutput", None, None, True, "m", [checksum])], expected)


@case("i_bigint_ext_for_small_int", "a big integer ext 67 holding 5, which fits msgpack's int: an encoder never writes it")
def _():
    return Raw([untyped_message(Ext(wire.EXT_BIGINT, b"\x05"))], s.GetInternalStateReqOutput(internal_state={"value": 5}))


@case("i_bigint_non_minimal_bytes", "a big integer ext 67 with 16 bytes for the value 1: not minimal, still unambiguous")
def _():
    return Raw([untyped_message(Ext(wire.EXT_BIGINT, b"\x00" * 15 + b"\x01"))], s.GetInternalStateReqOutput(internal_state={"value": 1}))


@case(
    "i_extra_trailing_field_with_unknown_ext",
    "an ignored extra trailing element holding an unknown ext code: msgspec skips it unread, a stricter decoder may refuse",
)
def _():
    return Raw([message_body("FlushCacheReqInput", "a", None, 1.5, Ext(99, b"x"))], s.FlushCacheReqInput(rid="a", timeout_s=1.5))


@case(
    "i_extra_trailing_field_with_invalid_utf8",
    "an ignored extra trailing element holding invalid UTF-8: skipped unread by msgspec, refused by a validating decoder",
)
def _():
    body = message_body("FlushCacheReqInput", "a", None, 1.5, msgspec.Raw(b"\xa2\xff\xfe"))
    return Raw([body], s.FlushCacheReqInput(rid="a", timeout_s=1.5))


@case(
    "i_v2_empty_out_of_band_frame",
    "an out-of-band (0,) tensor whose frame is empty: valid layout, though an encoder keeps empty buffers in band",
    wire="v2",
)
def _():
    meta = [[0], "float32", "cpu"]
    frames = [untyped_message(oob_ext(wire.EXT_OOB_TORCH_TENSOR, meta, 1)), b""]
    return Raw(frames, s.GetInternalStateReqOutput(internal_state={"value": torch.zeros(0)}))
