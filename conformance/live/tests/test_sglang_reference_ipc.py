"""The reference codec as SGLang's processes use it (``reference_ipc``), and the frame recorder; SGLang needed (``tox -e sglang-live``)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("SGLANG_USE_PICKLE_IPC", "0")
io = pytest.importorskip("sglang.srt.managers.io_struct", reason="SGLang is not installed (tox -e sglang-live)")

from conformance.benchmarks import corpus  # noqa: E402
from conformance.engines.sglang import frame_recorder, reference_ipc  # noqa: E402
from conformance.engines.sglang.adapter import ReferenceAdapter  # noqa: E402

FAMILIES = ["control-AbortReq", "TokenizedGenerateReqInput-text", "BatchTokenIDOutput-1", "BatchTokenIDOutput-32", "BatchEmbeddingOutput-32"] + sorted(
    f for f in corpus.FAMILIES if f.startswith("live-")
)


@pytest.fixture(scope="module")
def adapter():
    return ReferenceAdapter()


@pytest.mark.parametrize("family", FAMILIES)
def test_reference_in_sglang_writes_sglangs_bytes_and_reads_them_back_alike(adapter, family):
    encode, decode = reference_ipc.codec_functions()
    msg = adapter.to_sglang(corpus.build(family))
    ours = encode(msg)
    assert bytes(ours) == io.msgpack_encode(msg)
    assert io.msgpack_encode(decode(ours)) == io.msgpack_encode(io.msgpack_decode(ours))


def test_live_families_are_recorded_in_the_corpus():
    assert "live-BatchTokenIDOutput-1" in corpus.FAMILIES
    assert "live-TokenizedGenerateReqInput" in corpus.FAMILIES


def test_reference_ipc_refuses_to_install_with_pickle_ipc_on(monkeypatch):
    monkeypatch.setattr(io, "_USE_PICKLE_IPC", True)
    with pytest.raises(reference_ipc.ReferenceIpcError, match="SGLANG_USE_PICKLE_IPC=0"):
        reference_ipc.install()


def test_frame_recorder_reads_back_what_it_recorded_in_order(tmp_path, monkeypatch, adapter):
    monkeypatch.setattr(io, "msgpack_encode", io.msgpack_encode)  # restored after the test
    frame_recorder.install(str(tmp_path))
    messages = [adapter.to_sglang(corpus.build(f)) for f in ("control-AbortReq", "BatchTokenIDOutput-1")]
    frames = [bytes(io.msgpack_encode(m)) for m in messages]
    assert list(frame_recorder.read_records(str(tmp_path))) == [(type(m).__name__, f) for m, f in zip(messages, frames)]


def test_frame_recorder_reports_a_truncated_file(tmp_path):
    (tmp_path / "frames-1.bin").write_bytes(b"\x00\x00\x00\x05Abo")
    with pytest.raises(ValueError, match="truncated"):
        list(frame_recorder.read_records(str(tmp_path)))
