"""TesteeCodec against real programs: the reference testee, the broken one, and tiny fakes.

Starting the reference testee costs an interpreter and a torch import (a few
seconds), so each reference configuration is started once per module and the
broken testee is only made to load the reference codec where recovery is the
point. The fakes are a few lines of Python that import nothing heavy.
"""

from __future__ import annotations

import gc
import os
import pickle
import shlex
import sys
import threading
import time
from pathlib import Path

import msgspec
import pytest

from conformance import plugin
from conformance.equivalence import compare
from conformance.testee.broken_testee import MARKER
from conformance.testee.client import (
    STDERR_QUOTE_CHARS,
    TesteeCodec,
    TesteeCrashed,
    TesteeDecodeError,
    TesteeError,
    TesteeProtocolError,
    TesteeTimeout,
    TesteeUnsupported,
)
from reference_codec import EncodeError, ReferenceCodec, samples
from reference_codec.schema import MESSAGE_TYPES

ROOT = str(Path(__file__).resolve().parents[3])
REFERENCE = [sys.executable, "-m", "conformance.testee.reference_testee"]
BROKEN = [sys.executable, "-m", "conformance.testee.broken_testee"]


def make_testee(argv, **kwargs) -> TesteeCodec:
    kwargs.setdefault("cwd", ROOT)
    return TesteeCodec(argv, **kwargs)


def pickled(msg):
    """What pickle decodes: the expected side of the equivalence contract."""
    return pickle.loads(pickle.dumps(msg, protocol=5))


def assert_equivalent(expected, actual):
    difference = compare(expected, actual)
    assert difference is None, str(difference)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture(scope="module")
def loaded():
    """The reference testee as the suite loads it: through ``plugin.load_testee``."""
    old = os.getcwd()
    os.chdir(ROOT)
    try:
        under_test = plugin.load_testee(" ".join(shlex.quote(a) for a in REFERENCE))
    finally:
        os.chdir(old)
    yield under_test
    under_test.impl.close()


@pytest.fixture(scope="module")
def reference(loaded):
    return loaded.impl


@pytest.fixture(scope="module")
def reference_v2():
    with make_testee(REFERENCE + ["--out-of-band-threshold", "256"]) as codec:
        yield codec


# --- the reference testee -------------------------------------------------------------


def test_load_testee_reads_capabilities_from_hello(loaded):
    caps = loaded.caps
    assert (caps.name, caps.wire_compatible, caps.out_of_band) == ("reference-testee", True, False)
    assert caps.decode_error is TesteeDecodeError
    assert loaded.name == "reference-testee"
    assert "cpu" in caps.devices


def test_batch_round_trips_and_speaks_reference_bytes(reference):
    msg = samples.batch_token_id_output(4)
    frames = reference.encode(msg)
    assert frames == ReferenceCodec().encode(msg)  # wire v1: the reference's own bytes
    assert_equivalent(pickled(msg), reference.decode(frames))
    assert_equivalent(pickled(msg), reference.roundtrip(msg))


@pytest.mark.parametrize("cls", sorted(MESSAGE_TYPES.values(), key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_every_message_type_round_trips(reference, cls):
    msg = samples.minimal(cls)
    assert_equivalent(pickled(msg), reference.decode(reference.encode(msg)))


def test_decodes_frames_written_by_the_reference(reference):
    msg = samples.batch_token_id_output(3, seed=1)
    assert_equivalent(pickled(msg), reference.decode(ReferenceCodec().encode(msg)))
    assert_equivalent(pickled(msg), reference.decode(ReferenceCodec(out_of_band_threshold=256).encode(msg)))


@pytest.mark.parametrize(
    "frames, match",
    [
        (b"junk", r"Expected `array`, got `int`"),
        ([b"\x93"], "Input data was truncated"),
        ([], "no frames"),
        ([samples.body_with_feature(samples.tensor_ext(None, b"", code=4))], "SGLang shared-memory handle"),
        ([samples.body_with_feature(samples.tensor_ext(["x"], b"", code=2))], r"torch\.Tensor"),
    ],
    ids=["junk", "truncated", "no-frames", "process-local-ext", "bad-tensor-metadata"],
)
def test_junk_is_a_clean_decode_error(reference, frames, match):
    pid = reference.pid
    with pytest.raises(TesteeDecodeError, match=match) as info:
        reference.decode(frames)
    error = info.value
    assert isinstance(error, msgspec.DecodeError) and not isinstance(error, TesteeError)
    assert str(error).startswith("reference-testee: ") and error.testee_message in str(error)
    assert reference.pid == pid  # the testee survived it


@pytest.mark.parametrize("frames", [[1], "text", None, [b"ok", object()]], ids=["int", "str", "none", "object"])
def test_frames_that_are_not_bytes_are_refused_locally(reference, frames):
    with pytest.raises(TesteeDecodeError, match="not bytes-like|list of bytes-like"):
        reference.decode(frames)


def test_a_message_the_reference_cannot_encode_never_reaches_the_testee(reference):
    with pytest.raises(EncodeError, match="not a message of the reference schema"):
        reference.encode(object())


def test_unknown_op_is_answered_unsupported(reference):
    response = reference.request("frobnicate")
    assert response["ok"] is False and response["error_kind"] == "unsupported"


def test_requests_from_many_threads_are_serialised(reference):
    msgs = [samples.batch_token_id_output(2, seed=i) for i in range(4)]
    errors = []

    def work(msg):
        try:
            for _ in range(5):
                assert compare(pickled(msg), reference.decode(reference.encode(msg))) is None
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(m,)) for m in msgs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []


def test_v2_flag_gives_out_of_band_frames(reference_v2):
    assert (reference_v2.name, reference_v2.out_of_band) == ("reference-testee-v2", True)
    msg = samples.batch_token_id_output(4)
    frames = reference_v2.encode(msg)
    assert len(frames) == 1 + len(msg.routed_experts)  # one frame per tensor of 256 bytes or more
    assert_equivalent(pickled(msg), reference_v2.decode(frames))
    assert_equivalent(pickled(msg), ReferenceCodec(out_of_band_threshold=256).decode(frames))
    assert_equivalent(pickled(msg), reference_v2.decode(ReferenceCodec().encode(msg)))  # reads v1 too
    with pytest.raises(TesteeDecodeError, match="not referenced by the message body"):
        reference_v2.decode(frames + [b"extra"])


# --- misbehaving testees ----------------------------------------------------------------


def test_crash_is_reported_and_the_next_request_restarts_the_testee():
    with make_testee(BROKEN + ["--crash-on-decode", "--only-marker"]) as codec:
        codec.start()
        first = codec.pid
        with pytest.raises(TesteeCrashed) as info:
            codec.decode([MARKER])
        crash = info.value
        assert crash.returncode == 70 and crash.kind == "crash"
        assert "crashing on purpose" in crash.stderr_tail
        assert "exited with status 70 during decode request 2" in str(crash)
        assert "crashing on purpose in request 2" in str(crash)  # stderr is quoted in the report
        assert not isinstance(crash, msgspec.DecodeError)
        assert codec.pid is None and gone(first)

        msg = samples.flush_cache()
        assert_equivalent(pickled(msg), codec.decode(codec.encode(msg)))
        assert codec.restarts == 1 and codec.pid not in (None, first)


def test_hang_times_out_within_the_timeout_and_the_testee_is_killed():
    with make_testee(BROKEN + ["--hang-on-decode", "--only-marker"], timeout=2.0) as codec:
        codec.start()
        first = codec.pid
        started = time.monotonic()
        with pytest.raises(TesteeTimeout) as info:
            codec.decode([MARKER])
        elapsed = time.monotonic() - started
        assert 2.0 <= elapsed < 5.0
        assert info.value.timeout == 2.0 and info.value.kind == "timeout"
        assert "did not answer decode request 2 within 2 s" in str(info.value)
        assert "hanging on purpose" in info.value.stderr_tail
        assert gone(first)
        assert codec.request("hello")["ok"] is True  # a fresh testee answers
        assert codec.restarts == 1


def test_garbage_response_is_a_protocol_error_and_the_testee_is_replaced():
    with make_testee(BROKEN + ["--garbage-response", "--only-marker"]) as codec:
        codec.start()
        first = codec.pid
        with pytest.raises(TesteeProtocolError, match=r"broke the framing in answer to decode request 2: .*not valid msgpack"):
            codec.decode([MARKER])
        assert gone(first)
        assert codec.request("hello")["ok"] is True
        assert codec.restarts == 1


FAKE = r"""
import sys
from conformance.testee.protocol import read_message, write_message
mode = sys.argv[1]
out = sys.stdout.buffer
while True:
    req = read_message(sys.stdin.buffer)
    if req is None:
        break
    rid = req["id"]
    if req["op"] == "hello":
        hello = {"id": rid, "ok": True, "name": "fake", "wire_compatible": False, "out_of_band": False, "protocol": 1}
        if mode == "protocol-2":
            hello["protocol"] = 2
        elif mode == "nameless":
            del hello["name"]
        write_message(out, hello)
    elif mode == "wrong-id":
        write_message(out, {"id": rid + 1, "ok": True, "frames": [b"\x90"]})
    elif mode == "no-ok":
        write_message(out, {"id": rid, "frames": [b"\x90"]})
    elif mode == "unknown-kind":
        write_message(out, {"id": rid, "ok": False, "error_kind": "oops", "message": "?"})
    elif mode == "str-frames":
        write_message(out, {"id": rid, "ok": True, "frames": ["\x90"]})
    elif mode == "two-frames":
        write_message(out, {"id": rid, "ok": True, "frames": [b"\x90", b"\x90"]})
    elif mode == "not-canonical":
        write_message(out, {"id": rid, "ok": True, "frames": [b"\xc1"]})
    elif mode == "internal":
        write_message(out, {"id": rid, "ok": False, "error_kind": "internal_error", "message": "panicked at src/lib.rs"})
    elif mode == "unsupported":
        write_message(out, {"id": rid, "ok": False, "error_kind": "unsupported", "message": "no such type"})
    elif mode == "noisy-crash":
        sys.stderr.write("".join(f"line {i}\n" for i in range(100_000)))
        sys.exit(101)
"""


def fake(mode: str, **kwargs) -> TesteeCodec:
    return make_testee([sys.executable, "-c", FAKE, mode], **kwargs)


@pytest.mark.parametrize(
    "mode, match",
    [
        ("wrong-id", r"with id 3 \(expected 2\)"),
        ("no-ok", "with no bool 'ok'"),
        ("unknown-kind", r"with error_kind 'oops' \(expected one of decode_error"),
        ("str-frames", "'frames' that is not a non-empty array of bin"),
        ("two-frames", r"2 frames \(canonical wire v1 is one frame\)"),
        ("not-canonical", "answered decode ok, but its frame is not valid reference wire v1"),
    ],
)
def test_malformed_answers_are_protocol_errors_not_decode_errors(mode, match):
    with fake(mode) as codec:
        with pytest.raises(TesteeProtocolError, match=match) as info:
            codec.decode([b"\x90"])
        assert not isinstance(info.value, msgspec.DecodeError)


def test_reported_errors_keep_their_kind_and_message():
    with fake("internal") as codec:
        with pytest.raises(TesteeError, match=r"fake failed decode \(internal_error\): panicked at src/lib\.rs") as info:
            codec.decode([b"\x90"])
        assert info.value.kind == "internal_error" and info.value.testee_message == "panicked at src/lib.rs"
        assert codec.pid is not None  # a reported error keeps the testee
    with fake("unsupported") as codec:
        with pytest.raises(TesteeUnsupported, match="no such type"):
            codec.encode(samples.flush_cache())


@pytest.mark.parametrize(
    "mode, match",
    [("protocol-2", "declares protocol 2; this suite speaks 1"), ("nameless", "needs 'name' as a str")],
)
def test_bad_hello_is_refused(mode, match):
    codec = fake(mode)
    with pytest.raises(TesteeProtocolError, match=match):
        codec.name
    assert codec.pid is None


def test_stderr_in_a_crash_report_is_bounded_to_its_end():
    with fake("noisy-crash") as codec:
        with pytest.raises(TesteeCrashed) as info:
            codec.decode([b"\x90"])
    crash = info.value
    assert crash.returncode == 101
    assert len(crash.stderr_tail) <= STDERR_QUOTE_CHARS and crash.stderr_tail.endswith("line 99999\n")


def test_program_that_cannot_start():
    codec = make_testee([os.path.join(ROOT, "no-such-testee")])
    with pytest.raises(TesteeError, match="cannot start testee") as info:
        codec.start()
    assert info.value.kind == "start"


def test_program_that_exits_at_once_is_a_crash_with_its_stderr():
    codec = make_testee([sys.executable, "-c", "import sys; sys.stderr.write('no config found\\n'); sys.exit(3)"])
    with pytest.raises(TesteeCrashed, match=r"(?s)exited with status 3 during hello request 1 .*no config found"):
        codec.start()


def test_program_that_prints_text_is_told_so():
    codec = make_testee([sys.executable, "-c", "import time; print('starting up', flush=True); time.sleep(30)"], timeout=5)
    with pytest.raises(TesteeProtocolError, match=r"ASCII text: is something printing to the protocol stream"):
        codec.start()
    assert codec.pid is None


def test_close_context_manager_and_del_stop_the_program():
    with make_testee(BROKEN + ["--hang-on-decode"]) as codec:
        codec.start()
        pid = codec.pid
    assert codec.pid is None and gone(pid)

    codec.start()  # usable again after close
    pid = codec.pid
    assert codec.restarts == 1
    del codec
    gc.collect()
    assert gone(pid)


def test_arguments_are_validated():
    with pytest.raises(TypeError, match="argv must be a non-empty list of str"):
        TesteeCodec("python -m testee")
    with pytest.raises(TypeError, match="argv must be a non-empty list of str"):
        TesteeCodec([])
    with pytest.raises(ValueError, match="timeout must be a number of seconds > 0, got 0"):
        TesteeCodec(REFERENCE, timeout=0)
    with pytest.raises(ValueError, match="max_size must be an int"):
        TesteeCodec(REFERENCE, max_message_bytes=0)
