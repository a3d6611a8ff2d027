"""The pickle baseline restores objects exactly, in one frame or with out-of-band buffers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reference_codec import DecodeError, PickleCodec
from reference_codec import schema as s
from reference_codec.samples import batch_token_id_output, minimal


def test_highest_protocol_single_frame_restores_the_message():
    msg = batch_token_id_output(3)
    frames = PickleCodec().encode(msg)
    assert len(frames) == 1 and frames[0][1] == 5  # protocol byte
    got = PickleCodec().decode(frames)
    assert got.decode_ids == msg.decode_ids and all(torch.equal(a, b) for a, b in zip(got.routed_experts, msg.routed_experts))


def test_protocol_5_sends_ndarray_buffers_out_of_band_without_copy():
    values = np.arange(4096, dtype=np.float32)
    msg = minimal(s.TokenizedEmbeddingReqInput)
    msg.mm_inputs = s.MultimodalProcessorOutput(mm_items=[s.MultimodalDataItem(modality=s.Modality.IMAGE, feature=values)])
    codec = PickleCodec(out_of_band=True)
    frames = codec.encode(msg)
    assert len(frames) == 2 and np.shares_memory(np.asarray(frames[1]), values)
    got = codec.decode(frames)
    assert np.array_equal(got.mm_inputs.mm_items[0].feature, values)


def test_garbage_is_reported_as_decode_error():
    with pytest.raises(DecodeError, match="unpickling failed"):
        PickleCodec().decode([b"\x80\x05garbage"])
    with pytest.raises(DecodeError, match="expected 1 frame"):
        PickleCodec().decode([b"a", b"b"])


def test_the_declared_byte_order_gap_is_what_pickle_does():
    """numpy 2.x unpickles a non-contiguous big-endian array as little-endian; the codec says so, measured."""
    import numpy as np

    array = np.arange(8, dtype=">f8")[::2]
    back = PickleCodec().decode(PickleCodec().encode(array))
    assert (back.dtype != array.dtype) == PickleCodec().native_byte_order_only
    assert back.tolist() == array.tolist()
