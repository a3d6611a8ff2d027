"""Each kind of break between releases is caught by the snapshot diff with its direction, and seen live between two processes.

Two "releases" of a toy engine are two modules; each runs in its own host
process (as two real releases run in their own environments), and the
driver draws messages from the sender's snapshot.
"""

from __future__ import annotations

import textwrap

import pytest

from conformance.releases.confirm import HostProcess, annotate, confirm_messages
from conformance.schema_diff import compare, main
from conformance.schema_diff.snapshot import module_snapshot

BASE = '''
from typing import Optional
import msgspec
from conformance.engines import Engine, MessageFamily

class SamplingParams(msgspec.Struct, array_like=True, kw_only=True):
{sampling}

class Request(msgspec.Struct, array_like=True, kw_only=True):
    rid: str
    sampling_params: SamplingParams
    stream: bool = False

def _roots():
    return {{"Request": Request}}

ENGINE = Engine(
    name="toy", description="toy", message_types=_roots, message_strategy=None, codecs={{}}, pickle_baseline=None,
    families=(MessageFamily(name="requests", description="toy requests", roots=_roots, framing="typed"),),
)
'''

OLD = "    temperature: float = 1.0\n    top_p: float = 1.0\n    max_new_tokens: int = 16\n"
CASES = {
    # A field inserted mid-struct: each side reads the other's later fields one slot off.
    "inserted": ("    temperature: float = 1.0\n    min_p: float = 0.0\n    top_p: float = 1.0\n    max_new_tokens: int = 16\n", "field inserted"),
    # A field removed mid-struct.
    "removed": ("    temperature: float = 1.0\n    max_new_tokens: int = 16\n", "field removed"),
    # A field retyped in place.
    "retyped": ("    temperature: float = 1.0\n    top_p: float = 1.0\n    max_new_tokens: str = ''\n", "type changed"),
    # The struct switched from array to map.
    "to-map": (None, "array_like changed"),
    # Only a tail field with a default: no break in either direction.
    "tail": ("    temperature: float = 1.0\n    top_p: float = 1.0\n    max_new_tokens: int = 16\n    min_p: float = 0.0\n", None),
}


def _write(tmp_path, name, sampling, array_like=True):
    text = BASE.format(sampling=sampling)
    if not array_like:
        text = text.replace("class SamplingParams(msgspec.Struct, array_like=True, kw_only=True)", "class SamplingParams(msgspec.Struct, kw_only=True)")
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(text))
    return f"{name}:ENGINE"


@pytest.fixture
def releases(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))

    def make(case):
        sampling, _ = CASES[case]
        old = _write(tmp_path, f"toy_old_{case.replace('-', '_')}", OLD)
        new = _write(tmp_path, f"toy_new_{case.replace('-', '_')}", sampling or OLD, array_like=sampling is not None)
        return old, new

    return make


def _snap(spec):
    from conformance.engines import load_engine
    from conformance.schema_diff.snapshot import engine_snapshot

    return engine_snapshot(load_engine(spec), release=spec)


EXPECTED = {
    # old->new: min_p reads top_p, top_p reads max_new_tokens (an int is a float): silently wrong.
    # new->old: max_new_tokens (int) reads top_p (float): refused.
    "inserted": ("misreads", "refuses"),
    "removed": ("refuses", "misreads"),
    "retyped": ("refuses", "refuses"),
    "to-map": ("refuses", "refuses"),
}


@pytest.mark.parametrize("case", ["inserted", "removed", "retyped", "to-map"])
def test_each_break_is_found_with_its_direction_and_seen_live(releases, case):
    import sys

    old_spec, new_spec = releases(case)
    old, new = _snap(old_spec), _snap(new_spec)
    comparison = compare(old, new)
    breaking = comparison.breaking("full")
    assert [c.kind for c in breaking] == [CASES[case][1]], [str(c) for c in comparison.changes]
    change = breaking[0]
    assert change.where == "Request.sampling_params -> SamplingParams"
    assert (change.backward, change.forward) == EXPECTED[case], str(change)
    with HostProcess(sys.executable, old_spec, "requests") as old_host, HostProcess(sys.executable, new_spec, "requests") as new_host:
        observations = confirm_messages("requests", ["Request"], {"old": old, "new": new}, {"old": old_host, "new": new_host}, max_examples=40)
    seen = {o.direction: o for o in observations}
    assert (seen["backward"].outcome, seen["forward"].outcome) == EXPECTED[case], observations  # the prediction is what the real decoders do
    (_, text), = annotate([c for c in comparison.changes if c.family == ""] or comparison.changes, observations)
    assert "old->new: " in text and "NOT SEEN" not in text, text


def test_a_tail_field_with_a_default_passes_backward_and_is_not_seen_breaking_live(releases):
    import sys

    old_spec, new_spec = releases("tail")
    old, new = _snap(old_spec), _snap(new_spec)
    comparison = compare(old, new)
    assert comparison.breaking("backward") == [] and comparison.breaking("full") == []
    assert [c.kind for c in comparison.changes] == ["field appended"]
    with HostProcess(sys.executable, old_spec, "requests") as old_host, HostProcess(sys.executable, new_spec, "requests") as new_host:
        observations = confirm_messages("requests", ["Request"], {"old": old, "new": new}, {"old": old_host, "new": new_host}, max_examples=40)
    assert [o.outcome for o in observations] == ["ok", "ok"], observations


def test_untagged_positional_modules_without_roots_are_refused_not_passed(tmp_path, monkeypatch, capsys):
    """The false pass this guards against: vLLM-style untagged structs compared as "0 breaking ... compatible", exit 0."""
    monkeypatch.syspath_prepend(str(tmp_path))
    for name, fields in (("untagged_v1", "a: int\n    b: int = 0\n"), ("untagged_v2", "a: int\n    x: str = ''\n    b: int = 0\n")):
        (tmp_path / f"{name}.py").write_text(f"import msgspec\nclass Req(msgspec.Struct, array_like=True):\n    {fields}")
    with pytest.raises(SystemExit) as exit_info:
        main(["untagged_v1", "untagged_v2"])
    assert exit_info.value.code == 2
    assert "no message classes found" in capsys.readouterr().err
    assert main(["untagged_v1", "untagged_v2", "--roots", "Req"]) == 1
    out = capsys.readouterr().out
    assert "BREAKING: Req: field inserted: 'x' at 1 of 3" in out and "compared 1 message types and 1 structs" in out


def test_a_snapshot_file_round_trips_and_compares_like_the_module(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "snapmod.py").write_text("import msgspec\nclass Req(msgspec.Struct, array_like=True):\n    a: int\n    b: int = 0\n")
    assert main(["snapshot", "snapmod", "--roots", "Req", "--out", str(tmp_path / "s.json")]) == 0
    assert main([str(tmp_path / "s.json"), "snapmod", "--roots", "Req"]) == 0
    assert "compared 1 message types and 1 structs: 0 breaking" in capsys.readouterr().out
    (tmp_path / "bad.json").write_text('{"format": "something-else"}')
    with pytest.raises(SystemExit) as exit_info:
        main([str(tmp_path / "bad.json"), str(tmp_path / "s.json")])
    assert exit_info.value.code == 2 and "is not a schema snapshot" in capsys.readouterr().err
    assert module_snapshot("snapmod", ["Req"]).message_count() == 1


def test_a_hosts_error_message_carries_no_path_of_the_machine():
    import sys

    from conformance.releases.host import _without_paths

    message = f"AttributeError: Can't get attribute 'X' on <module 'm' from '{sys.prefix}/lib/python3.11/site-packages/m.py'>"
    assert _without_paths(message) == "AttributeError: Can't get attribute 'X' on <module 'm' from '<env>/lib/python3.11/site-packages/m.py'>"
