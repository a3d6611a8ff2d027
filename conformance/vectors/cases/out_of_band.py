"""y_ (wire v2): buffers of 64 bytes or more leave the body as frames 1..n; smaller ones stay in band."""

from __future__ import annotations

from array import array

import numpy as np
import torch

from reference_codec import schema as s

from ..registry import bf16, case, embedding_request, generate_request, token_id_output


@case(
    "y_v2_out_of_band_tensor",
    "a 64-byte bf16 feature tensor leaves the body as frame 1 (ext 34: metadata, then the u32 frame index)",
    wire="v2",
)
def _():
    feature = bf16([[float(i) / 4 - 2 for i in range(8)] for _ in range(4)])
    return embedding_request(s.MultimodalDataItem(modality=s.Modality.IMAGE, feature=feature))


@case(
    "y_v2_mixed_in_band_and_out_of_band",
    "buffers under 64 bytes stay in the body, larger ones become frames 1..n in the order the body references them",
    wire="v2",
)
def _():
    return token_id_output(
        3,
        decode_ids=[array("q", range(8)), array("q", [5]), array("q", range(100, 116))],
        completion_tokens=[8, 1, 16],
        routed_experts=[torch.arange(24, dtype=torch.int32).reshape(4, 3, 2), torch.zeros(1, 3, 2, dtype=torch.int32), None],
        input_top_logprobs_val_flat=[(np.arange(16, dtype="<f4") - 16) / 16, None, np.array([-0.5], dtype="<f4")],
    )


@case(
    "y_v2_out_of_band_array_and_ndarray",
    "out-of-band array.array (ext 33) and big-endian ndarray (ext 35) in untyped positions; ext 35 metadata keeps the dtype",
    wire="v2",
)
def _():
    return s.GetInternalStateReqOutput(
        internal_state={"ids": array("q", range(-4, 8)), "be": np.arange(10, dtype=">f8").reshape(2, 5), "small": array("b", [1])}
    )


@case(
    "y_v2_message_without_large_buffers",
    "a v2 message with no buffer over the threshold is one frame, byte-identical to v1: a v2 decoder reads v1",
    wire="v2",
)
def _():
    return generate_request()
