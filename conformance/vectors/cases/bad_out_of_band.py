"""n_ (wire v2): out-of-band frame bookkeeping: every buffer names an existing frame once, every frame is named, lengths agree."""

from __future__ import annotations

import torch

from reference_codec import schema as s
from reference_codec import wire

from ..registry import Ext, case, encode, oob_ext, reference_for, untyped_message

_F32_1 = [[1], "float32", "cpu"]


@case("n_v2_frame_index_out_of_range", "an out-of-band tensor refers to frame 2 of a 2-frame message", wire="v2", reason="refers to frame 2")
def _():
    return [untyped_message(oob_ext(wire.EXT_OOB_TORCH_TENSOR, _F32_1, 2)), b"\x00" * 4]


@case("n_v2_frame_index_zero", "frame 0 is the body and can never be a buffer", wire="v2", reason="refers to frame 0")
def _():
    return [untyped_message(oob_ext(wire.EXT_OOB_TORCH_TENSOR, _F32_1, 0)), b"\x00" * 4]


@case("n_v2_frame_referenced_twice", "two tensors refer to the same frame: each frame is referenced exactly once", wire="v2", reason="referenced twice")
def _():
    ext = oob_ext(wire.EXT_OOB_TORCH_TENSOR, _F32_1, 1)
    return [untyped_message([ext, ext]), b"\x00" * 4]


@case("n_v2_unreferenced_extra_frame", "a junk frame no buffer refers to", wire="v2", reason="not referenced")
def _():
    return [untyped_message(oob_ext(wire.EXT_OOB_TORCH_TENSOR, _F32_1, 1)), b"\x00" * 4, b"junk"]


@case(
    "n_v2_missing_frame",
    "a real v2 message with two out-of-band buffers whose last frame was dropped in transit",
    wire="v2",
    reason="refers to frame 2, but the message has 2 frame(s)",
)
def _():
    msg = s.GetInternalStateReqOutput(internal_state={"a": torch.zeros(16), "b": torch.ones(16)})
    frames = reference_for("v2").encode(msg)
    assert len(frames) == 3
    return frames[:2]


@case("n_v2_frame_length_mismatch", "frame 1 has 8 bytes for a [1] float32 tensor", wire="v2", reason="= 4 bytes, but the buffer carries 8")
def _():
    return [untyped_message(oob_ext(wire.EXT_OOB_TORCH_TENSOR, _F32_1, 1)), b"\x00" * 8]


@case(
    "n_v2_payload_without_frame_index",
    "an out-of-band ext whose payload ends after the metadata, without the u32 frame index",
    wire="v2",
    reason="must end in a 4-byte frame index",
)
def _():
    meta = encode(_F32_1)
    return [untyped_message(Ext(wire.EXT_OOB_TORCH_TENSOR, wire.U32.pack(len(meta)) + meta)), b"\x00" * 4]
