"""Bad frames raise DecodeError naming the path and reason; nothing is allocated, lost or executed."""

from __future__ import annotations

import datetime
import pathlib
import pickle

import msgspec
import numpy as np
import pytest
import torch

from reference_codec import DecodeError, DecodeLimits, ReferenceCodec
from reference_codec import schema as s
from reference_codec.samples import batch_token_id_output, body_with_feature, minimal, tensor_ext

V1 = ReferenceCodec()
FEATURE = "$.mm_inputs.mm_items[0].feature"


def decode_error(frames, codec=V1) -> DecodeError:
    with pytest.raises(DecodeError) as info:
        codec.decode(frames)
    assert isinstance(info.value, msgspec.DecodeError)
    return info.value


@pytest.mark.parametrize(
    "metadata, raw, reason",
    [
        ([[2**40], "float32", "cpu"], b"", "declares more than"),
        ([[10**6, 10**6], "float32", "cpu"], b"\x00" * 4, "declares more than"),
        ([[1 << 20, 1 << 9], "float32", "cpu"], b"", "bytes, but the buffer carries 0"),
        ([[4], "float32", "cpu"], b"\x00" * 12, "= 16 bytes, but the buffer carries 12"),
        ([[2], "float128", "cpu"], b"\x00" * 32, "unknown torch dtype 'float128'"),
        ([[2], "__import__('os').system('true')", "cpu"], b"", "unknown torch dtype"),
        ([[2], "Tensor", "cpu"], b"", "unknown torch dtype 'Tensor'"),
        ([[1], "float32", "cuda:1; rm -rf /"], b"\x00" * 4, "invalid device"),
        ([[1], "float32", "meta"], b"\x00" * 4, "invalid device"),
        ([[-1], "float32", "cpu"], b"", "not a non-negative int"),
        ([[1.5], "float32", "cpu"], b"", "not a non-negative int"),
        ([[1], "int32", "cpu", True], b"\x00" * 4, "cannot require grad"),
        ([[1], "float32"], b"\x00" * 4, "tensor metadata must be"),
        ("not a list", b"", "tensor metadata must be"),
    ],
    ids=[
        "huge-shape-no-data",
        "huge-shape-4-bytes",
        "2GiB-shape-no-data",
        "length-mismatch",
        "unknown-dtype",
        "dtype-code-text",
        "dtype-attribute-name",
        "device-injection",
        "meta-device",
        "negative-dim",
        "float-dim",
        "int-requires-grad",
        "short-metadata",
        "metadata-not-array",
    ],
)
def test_hostile_tensor_metadata_is_refused_before_allocation(metadata, raw, reason):
    error = decode_error([body_with_feature(tensor_ext(metadata, raw))])
    assert reason in error.reason and error.path == FEATURE


def test_unavailable_device_is_refused_and_names_map_location():
    error = decode_error([body_with_feature(tensor_ext([[1], "float32", "cuda:7"], b"\x00" * 4))])
    if torch.cuda.device_count() > 7:
        pytest.skip("this machine has a cuda:7")
    assert "cuda:7" in error.reason and "map_location" in error.reason and error.path == FEATURE


@pytest.mark.parametrize(
    "code, metadata, raw, reason",
    [
        (3, [[2], "|O"], b"\x00" * 16, "holds Python objects"),
        (3, [[2], "<V0"], b"", "cannot be rebuilt"),
        (3, [[3], "<f8"], b"\x00" * 8, "= 24 bytes, but the buffer carries 8"),
        (3, [[2], "not a dtype"], b"", "malformed numpy dtype"),
        (3, [[1], [["a", "|O"]]], b"\x00" * 8, "holds Python objects"),
        (1, "z", b"\x00" * 8, "unknown array typecode"),
        (1, "q", b"\x00" * 7, "not a multiple of itemsize 8"),
    ],
    ids=["object-dtype", "zero-itemsize", "ndarray-length", "bad-dtype-text", "object-field", "bad-typecode", "ragged-array"],
)
def test_hostile_ndarray_and_array_metadata_is_refused(code, metadata, raw, reason):
    error = decode_error([body_with_feature(tensor_ext(metadata, raw, code=code))])
    assert reason in error.reason and error.path == FEATURE


@pytest.mark.parametrize(
    "payload, reason",
    [
        (b"\x00\x00", "shorter than its metadata length prefix"),
        (b"\x00\x00\x10\x00\x91", "runs past the end"),
        (b"\x00\x00\x00\x01\xc1", "torch.Tensor"),
    ],
    ids=["truncated-prefix", "lying-metadata-length", "invalid-metadata"],
)
def test_lying_buffer_lengths_are_refused(payload, reason):
    error = decode_error([body_with_feature(msgspec.msgpack.Ext(2, payload))])
    assert reason in str(error) and error.path == FEATURE


@pytest.mark.parametrize("code", [4, 5, 99, 0])
def test_unknown_and_process_local_ext_codes_are_refused(code):
    error = decode_error([body_with_feature(msgspec.msgpack.Ext(code, b"\x90"))])
    assert error.path == FEATURE
    assert ("process-local" in error.reason) if code in (4, 5) else ("unknown ext code" in error.reason)


def test_truncated_message_is_refused():
    body = V1.encode(batch_token_id_output(2))[0]
    for cut in (1, 7, len(body) // 2, len(body) - 1):
        decode_error([body[:cut]])


def test_random_bytes_and_wrong_frame_types_are_refused():
    decode_error([b"\xc1"])
    decode_error([b""])
    decode_error([])
    decode_error("not frames")
    decode_error([object()])


def test_unknown_tag_is_refused_with_its_name():
    error = decode_error([msgspec.msgpack.encode(["NoSuchMessage", None, None])])
    assert "NoSuchMessage" in str(error)


def test_wrong_field_type_names_the_field_not_its_position():
    body = msgspec.msgpack.encode(["FlushCacheReqInput", "a", None, "not a float"])
    error = decode_error([body])
    assert error.path == "$.timeout_s" and "Expected `float | null`" in error.reason


def test_deeply_nested_untyped_value_is_refused():
    deep = b"\x91" * 100_000 + b"\xc0"
    body = body_with_feature(msgspec.Raw(deep))
    error = decode_error([body])
    assert "nest" in str(error)


def test_nesting_over_the_configured_depth_is_refused():
    value = []
    for _ in range(20):
        value = [value]
    codec = ReferenceCodec(limits=DecodeLimits(max_depth=8))
    error = decode_error([body_with_feature(value)], codec)
    assert "deeper than 8" in error.reason and error.path.startswith(FEATURE)


def test_deeply_nested_tuples_are_refused_by_the_depth_limit():
    payload = msgspec.msgpack.encode([])
    for _ in range(100):
        payload = msgspec.msgpack.encode([msgspec.msgpack.Ext(64, payload)])
    error = decode_error([body_with_feature(msgspec.msgpack.Ext(64, payload))])
    assert "deeper than" in str(error)


def test_message_and_buffer_byte_limits_are_enforced():
    body = V1.encode(batch_token_id_output(2))[0]
    error = decode_error([body], ReferenceCodec(limits=DecodeLimits(max_message_bytes=len(body) - 1)))
    assert "exceeds the limit" in error.reason
    assert type(ReferenceCodec(limits=DecodeLimits(max_message_bytes=len(body))).decode([body])) is s.BatchTokenIDOutput
    error = decode_error(
        [body_with_feature(tensor_ext([[64], "float32", "cpu"], b"\x00" * 256))],
        ReferenceCodec(limits=DecodeLimits(max_buffer_bytes=255)),
    )
    assert "exceeds the limit of 255" in error.reason


_BAD_BODIES = {  # each under the 64 KiB pause threshold: as bytes, each takes the short path
    "truncated": msgspec.msgpack.encode(["FlushCacheReqInput", "a", None, 1.5])[:-3],
    "unknown-tag": msgspec.msgpack.encode(["NoSuchMessage", None, None]),
    "wrong-field-type": msgspec.msgpack.encode(["FlushCacheReqInput", "a", None, "not a float"]),
    "bad-buffer-ext": body_with_feature(msgspec.msgpack.Ext(2, b"\x00\x00")),
    "unknown-ext": body_with_feature(msgspec.msgpack.Ext(99, b"\x90")),
    "too-deep": body_with_feature(msgspec.Raw(b"\x91" * 30_000 + b"\xc0")),
}


@pytest.mark.parametrize("body", list(_BAD_BODIES.values()), ids=list(_BAD_BODIES))
def test_a_refusal_is_the_same_whichever_decode_path_reads_the_body(body):
    # a small bytes body takes decode's short path; a bytearray, and any body with the collector paused, the general one
    expected = decode_error([body])
    for frames, codec in (([bytearray(body)], V1), ([body], ReferenceCodec(pause_gc_bytes=0))):
        error = decode_error(frames, codec)
        assert (type(error), error.path, error.reason) == (type(expected), expected.path, expected.reason)


class _CreatesFile:
    def __init__(self, path: pathlib.Path):
        self.path = path

    def __reduce__(self):
        return (pathlib.Path.touch, (self.path,))


def test_pickled_payload_is_refused_and_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    msg = minimal(s.TokenizedGenerateReqInput)
    msg.time_stats = s.PickleWrapper(pickle.dumps(_CreatesFile(marker)))
    frames = V1.encode(msg)
    error = decode_error(frames)
    assert "pickled payload refused" in error.reason and error.path == "$.time_stats"
    assert not marker.exists()


def test_pickled_payload_in_a_nested_batch_item_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    item = minimal(s.TokenizedGenerateReqInput)
    item.time_stats = s.PickleWrapper(pickle.dumps(_CreatesFile(marker)))
    msg = s.BatchTokenizedGenerateReqInput(batch=[minimal(s.TokenizedGenerateReqInput), item])
    error = decode_error(V1.encode(msg))
    assert error.path == "$.batch[1].time_stats"
    assert not marker.exists()


def test_pickle_opt_in_unpickles_only_the_declared_opaque_fields(tmp_path):
    stats = {"created_time": 1.0}
    msg = batch_token_id_output(1)
    msg.customized_info = s.PickleWrapper(pickle.dumps({"k": [np.float32(1)]}))
    msg.time_stats = s.PickleWrapper(pickle.dumps(stats))
    got = ReferenceCodec(allow_pickle=True).decode(V1.encode(msg))
    assert got.time_stats == stats and type(got.customized_info["k"][0]) is np.float32
    # Anywhere else a PickleWrapper is just a type error, with or without the opt-in.
    body = msgspec.msgpack.encode(["FlushCacheReqInput", "a", None, s.PickleWrapper(pickle.dumps(1.0))])
    decode_error([body], ReferenceCodec(allow_pickle=True))


def test_pickle_bytes_in_a_bytes_field_stay_bytes(tmp_path):
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_CreatesFile(marker))
    msg = s.UpdateWeightsFromTensorReqInput(serialized_named_tensors=[payload])
    got = V1.decode(V1.encode(msg))
    assert got.serialized_named_tensors == [payload] and not marker.exists()


@pytest.mark.parametrize("index", [0, 2, 2**32 - 1])
def test_out_of_band_reference_to_a_missing_frame_is_refused(index):
    meta = msgspec.msgpack.encode([[1], "float32", "cpu"])
    ext = msgspec.msgpack.Ext(34, len(meta).to_bytes(4, "big") + meta + index.to_bytes(4, "big"))
    error = decode_error([body_with_feature(ext), b"\x00" * 4])
    assert "refers to frame" in error.reason and error.path == FEATURE


def test_out_of_band_frame_referenced_twice_or_never_is_refused():
    meta = msgspec.msgpack.encode([[1], "float32", "cpu"])
    ext = msgspec.msgpack.Ext(34, len(meta).to_bytes(4, "big") + meta + (1).to_bytes(4, "big"))
    error = decode_error([body_with_feature([ext, ext]), b"\x00" * 4])
    assert "referenced twice" in error.reason
    error = decode_error([body_with_feature(ext), b"\x00" * 4, b"junk"])
    assert "not referenced" in error.reason


def test_wrong_frame_count_for_a_v2_message_is_refused():
    codec = ReferenceCodec(out_of_band_threshold=0)
    frames = codec.encode(batch_token_id_output(2))
    decode_error(frames[:-1], codec)
    decode_error(frames + [b"extra"], codec)


def test_non_contiguous_frame_is_refused_not_crashed():
    body = V1.encode(s.FlushCacheReqInput(rid="a"))[0]
    strided = memoryview(bytearray(body) * 2)[::2]
    error = decode_error([strided])
    assert "not a contiguous byte buffer" in error.reason


def test_msgpack_timestamp_in_an_untyped_field_is_refused():
    body = body_with_feature(datetime.datetime(2026, 12, 2, tzinfo=datetime.timezone.utc))
    error = decode_error([body])
    assert "timestamp" in error.reason and error.path == FEATURE


@pytest.mark.parametrize(
    "value, where, reason",
    [
        ({"a": 1, (1, 2): "x"}, "", "map key of type tuple"),
        ([0, {"a": 1, (1, 2): "x"}], "[1]", "map key of type tuple"),
        ([0, "s", datetime.datetime(2026, 12, 2, tzinfo=datetime.timezone.utc)], "[2]", "timestamp"),
        ({"a": None, "t": datetime.datetime(2026, 12, 2, tzinfo=datetime.timezone.utc)}, ".t", "timestamp"),
    ],
    ids=["array-key", "array-key-in-a-list", "timestamp-among-leaves", "timestamp-in-a-map"],
)
def test_a_key_or_leaf_the_reference_never_writes_is_refused_among_plain_leaves(value, where, reason):
    """A container that looks plain but for one item is refused at that item, however many plain leaves surround it."""
    error = decode_error([body_with_feature(value)])
    assert reason in error.reason and error.path == FEATURE + where


def test_rejecting_many_bad_frames_inspects_the_schema_once(monkeypatch):
    """Naming the path of an error must not re-inspect the 100-message union per frame (it cost ~40 ms each)."""
    from msgspec import inspect as mi

    from reference_codec import type_tree

    type_tree._cached_type_info.cache_clear()
    calls = []
    real = mi.type_info
    monkeypatch.setattr(mi, "type_info", lambda t: calls.append(t) or real(t))
    codec = ReferenceCodec()
    for i in range(20):
        with pytest.raises(DecodeError):
            codec.decode([msgspec.msgpack.encode(["FlushCacheReqInput", f"r{i}", None, "not a float"])])
    assert len(calls) == 1


def test_pickle_opt_in_never_unpickles_a_wrapper_in_an_untyped_field(tmp_path):
    """Only time_stats and customized_info are opaque: a PickleWrapper-shaped value elsewhere stays data."""
    from conformance.fuzz.pickle_probe import PickleProbe

    probe = PickleProbe(str(tmp_path))
    for payload in probe.payloads():
        body = msgspec.msgpack.encode(["GetInternalStateReqOutput", None, None, {"value": ["PickleWrapper", payload]}])
        got = ReferenceCodec(allow_pickle=True).decode([body])
        assert got.internal_state == {"value": ["PickleWrapper", payload]}
        assert not probe.executed()
    # the opt-in does run it in a declared opaque field: the probe is live
    msg = batch_token_id_output(1)
    msg.time_stats = s.PickleWrapper(probe.payloads()[0])
    ReferenceCodec(allow_pickle=True).decode(V1.encode(msg))
    assert probe.executed()
