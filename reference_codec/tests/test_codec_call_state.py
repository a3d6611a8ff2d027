"""A codec keeps per-call state for its msgspec hooks: one instance serves many threads, and a
failed call leaves nothing behind that changes the next one."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from reference_codec import DecodeError, EncodeError, ReferenceCodec
from reference_codec import schema as s
from reference_codec.samples import batch_token_id_output, minimal
from reference_codec.splice import SPLICE_MIN_BYTES


def _message(i: int) -> s.BatchEmbeddingOutput:
    """A message whose tensors (several out-of-band frames in wire v2) carry ``i`` in every element."""
    msg = minimal(s.BatchEmbeddingOutput)
    msg.embeddings = [[float(i)]]
    msg.pooled_hidden_states = [
        torch.full((64 + i % 7,), float(i)),
        torch.full((3, 5), float(-i)),
        torch.full((32,), i, dtype=torch.int64),
    ]
    return msg


def _check(decoded: s.BatchEmbeddingOutput, i: int) -> None:
    assert decoded.embeddings == [[float(i)]]
    first, second, third = decoded.pooled_hidden_states
    assert torch.equal(first, torch.full((64 + i % 7,), float(i)))
    assert torch.equal(second, torch.full((3, 5), float(-i)))
    assert torch.equal(third, torch.full((32,), i, dtype=torch.int64))


def _run_in_threads(worker, count: int) -> None:
    """``worker(t)`` for t in range(count), each in its own thread, started together; the first failure is raised here."""
    errors = []
    start = threading.Barrier(count)

    def run(t: int) -> None:
        try:
            start.wait()
            worker(t)
        except BaseException as exc:  # re-raised below: an assertion in a thread does not fail the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[0]


@pytest.mark.parametrize("codec", [ReferenceCodec(), ReferenceCodec(out_of_band_threshold=0)], ids=["v1", "v2"])
def test_one_codec_shared_by_threads_never_mixes_their_frames(codec):
    def worker(t: int) -> None:
        for n in range(300):
            i = t * 1000 + n
            frames = codec.encode(_message(i))
            if codec.out_of_band:
                assert len(frames) == 4
            _check(codec.decode(frames), i)
            if n % 50 == 0:  # failing calls interleaved with good ones on other threads
                with pytest.raises(DecodeError):
                    codec.decode([frames[0]] if codec.out_of_band else [frames[0][:-3]])

    _run_in_threads(worker, 8)


def test_threads_that_splice_and_threads_that_do_not_each_get_their_own_frames():
    # one thread's held-back buffer must neither be left out of its own frame nor land in another's,
    # from the codec's first call on (the splicer is read only once some thread has held one back)
    codec = ReferenceCodec()
    big = SPLICE_MIN_BYTES // 8 + 1

    def worker(t: int) -> None:
        for n in range(60):
            i = t * 1000 + n
            msg = minimal(s.BatchEmbeddingOutput)
            msg.rids, msg.embeddings = [str(i)], [[float(i)]]
            spliced = t % 2 == 0 and n % 3 == 0
            msg.pooled_hidden_states = [torch.full((big if spliced else 8,), i, dtype=torch.int64)]
            (frame,) = codec.encode(msg)
            assert isinstance(frame, bytes) is not spliced
            decoded = codec.decode([frame])
            assert decoded.rids == [str(i)]
            assert torch.equal(decoded.pooled_hidden_states[0], msg.pooled_hidden_states[0])

    _run_in_threads(worker, 6)


def test_a_refused_value_does_not_misplace_the_next_encode_error():
    codec = ReferenceCodec()
    first = minimal(s.TokenizedGenerateReqInput)
    first.sampling_params = s.SamplingParams(temperature=np.float32(0.7))  # refused by the hook
    with pytest.raises(EncodeError) as info:
        codec.encode(first)
    assert info.value.path == "$.sampling_params.temperature"
    second = batch_token_id_output(2)
    second.prompt_tokens = [1, 2**64]  # refused by msgspec itself, not the hook
    with pytest.raises(EncodeError) as info:
        codec.encode(second)
    assert info.value.path == "$.prompt_tokens[1]" and "64-bit" in info.value.reason


def test_a_rejected_frame_leaves_no_state_that_changes_the_next_decode():
    codec = ReferenceCodec(out_of_band_threshold=0)
    frames = codec.encode(_message(5))
    with pytest.raises(DecodeError, match="not referenced"):
        codec.decode([*frames, b"extra"])
    with pytest.raises(DecodeError, match="referenced twice|refers to frame"):
        codec.decode([frames[0], frames[1]])
    _check(codec.decode(frames), 5)
    _check(ReferenceCodec().decode(ReferenceCodec().encode(_message(6))), 6)
    # the per-call state holds no frame once a call has returned, so no buffer is kept alive
    assert codec._state.views is None and codec._state.used is None and codec._state.frames is None
