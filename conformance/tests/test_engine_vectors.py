"""Engine-neutral golden vectors (:mod:`conformance.vectors.engine_format`, ``engine_build``, ``engine_testee``), without the engine installed.

vLLM's vectors are files: these tests read them, send them to a testee
(:mod:`conformance.tests.kv_events_mirror`, msgspec structs mirroring vLLM
0.34.0's KV events, and its broken variants) and check that the verdict
catches each broken decoder, naming the vector and the differing path.
Regenerating the files needs vLLM (``python -m conformance.vectors check``
does it where vLLM 0.34.0 is importable, and says why not elsewhere).
"""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import sys
from typing import List, Optional

import pytest

from conformance.engines import find_engine
from conformance.vectors.__main__ import main
from conformance.vectors.engine_format import load_engine_vectors
from conformance.vectors.engine_testee import parse_failure_list, run_testee
from conformance.vectors.plain_json import from_json, to_json

VLLM = find_engine("vllm")
assert VLLM.value_vectors is not None
DIRECTORY = VLLM.value_vectors.directory
VECTORS = load_engine_vectors(DIRECTORY)
MIRROR = [sys.executable, "-m", "conformance.tests.kv_events_mirror"]


def _run(argv: List[str], failure_list: Optional[str] = None, reference: Optional[List[str]] = None, family: str = "kv-events"):
    out = io.StringIO()
    status = run_testee("vllm", argv, family=family, failure_list=failure_list, reference=reference, out=out)
    return status, out.getvalue()


# --- the files ---------------------------------------------------------------------------------


def test_every_vllm_vector_names_its_engine_release_family_and_message_type():
    assert VECTORS, f"no vectors under {DIRECTORY}"
    families = {f.name for f in VLLM.families}
    for vector in VECTORS:
        assert (vector.engine, vector.release) == ("vllm", VLLM.value_vectors.release), vector.file
        assert vector.family in families and vector.file.startswith(vector.family + "/"), vector.file
        allowed = {
            "kv-events": {"KVEventBatch"},
            "engine-core": {"EngineCoreRequest", "EngineCoreOutputs", "UtilityOutput"},
            "handshake": {"EngineCoreReadyResponse", "EngineHandshakeMetadata"},
            "mooncake": {"MooncakeXferMetadata", "MooncakeLeaseHeartbeat", "MooncakeXferResponse"},
        }
        assert vector.type in allowed[vector.family], vector.file
    kinds = {(v.family, v.kind) for v in VECTORS}
    assert kinds == {(f, k) for f in ("kv-events", "engine-core", "handshake", "mooncake") for k in "yni"}, kinds


def test_kv_event_vectors_cover_hash_kinds_integer_edges_rank_and_the_refused_forms():
    names = {v.name for v in VECTORS if v.family == "kv-events"}
    for wanted in (
        "y_block_stored_int_hashes", "y_block_stored_bytes_hashes", "y_block_stored_u64_edges", "y_block_stored_medium_none",
        "y_empty_batch", "y_data_parallel_rank_present", "y_batch_without_rank", "y_all_blocks_cleared", "y_block_removed",
        "n_event_tag_misspelled", "n_event_positional_0_23", "n_truncated_batch", "n_block_size_str",
    ):
        assert wanted in names, wanted
    edges = next(v for v in VECTORS if v.name == "y_block_stored_u64_edges")
    assert edges.expected["events"][0]["block_hashes"][0] == 2**64 - 1
    assert edges.expected["events"][0]["type"] == "BlockStored"  # the neutral form names the variant


def test_an_engine_core_vector_carries_a_tensor_in_an_out_of_band_frame():
    vector = next(v for v in VECTORS if v.name == "y_outputs_pooling_tensor_out_of_band")
    assert len(vector.frames) == 2 and len(vector.frames[1]) == 512
    tensor = vector.expected["outputs"][0]["pooling_output"]["__tensor__"]
    assert (tensor["dtype"], tensor["shape"], tensor["data"]) == ("float32", [128], vector.frames[1])
    assert vector.input is None  # a tensor is not a plain value: no encode_value for it


def test_plain_json_round_trips_bytes_non_finite_floats_ints_past_i64_and_odd_keys():
    value = {"b": b"\x00\xff", "f": [1.0, -0.0, math.inf, -math.inf], "i": [2**64 - 1, -(2**63)], "m": {1: "x", "$k": None}, "n": None}
    back = from_json(json.loads(json.dumps(to_json(value))))
    assert back["b"] == b"\x00\xff" and back["i"] == [2**64 - 1, -(2**63)] and back["m"] == {1: "x", "$k": None}
    assert [type(x) for x in back["f"]] == [float] * 4 and math.copysign(1.0, back["f"][1]) == -1.0 and back["f"][2:] == [math.inf, -math.inf]
    assert math.isnan(from_json(to_json(math.nan)))
    with pytest.raises(ValueError, match=r"unknown key '\$tensor'"):
        from_json({"$tensor": 1, "x": 2})


def test_a_vector_file_in_the_wrong_folder_or_with_an_expected_n_value_is_refused_by_name(tmp_path):
    source = next(v for v in VECTORS if v.name == "n_event_tag_misspelled")
    text = open(os.path.join(DIRECTORY, source.file), encoding="ascii").read()
    (tmp_path / "engine-core").mkdir()
    (tmp_path / "engine-core" / f"{source.name}.json").write_text(text)
    with pytest.raises(ValueError, match=r"engine-core/n_event_tag_misspelled.json: family 'kv-events' differs from its folder 'engine-core'"):
        load_engine_vectors(str(tmp_path))
    shutil.rmtree(tmp_path / "engine-core")
    (tmp_path / "kv-events").mkdir()
    (tmp_path / "kv-events" / f"{source.name}.json").write_text(text.replace('"expected": null', '"expected": 1'))
    with pytest.raises(ValueError, match=r"n_event_tag_misspelled.json: an n_ vector's expected must be null"):
        load_engine_vectors(str(tmp_path))


def test_vectors_check_reads_vllm_files_and_says_why_it_does_not_regenerate_them_without_vllm(capsys):
    assert main(["check", "--engine", "vllm"]) == 0
    out = capsys.readouterr().out
    try:
        import vllm  # noqa: F401
    except ImportError:
        assert "skip: vllm's" in out and "regeneration not (vllm is not importable here" in out, out
    else:
        assert "skip:" not in out or "is installed; the vectors are vllm" in out, out
    assert f"{len(VECTORS)} vector files up to date" in out


# --- the failure list ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, message",
    [
        ("kv-events/y_x.json  breaks  # why", r":1: expected 'FAMILY/VECTOR.json  OUTCOME  # reason'"),
        ("kv-events/y_x.json  refuses", r":1: a known failure needs a reason"),
        ("kv-events/y_x.json  refuses  # a\nkv-events/y_x.json refuses # b", r":2: kv-events/y_x.json refuses is listed twice"),
    ],
)
def test_a_failure_list_line_without_a_known_outcome_or_reason_or_listed_twice_is_refused_with_its_line(tmp_path, line, message):
    path = tmp_path / "list.txt"
    path.write_text(line + "\n")
    with pytest.raises(ValueError, match=message):
        parse_failure_list(str(path))


# --- the testee path, with teeth -------------------------------------------------------------


def test_a_testee_mirroring_vllm_kv_events_passes_every_vector_with_no_failure_list(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # `import vllm` raises here: the vectors test must not need it
    status, out = _run(MIRROR)
    assert status == 0, out
    assert out.rstrip().splitlines()[-1].startswith(f"VECTORS PASSED: {sum(v.family == 'kv-events' for v in VECTORS)} vectors"), out


@pytest.mark.parametrize(
    "broken, caught",
    [
        ("misspelled-tag", ["FAIL kv-events/n_event_tag_misspelled.json [KVEventBatch] accepts", "FAIL kv-events/y_block_stored_int_hashes.json [KVEventBatch] refuses"]),
        ("dropped-field", ["FAIL kv-events/y_block_stored_int_hashes.json [KVEventBatch] differs", "  $.events[0].medium: expected 'GPU', got absent"]),
        ("lenient-trailing", ["FAIL kv-events/n_trailing_bytes.json [KVEventBatch] accepts"]),
    ],
)
def test_the_vectors_catch_a_broken_kv_event_decoder_and_name_the_vector_and_path(broken, caught):
    status, out = _run(MIRROR + ["--break", broken])
    assert status == 1 and "VECTORS FAILED" in out, out
    lines = out.splitlines()
    for wanted in caught:
        assert any(line.startswith(wanted) for line in lines), f"{wanted!r} not in:\n{out}"


def test_the_dropped_field_is_caught_by_the_strict_value_comparison(monkeypatch):
    """The sensitivity of the meta-test above: with a comparison that skips ``medium``, the decoder that drops it passes."""
    import conformance.releases.values as values

    strict = values.differences

    def skipping_medium(expected, got, *args, **kwargs):
        return [line for line in strict(expected, got, *args, **kwargs) if ".medium:" not in line]

    monkeypatch.setattr(values, "differences", skipping_medium)
    status, out = _run(MIRROR + ["--break", "dropped-field"])
    assert status == 0, out


def test_a_listed_failure_that_does_not_happen_fails_the_run_and_a_listed_one_that_does_passes(tmp_path):
    listed = tmp_path / "known.txt"
    listed.write_text("kv-events/n_trailing_bytes.json  accepts  # reads the first value and ignores the rest\n")
    status, out = _run(MIRROR + ["--break", "lenient-trailing"], failure_list=str(listed))
    assert status == 0 and "1 expected failures, 0 unexpected failures, 0 unexpected passes" in out, out
    status, out = _run(MIRROR, failure_list=str(listed))
    assert status == 1 and "UNEXPECTED PASS kv-events/n_trailing_bytes.json accepts" in out, out
    status, out = _run(MIRROR, failure_list=str(listed), family="engine-core")
    assert "UNEXPECTED PASS" not in out  # a line of another family is not judged by a run of one family


def test_encode_value_frames_are_read_by_the_reference_when_one_is_given():
    status, out = _run(MIRROR, reference=MIRROR + ["--break", "misspelled-tag"])
    assert status == 1, out
    assert "FAIL kv-events/y_block_stored_int_hashes.json [KVEventBatch] encode-misread" in out, out
    assert "encode_value frames read by the reference kv-events-mirror (broken: misspelled-tag)" in out, out


def test_vectors_check_names_a_missing_a_stray_and_another_releases_engine_file(tmp_path, monkeypatch):
    import dataclasses

    import conformance.engines as engines
    from conformance.vectors.engine_build import check_engine

    target = tmp_path / "vectors"
    shutil.copytree(DIRECTORY, target, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    (target / "kv-events" / "n_empty_frame.json").unlink()
    stray = target / "kv-events" / "y_block_removed.json"
    (target / "kv-events" / "y_stray.json").write_text(stray.read_text().replace('"y_block_removed"', '"y_stray"'))
    other = target / "engine-core" / "y_outputs_empty.json"
    other.write_text(other.read_text().replace('"release": "0.34.0"', '"release": "0.33.0"'))
    patched = dataclasses.replace(VLLM, value_vectors=dataclasses.replace(VLLM.value_vectors, directory=str(target)))
    monkeypatch.setattr(engines, "find_engine", lambda spec=None: patched)
    problems, skip, count = check_engine("vllm")
    assert count == len(VECTORS)
    assert problems == [
        "engine-core/y_outputs_empty.json: written for vllm 0.33.0, not vllm 0.34.0",
        "kv-events/n_empty_frame.json: missing",
        "kv-events/y_stray.json: no case generates it (stale file)",
    ], problems
