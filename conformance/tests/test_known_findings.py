"""Known-failure lists by finding: one line per bug, matched across wordings and redraws, never hiding a new bug."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conformance.findings import Finding, Pattern, finding_of, mark_side
from conformance.runner.failure_list import FailureListPlugin, parse_failure_list, render_lines
from conformance.runner.seeding import seed_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SGLANG_LIST = os.path.join(ROOT, "conformance", "engines", "sglang", "failure_lists", "sglang-0.5.23.txt")
CUDA_CASE = ("test_golden_vector", "i_cuda_device_tensor.json")
#: What torch says when a CPU-only receiver is handed a 'cuda:0' tensor: the CPU build, then the CUDA build on a machine without a driver.
TORCH_WORDINGS = [
    AssertionError("Torch not compiled with CUDA enabled"),
    RuntimeError("Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver"),
]


def run(codec: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HYPOTHESIS_PROFILE="ci", PYTHONHASHSEED="0")
    env.pop("IPC_CONFORMANCE_FAILURE_LIST", None)
    return subprocess.run(
        [sys.executable, "-m", "conformance", "--codec", codec, "-q", "-p", "no:xdist", *args], capture_output=True, text=True, env=env, timeout=600, cwd=ROOT
    )


def last_line(result: subprocess.CompletedProcess) -> str:
    return [line for line in result.stdout.splitlines() if line.startswith("CONFORMANCE SUITE")][-1]


# --- the list format ----------------------------------------------------------------------


def test_patterns_take_brackets_literally_and_bars_as_alternatives():
    assert Pattern("$.x[ab]").matches("$.x[ab]") and not Pattern("$.x[ab]").matches("$.xa")
    assert Pattern("$.x[*].y").matches("$.x[*].y") and not Pattern("$.x[1].y").matches("$.x[2].y")
    assert Pattern("AssertionError|RuntimeError").matches("RuntimeError")
    assert Pattern("type differs: * instead of np.*").matches("type differs: float instead of np.floatN")
    assert not Pattern("raises").matches("raises2")


def test_parse_reads_finding_lines_with_reason_and_link_and_names_a_bad_line(tmp_path):
    path = tmp_path / "list.txt"
    path.write_text("# c\ntest_a  X|Y  differs  $.a[*]  : length differs: N instead of N  # why (https://example.org/1)\n*  *  raises  KeyError\n")
    lines = parse_failure_list(str(path)).findings
    assert [line.kind.text for line in lines] == ["differs", "raises"] and lines[0].reason.startswith("why") and lines[0].link == "https://example.org/1"
    assert lines[0].matches("test_a", "Y", Finding.of("differs", "$.a[*]", "length differs: 3 instead of 4"))
    assert not lines[0].matches("test_a", "Z", Finding.of("differs", "$.a[*]", "length differs: 3 instead of 4"))
    path.write_text("# c\n\n*  *  explodes  *  # no such kind\n")
    with pytest.raises(ValueError, match=r"list.txt:3: unknown finding kind 'explodes'"):
        parse_failure_list(str(path))


def test_a_finding_is_the_same_whichever_example_shows_it():
    a = finding_of(mark(ValueError("bytes length 7 not a multiple of 4"), "decode"))
    b = finding_of(mark(ValueError("bytes length 9 not a multiple of 4"), "decode"))
    assert a == b == Finding("raises", "ValueError", "bytes length N not a multiple of N")
    assert finding_of(mark(OverflowError("x"), "encode")).kind == "sender-raises"
    assert finding_of(mark(ValueError("refused"), "decode"), ValueError).kind == "refuses"


def mark(exc: BaseException, side: str) -> BaseException:
    mark_side(exc, side)
    return exc


def test_sglang_list_matches_the_cuda_finding_under_the_cpu_and_the_cuda_build_of_torch():
    """One line of SGLang's list covers torch's two wordings of the same bug (a CUDA build on a CPU-only runner)."""
    listed = parse_failure_list(SGLANG_LIST)
    matched = [listed.match(*CUDA_CASE, finding_of(mark(exc, "decode"))) for exc in TORCH_WORDINGS]
    assert matched[0] is not None and matched[0] is matched[1], [m.describe() if m else None for m in matched]


def test_lists_shipped_are_short_and_every_line_has_a_reason():
    for name, most in (("sglang-0.5.23.txt", 40), ("vllm-0.34.0.txt", 15)):
        engine = name.partition("-")[0]
        listed = parse_failure_list(os.path.join(ROOT, "conformance", "engines", engine, "failure_lists", name))
        assert not listed.by_test, f"{name} still has test-id lines"
        assert len(listed.findings) <= most, f"{name}: {len(listed.findings)} lines"
        assert all(line.reason and "TODO" not in line.reason for line in listed.findings), name


# --- what a line does in a run -------------------------------------------------------------


def test_a_listed_finding_does_not_hide_a_new_bug_in_the_same_test(tmp_path):
    """ThreeBugs with two of its bugs listed: the third still fails, in a test that also met a listed one."""
    known = tmp_path / "known.txt"
    known.write_text("*  *  differs  *  : type differs: list instead of tuple  # tuples as lists\n*  *  differs  *  : type differs: * instead of np.*  # numpy scalars\n")
    report = tmp_path / "r.json"
    result = run("conformance.tests.broken_codecs:ThreeBugs", "--failure-list", str(known), "--report", str(report), "-k", "test_roundtrip.py and BatchStrOutput")
    assert last_line(result).startswith("CONFORMANCE SUITE FAILED") and result.returncode == 1, result.stdout[-3000:]
    assert "new finding(s)" in result.stdout and "differs * : float bits differ" in result.stdout, result.stdout[-3000:]
    data = json.loads(report.read_text())
    test = "test_roundtrip.py::test_decode_of_encode_is_equivalent_to_the_message[BatchStrOutput]"
    (failed,) = [t for n, t in data["tests"].items() if n.endswith(test)]
    assert failed["outcome"] == "failed" and "float bits differ" in failed["headline"]
    tuple_line = next(k for k in data["failure_list"]["known"] if k["line"] == 1)
    assert test in tuple_line["test_ids"] and tuple_line["examples"] >= 1


def test_a_maintainer_starts_a_list_with_update_and_the_next_run_conforms_except_for_known_findings(tmp_path):
    known = tmp_path / "ci" / "known.txt"  # neither the file nor its folder exists yet
    selection = ["-k", "test_roundtrip.py and (GetInternalStateReqOutput or LoadLoRAAdapterFromTensorsReqInput)"]
    first = run("conformance.tests.broken_codecs:TupleAsList", "--failure-list", str(known), "--update-failure-list", *selection)
    assert known.exists(), first.stdout[-3000:]
    assert f"failure list {known}: wrote 1 line(s): 1 added (1 marked TODO: give each a reason), 0 removed, 0 kept" in first.stdout, first.stdout[-3000:]
    lines = [line for line in known.read_text().splitlines() if not line.startswith("#")]
    assert lines == ["test_decode_of_encode_is_equivalent_to_the_message  GetInternalStateReqOutput|LoadLoRAAdapterFromTensorsReqInput  differs  $.config_dict[*]|$.config_dict[*][*]|$.internal_state[*] : type differs: list instead of tuple  # TODO: say why this is expected"]
    second = run("conformance.tests.broken_codecs:TupleAsList", "--failure-list", str(known), *selection)
    assert second.returncode == 0 and last_line(second).startswith("CONFORMANCE SUITE PASSED") and "conforms except for 1 known finding" in last_line(second), second.stdout[-3000:]


def test_update_keeps_matched_lines_as_written_and_never_gives_a_changed_finding_an_old_reason(tmp_path):
    path = tmp_path / "known.txt"
    path.write_text("*  *  raises  AssertionError  # torch CPU build wording\ntest_x  *  differs  *  : float bits differ  # kept, hand-written\n")
    plugin = FailureListPlugin(str(path), update=True, release=(None, None))
    plugin.line_tests[2].add("s/test_a.py::test_x[A]")
    for nodeid in ("s/test_a.py::test_y[A]", "s/test_a.py::test_y[B]"):
        plugin.new.setdefault("raises RuntimeError", _new(Finding.of("raises", "RuntimeError", "Found no NVIDIA driver"))).add(nodeid, Finding.of("raises", "RuntimeError", "Found no NVIDIA driver"))
    plugin._rewrite()
    body = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    assert body == ["test_x  *  differs  *  : float bits differ  # kept, hand-written", "test_y  A|B  raises  RuntimeError  # TODO: say why this is expected"]
    assert plugin.wrote.endswith("wrote 2 line(s): 1 added (1 marked TODO: give each a reason), 1 removed, 1 kept")


def _new(finding):
    from conformance.runner.failure_list import _NewFinding

    return _NewFinding(finding)


def test_update_groups_new_findings_one_line_per_kind_and_class_or_reason():
    lines = render_lines(
        [
            ("test_p", "A", Finding.of("differs", "$.a[*]", "type differs: list instead of tuple")),
            ("test_q", "B", Finding.of("differs", "$.b", "type differs: list instead of tuple")),
            ("test_p", "A", Finding.of("raises", "KeyError", "'x'")),
        ]
    )
    assert lines == [
        "test_p  A  raises  KeyError  # TODO: say why this is expected",
        "test_p|test_q  A|B  differs  $.a[*]|$.b : type differs: list instead of tuple  # TODO: say why this is expected",
    ]


def test_a_line_that_matched_nothing_in_a_complete_run_fails_it_with_the_command_that_updates_the_list(tmp_path):
    """A whole run of the suite (the reference, which conforms) with one line for a bug it does not have."""
    known = tmp_path / "known.txt"
    known.write_text("*  *  differs  *  : type differs: list instead of tuple  # tuples as lists (fixed since)\n")
    result = run("reference", "--failure-list", str(known), "conformance/suite", "-p", "xdist", "-n", "2")
    assert result.returncode == 1 and last_line(result).startswith("CONFORMANCE SUITE FAILED"), result.stdout[-3000:]
    assert "line(s) whose tests ran but never met their finding: fixed?" in result.stdout
    assert "known.txt:1: * * differs * : type differs: list instead of tuple  # tuples as lists (fixed since)" in result.stdout
    assert "--update-failure-list" in result.stdout.split("fixed?")[1]


# --- examples that do not depend on the property's source -----------------------------------

_PROPERTY = '''
from hypothesis import given, settings, strategies as st

@settings(derandomize=True, database=None, max_examples=5)
@given(st.integers())
def test_draws(x):
    {body}
    with open({out!r}, "a") as fh:
        fh.write(f"{{x}}\\n")
'''


def _draws(tmp_path, name: str, body: str, *options: str) -> list:
    folder = tmp_path / name
    folder.mkdir()
    out = folder / "draws.txt"
    (folder / "test_prop.py").write_text(textwrap.dedent(_PROPERTY.format(body=body, out=str(out))))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *options, str(folder / "test_prop.py")],
        capture_output=True,
        text=True,
        cwd=str(folder),
        env=dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")),
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-2000:]
    return out.read_text().split()


def test_a_property_draws_the_same_examples_after_an_edit_of_its_body(tmp_path):
    seeded = ("-p", "conformance.runner.seeding", "--seed", "0")  # explicit: without CI=true the default profile is random (dev)
    before = _draws(tmp_path, "before", "pass", *seeded)
    after = _draws(tmp_path, "after", "y = 1  # an edit that draws nothing more", *seeded)
    assert before == after
    assert _draws(tmp_path, "other-seed", "pass", "-p", "conformance.runner.seeding", "--seed", "1") != before
    # Without the plugin, Hypothesis seeds from the source: the same edit re-draws (what the plugin exists to stop).
    assert _draws(tmp_path, "plain-before", "pass") != _draws(tmp_path, "plain-after", "y = 1  # an edit that draws nothing more")


def test_seed_for_depends_on_the_test_id_and_the_run_seed_only():
    assert seed_for("test_a.py::test_x[A]") == seed_for("test_a.py::test_x[A]")
    assert len({seed_for("test_a.py::test_x[A]"), seed_for("test_a.py::test_x[B]"), seed_for("test_a.py::test_x[A]", 1)}) == 3


def test_only_lines_marked_sometimes_may_go_unmet_in_a_complete_run(tmp_path):
    path = tmp_path / "known.txt"
    path.write_text("sometimes  test_r  *  bytes-differ  *  # set order: only some draws\ntest_r  *  differs  *  # always\n")
    plugin = FailureListPlugin(str(path), update=False, release=(None, None))
    assert [line.line for line in plugin.unmatched_lines()] == [2]
    assert plugin.list.findings[0].sometimes and plugin.list.findings[0].text.startswith("sometimes ")
    assert [f["line"] for f in plugin.summary()["sometimes_not_met"]] == [1]


def test_update_lists_every_finding_a_test_shows_so_the_next_run_with_the_list_passes(tmp_path):
    """ThreeBugs shows several findings in one test; a list that named only each test's first would fail the rerun."""
    known = tmp_path / "known.txt"
    selection = ["-k", "test_pickle_agreement.py and (TokenizedGenerateReqInput or ParseFunctionCallReq or GetHiCacheL3LayoutReqOutput)"]
    first = run("conformance.tests.broken_codecs:ThreeBugs", "--failure-list", str(known), "--update-failure-list", *selection)
    assert "new finding(s), each added to known.txt as a line marked TODO" in first.stdout, first.stdout[-3000:]
    second = run("conformance.tests.broken_codecs:ThreeBugs", "--failure-list", str(known), *selection)
    assert second.returncode == 0 and "conforms except for" in last_line(second), second.stdout[-3000:]


# --- one list for every release of the engine ------------------------------------------------


def _plugin(tmp_path, text: str, release, update: bool = False) -> FailureListPlugin:
    path = tmp_path / "known.txt"
    path.write_text(text)
    return FailureListPlugin(str(path), update=update, release=release)


_RECORDED_LIST = """recorded-at sglang 0.5.23
*  *  differs  *  : type differs: list instead of tuple  # every release
releases(>=0.5.19)  test_r  *  raises  ValueError  # ext metadata unpacked by three (0.5.19 on)
releases(<0.5.19)  sometimes  test_r  *  bytes-differ  *  # before the ext codes
"""


def test_lines_say_which_releases_they_hold_for_and_the_list_where_it_was_recorded(tmp_path):
    listed = parse_failure_list(str(_write(tmp_path, _RECORDED_LIST)))
    assert listed.recorded == ("sglang", "0.5.23")
    every, since, before = listed.findings
    assert every.releases is None and since.text.startswith("releases(>=0.5.19) test_r") and before.sometimes and before.text.startswith("releases(<0.5.19) sometimes ")
    assert since.holds_at("0.5.23") and since.holds_at("0.5.24.dev0") and not since.holds_at("0.5.18") and before.holds_at("0.5.18.post1")
    assert all(line.holds_at(None) for line in (every, since, before))  # no release known: every line applies
    for bad, error in (("releases(>>0.5)  *  *  raises  X  # r\n", "expected releases\\(SPEC\\)"), ("recorded-at sglang\n", "recorded-at PACKAGE VERSION")):
        with pytest.raises(ValueError, match=error):
            parse_failure_list(str(_write(tmp_path, bad)))


def _write(tmp_path, text: str):
    path = tmp_path / "list.txt"
    path.write_text(text)
    return path


def test_at_the_recorded_release_a_line_met_by_nothing_fails_and_elsewhere_it_is_reported_not_met(tmp_path):
    at_recorded = _plugin(tmp_path, _RECORDED_LIST, ("sglang", "0.5.23"))
    assert at_recorded.judged_here and [line.line for line in at_recorded.unmatched_lines()] == [2, 3]
    assert [line.line for line in at_recorded.elsewhere] == [4]  # <0.5.19: not applied at 0.5.23
    older = _plugin(tmp_path, _RECORDED_LIST, ("sglang", "0.5.22"))
    older.ran.add(("test_r", "A"))
    summary = older.summary()
    assert not older.judged_here and summary["fixed"] == [] and summary["stale"] == []
    assert [f["line"] for f in summary["not_met_at_this_release"]] == [2, 3] and summary["recorded_at"] == ["sglang", "0.5.23"]
    # A line not applied here names nothing: the finding it would have matched is a new one.
    assert older.list.match("test_r", "A", Finding.of("bytes-differ", "", "second hop")) is None
    oldest = _plugin(tmp_path, _RECORDED_LIST, ("sglang", "0.5.16"))
    assert oldest.list.match("test_r", "A", Finding.of("bytes-differ", "", "second hop")) is not None
    assert oldest.list.match("test_r", "A", Finding.of("raises", "ValueError", "too many values")) is None


def test_an_update_at_another_release_keeps_what_holds_elsewhere_and_qualifies_what_it_adds(tmp_path):
    plugin = _plugin(tmp_path, _RECORDED_LIST, ("sglang", "0.5.22"), update=True)
    plugin.line_tests[2].add("s/test_a.py::test_q[A]")  # met at 0.5.22 too
    plugin.new.setdefault("raises KeyError", _new(Finding.of("raises", "KeyError", "'x'"))).add("s/test_a.py::test_r[B]", Finding.of("raises", "KeyError", "'x'"))
    plugin._rewrite()
    body = [line for line in (tmp_path / "known.txt").read_text().splitlines() if not line.startswith("#")]
    assert body == [
        "recorded-at sglang 0.5.23",
        "*  *  differs  *  : type differs: list instead of tuple  # every release",
        "releases(>=0.5.19,!=0.5.22)  test_r  *  raises  ValueError  # ext metadata unpacked by three (0.5.19 on)",
        "releases(<0.5.19)  sometimes  test_r  *  bytes-differ  *  # before the ext codes",
        "releases(==0.5.22)  test_r  B  raises  KeyError  # TODO: say why this is expected",
    ]
    assert "(for sglang 0.5.22 only)" in plugin.wrote and "1 of them not met at sglang 0.5.22: now excluding it" in plugin.wrote
    again = parse_failure_list(str(tmp_path / "known.txt"))  # what it wrote reads back, and says what it means
    assert not again.findings[1].holds_at("0.5.22") and again.findings[1].holds_at("0.5.23") and again.findings[3].holds_at("0.5.22")


def test_update_writes_the_narrowest_line_that_covers_the_paths_it_saw():
    lines = render_lines(
        [
            ("test_p", "BatchStrOutput", Finding.of("differs", "$.output_token_sampling_mask[*].lengths", "ndarray shape differs")),
            ("test_p", "BatchTokenIDOutput", Finding.of("differs", "$.output_token_sampling_mask[*].logprobs", "ndarray shape differs")),
        ]
    )
    assert lines == [
        "test_p  BatchStrOutput|BatchTokenIDOutput  differs  $.output_token_sampling_mask[*].lengths|$.output_token_sampling_mask[*].logprobs : ndarray shape differs  # TODO: say why this is expected"
    ]
    many = render_lines([("test_p", f"T{i}", Finding.of("differs", f"$.f{i}", "ndarray shape differs")) for i in range(6)])
    assert many == ["test_p  *  differs  * : ndarray shape differs  # TODO: say why this is expected"]  # past a few: as wide as it must be


def test_a_line_that_reaches_much_further_than_what_met_it_is_named_with_the_narrower_pattern(tmp_path):
    plugin = _plugin(tmp_path, "*  *  differs  *  : ndarray shape differs  # SamplingMask rebuilds its arrays\n*  *  raises  KeyError  # any message\n", None)
    plugin.line_tests[1].add("s/test_a.py::test_p[BatchStrOutput]")
    plugin.line_met[1].add(("test_p", "BatchStrOutput", "$.output_token_sampling_mask[*].lengths"))
    for i in range(8):  # met in many message types: as wide as the reason says
        plugin.line_met[2].add(("test_p", f"T{i}", "KeyError"))
    (broad,) = plugin.broad_lines()
    assert broad["line"] == 1 and broad["narrower"] == {"case": "BatchStrOutput", "where": "$.output_token_sampling_mask[*].lengths"}


def test_a_line_whose_detail_states_its_bug_may_be_as_wide_as_that_bug(tmp_path):
    plugin = _plugin(
        tmp_path,
        "*  *  differs  *  : ndarray shape differs: a scalar array came back as a one-element array  # 0-d becomes 1-d\n"
        "*  *  sender-raises  RuntimeError  : self.stride(-N) must be N to view *  # non-contiguous tensors\n"
        "*  *  differs  *  : ndarray shape differs|ndarray dtype differs  # only a class of difference\n",
        None,
    )
    for line in (1, 2, 3):
        plugin.line_tests[line].add("s/test_a.py::test_p[BatchStrOutput]")
        plugin.line_met[line].add(("test_p", "BatchStrOutput", "$.x"))
    assert [b["line"] for b in plugin.broad_lines()] == [3]
