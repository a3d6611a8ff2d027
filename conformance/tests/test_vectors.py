"""Tests of the golden vectors themselves (:mod:`conformance.vectors`) against the reference codec.

The checked-in files must be exactly what ``python -m conformance.vectors
generate`` writes; every ``y_`` vector decodes with the reference to its
expected value, every ``n_`` vector is refused with a ``DecodeError`` whose
reason holds ``reject_reason``, and ``i_`` vectors raise nothing but
``DecodeError``. The suite test that runs them against any codec
(``conformance/suite/test_golden_vectors.py``) is exercised here too, with a
correct and with deliberately wrong codecs.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter

import msgspec
import pytest

from conformance import vectors
from conformance.equivalence import compare
from conformance.neutral import from_neutral, to_neutral
from conformance.plugin import Capabilities, CodecUnderTest, load_codec
from conformance.properties import PropertyFailure
from conformance.suite import test_golden_vectors as suite
from conformance.vectors import V2_THRESHOLD, VECTORS_DIR, load_vectors
from conformance.vectors.__main__ import main
from reference_codec import DecodeError, ReferenceCodec
from reference_codec import schema as s

VECTORS = load_vectors()
BY_KIND = {kind: [v for v in VECTORS if v.kind == kind] for kind in "yni"}


def ids(vs):
    return [v.file for v in vs]


def reference(vector) -> ReferenceCodec:
    return ReferenceCodec(out_of_band_threshold=V2_THRESHOLD) if vector.wire == "v2" else ReferenceCodec()


# --- the files are current and well-formed ---------------------------------------------------


def test_check_command_passes_on_the_checked_in_files(capsys):
    assert main(["check"]) == 0, capsys.readouterr().out
    assert "up to date" in capsys.readouterr().out


def test_check_reports_stale_missing_and_extra_files(tmp_path, capsys):
    target = tmp_path / "vectors"
    for version in vectors.WIRE_VERSIONS:
        shutil.copytree(os.path.join(VECTORS_DIR, version), target / version)
    edited = target / "v1" / "y_flush_cache_req_input.json"
    edited.write_text(edited.read_text().replace("flush-1", "flush-9"))
    (target / "v1" / "n_truncated_body.json").unlink()
    (target / "v2" / "y_v2_hand_written.json").write_text("{}\n")
    assert main(["check", "--dir", str(target)]) == 1
    out = capsys.readouterr().out
    assert "v1/y_flush_cache_req_input.json: differs" in out
    assert "v1/n_truncated_body.json: missing" in out
    assert "v2/y_v2_hand_written.json: no case generates it" in out
    assert "3 vector file(s) stale: run `python -m conformance.vectors generate`" in out


def test_generate_is_deterministic_and_restores_a_stale_directory(tmp_path, capsys):
    target = tmp_path / "vectors"
    assert main(["generate", "--dir", str(target)]) == 0
    (target / "v2" / "stray.json").write_text("{}\n")
    assert main(["generate", "--dir", str(target)]) == 0
    out = capsys.readouterr().out
    assert "removed v2/stray.json" in out and "0 written" in out
    for rel in (v.file for v in VECTORS):
        with open(os.path.join(VECTORS_DIR, rel), "rb") as a, open(target / rel, "rb") as b:
            assert a.read() == b.read(), rel


def test_vector_directories_hold_only_vector_files():
    def is_code(entry):
        return entry.startswith("__") or entry.endswith(".py") or os.path.isfile(os.path.join(VECTORS_DIR, entry, "__init__.py"))

    assert sorted(e for e in os.listdir(VECTORS_DIR) if not is_code(e)) == ["v1", "v2"]
    for version in vectors.WIRE_VERSIONS:
        for name in os.listdir(os.path.join(VECTORS_DIR, version)):
            assert name.endswith(".json") and name[:2] in ("y_", "n_", "i_"), f"{version}/{name}"


def test_every_case_has_a_file_and_names_are_unique():
    assert sorted(c.file for c in vectors.CASES) == sorted(v.file for v in VECTORS)
    names = Counter(v.name for v in VECTORS)
    assert [n for n, count in names.items() if count > 1] == []


def test_enough_vectors_of_every_kind_and_wire_version():
    counts = Counter((v.wire, v.kind) for v in VECTORS)
    assert len(VECTORS) >= 40
    for wire in vectors.WIRE_VERSIONS:
        for kind in "yn":
            assert counts[wire, kind] >= 3, (wire, kind, counts)
    assert counts["v1", "i"] >= 3
    assert len({v.expected["$struct"]["type"] for v in BY_KIND["y"]}) >= 12, "y_ vectors should cover a dozen message types"


@pytest.mark.parametrize("vector", VECTORS, ids=ids(VECTORS))
def test_vector_file_is_well_formed(vector):
    path = os.path.join(VECTORS_DIR, vector.file)
    with open(path, "rb") as fh:
        raw = fh.read()
    assert raw.isascii() and raw.endswith(b"}\n") and b"\r" not in raw

    def no_constants(name):
        raise AssertionError(f"{vector.file}: JSON constant {name} (NaN/Infinity are not JSON)")

    data = json.loads(raw, parse_constant=no_constants, parse_float=lambda t: no_constants(t))
    assert list(data) == list(vectors.FIELDS)
    assert data["wire"] == vector.file.split("/")[0] and data["name"] + ".json" == vector.filename
    assert 10 <= len(vector.description) <= 140 and "\n" not in vector.description
    if vector.wire == "v1":
        assert len(vector.frames) <= 1
    if vector.kind == "n":
        assert isinstance(vector.reject_reason, str) and vector.reject_reason and vector.expected is None
    else:
        assert vector.reject_reason is None
    if vector.expected is not None:
        # canonical: the form in the file is exactly to_neutral of what it stands for
        assert to_neutral(from_neutral(vector.expected)) == vector.expected


def test_v2_vectors_exercise_out_of_band_frames():
    multi = [v.name for v in BY_KIND["y"] if v.wire == "v2" and len(v.frames) > 1]
    assert len(multi) >= 3, multi
    single = [v for v in BY_KIND["y"] if v.wire == "v2" and len(v.frames) == 1]
    assert single, "a v2 vector with no out-of-band buffer shows v2 reads v1"


def test_load_vectors_names_a_malformed_file(tmp_path):
    (tmp_path / "v1").mkdir()
    good = json.loads(open(os.path.join(VECTORS_DIR, "v1", "y_flush_cache_req_input.json")).read())
    for name, mutate, message in [
        ("y_a", lambda d: d.update(name="y_b"), "name must be the file name"),
        ("y_a", lambda d: d.update(wire="v2"), "differs from its directory"),
        ("y_a", lambda d: d.update(expected=None), "needs an expected value"),
        ("n_a", lambda d: d.update(reject_reason=None), "reject_reason must be a string"),
        ("y_a", lambda d: d.update(frames=["ZZ"]), "lowercase hex"),
        ("y_a", lambda d: d.pop("description"), "keys must be exactly"),
    ]:
        data = dict(good, name=name)
        mutate(data)
        path = tmp_path / "v1" / f"{name}.json"
        path.write_text(json.dumps(data))
        with pytest.raises(ValueError, match=message):
            load_vectors(str(tmp_path))
        path.unlink()


# --- the reference codec agrees with every vector ----------------------------------------------


@pytest.mark.parametrize("vector", BY_KIND["y"], ids=ids(BY_KIND["y"]))
def test_y_vector_decodes_to_its_expected_value(vector):
    decoded = reference(vector).decode(list(vector.frames))
    diff = compare(from_neutral(vector.expected), decoded)
    assert diff is None, f"{vector.file}: {diff}"


@pytest.mark.parametrize("vector", [v for v in BY_KIND["y"] if v.wire == "v1"], ids=ids([v for v in BY_KIND["y"] if v.wire == "v1"]))
def test_y_vector_built_from_a_message_is_what_the_reference_writes(vector):
    """Where the frames came from encoding, re-encoding the expected value writes the same bytes."""
    case = next(c for c in vectors.CASES if c.name == vector.name)
    if not isinstance(case.build(), msgspec.Struct):
        pytest.skip("hand-built frames (old/new schema, non-minimal encodings)")
    assert [bytes(f) for f in ReferenceCodec().encode(from_neutral(vector.expected))] == vector.frames


@pytest.mark.parametrize("vector", BY_KIND["n"], ids=ids(BY_KIND["n"]))
def test_n_vector_is_rejected_with_its_reason(vector):
    with pytest.raises(DecodeError) as info:
        reference(vector).decode(list(vector.frames))
    assert vector.reject_reason in info.value.reason, f"{vector.file}: reason was {info.value.reason!r}"


@pytest.mark.parametrize("vector", BY_KIND["i"], ids=ids(BY_KIND["i"]))
def test_i_vector_raises_nothing_but_decode_error(vector):
    try:
        decoded = reference(vector).decode(list(vector.frames))
    except DecodeError:
        return
    if vector.expected is not None:
        diff = compare(from_neutral(vector.expected), decoded)
        assert diff is None, f"{vector.file}: {diff}"


# --- the suite test, with a good codec and with broken ones -----------------------------------


def _vector(name):
    return next(v for v in VECTORS if v.name == name)


def _wrapped(decode) -> CodecUnderTest:
    """A codec under test whose decode is ``decode``, declaring wire compatibility and out-of-band support."""

    class Wrapped:
        def encode(self, msg):  # pragma: no cover - the golden test only decodes
            raise NotImplementedError

    impl = Wrapped()
    impl.decode = decode
    caps = Capabilities(name="wrapped", wire_compatible=True, decode_error=DecodeError, out_of_band=True)
    return CodecUnderTest(impl, caps)


@pytest.mark.parametrize("vector", VECTORS, ids=ids(VECTORS))
def test_suite_passes_every_vector_for_the_reference_v2(vector):
    suite.test_golden_vector(load_codec("reference-v2"), vector)


def test_suite_skips_without_wire_compatibility_and_v2_without_out_of_band():
    with pytest.raises(pytest.skip.Exception, match="wire compatibility"):
        suite.test_golden_vector(load_codec("pickle"), _vector("y_flush_cache_req_input"))
    with pytest.raises(pytest.skip.Exception, match="out-of-band"):
        suite.test_golden_vector(load_codec("reference"), _vector("y_v2_out_of_band_tensor"))


def test_suite_names_the_codec_vector_and_every_differing_path():
    codec = _wrapped(lambda frames: s.FlushCacheReqInput(rid="other", timeout_s=2.5))
    with pytest.raises(PropertyFailure, match=r"\[wrapped\] v1/y_flush_cache_req_input\.json: decodes differently .* \$\.rid") as caught:
        suite.test_golden_vector(codec, _vector("y_flush_cache_req_input"))
    assert "differences: 2 distinct" in str(caught.value) and "$.timeout_s: float bits differ" in str(caught.value)


def test_suite_fails_an_n_vector_that_decodes():
    codec = _wrapped(lambda frames: s.FlushCacheReqInput())
    with pytest.raises(PropertyFailure, match=r"n_unknown_tag\.json: must be rejected with DecodeError, but decoded to FlushCacheReqInput"):
        suite.test_golden_vector(codec, _vector("n_unknown_tag"))


@pytest.mark.parametrize("name", ["n_unknown_tag", "i_duplicate_map_keys", "y_abort_req"])
def test_suite_fails_any_vector_on_an_undeclared_exception(name):
    def crash(frames):
        raise KeyError("boom")

    with pytest.raises(PropertyFailure, match=r"raised KeyError: 'boom', which is not the declared decode error \(DecodeError\)"):
        suite.test_golden_vector(_wrapped(crash), _vector(name))


def test_suite_fails_a_refused_y_vector_but_not_a_refused_i_vector():
    def refuse(frames):
        raise DecodeError("nope", "$")

    with pytest.raises(PropertyFailure, match=r"y_abort_req\.json: must decode, but raised DecodeError: nope"):
        suite.test_golden_vector(_wrapped(refuse), _vector("y_abort_req"))
    suite.test_golden_vector(_wrapped(refuse), _vector("i_duplicate_map_keys"))


def test_suite_checks_an_accepted_i_vector_against_its_expected_value():
    codec = _wrapped(lambda frames: s.FlushCacheReqInput(rid="a", timeout_s=1))  # int kept, not 1.0
    with pytest.raises(PropertyFailure, match=r"i_int_for_float_field\.json: .* type differs: int instead of float at \$\.timeout_s\n(?s:.*)\$\.timeout_s: type differs: int instead of float: got 1, expected 1\.0"):
        suite.test_golden_vector(codec, _vector("i_int_for_float_field"))
