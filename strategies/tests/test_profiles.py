"""Profiles: what each one sets, how the environment selects one, and targeting."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import Phase, given, settings
from hypothesis.errors import InvalidArgument

import strategies
from reference_codec.schema import FlushCacheReqInput, GetInternalStateReqOutput
from strategies import profiles

ROOT = Path(__file__).resolve().parents[2]


def test_ci_profile_is_deterministic_bounded_and_writes_no_database():
    ci = settings.get_profile("ci")
    assert ci.derandomize is True
    assert ci.database is None
    assert ci.deadline is None
    assert ci.max_examples == profiles.CI_MAX_EXAMPLES <= 100
    assert Phase.target not in ci.phases and Phase.generate in ci.phases and Phase.shrink in ci.phases


def test_nightly_profile_runs_many_examples_with_targeting():
    nightly = settings.get_profile("nightly")
    assert nightly.max_examples >= 1000 and Phase.target in nightly.phases and nightly.deadline is None


def test_dev_profile_keeps_hypothesis_defaults_but_the_deadline():
    dev, default = settings.get_profile("dev"), settings.get_profile("default")
    assert dev.max_examples == default.max_examples and dev.derandomize is False and dev.deadline is None


@pytest.mark.parametrize("name", profiles.PROFILES)
def test_no_profile_suppresses_a_health_check(name):
    assert tuple(settings.get_profile(name).suppress_health_check) == ()


@pytest.mark.parametrize(
    "environ, expected",
    [
        ({}, "dev"),
        ({"CI": "true"}, "ci"),
        ({"CI": "TRUE"}, "ci"),
        ({"CI": "false"}, "dev"),
        ({"CI": "true", "HYPOTHESIS_PROFILE": "nightly"}, "nightly"),
        ({"HYPOTHESIS_PROFILE": "ci"}, "ci"),
        ({"HYPOTHESIS_PROFILE": "  "}, "dev"),
    ],
)
def test_the_environment_selects_the_profile(environ, expected):
    assert profiles.profile_from_environment(environ) == expected


def test_an_unregistered_profile_name_is_refused_naming_the_variable():
    with pytest.raises(InvalidArgument, match="HYPOTHESIS_PROFILE='nope'"):
        profiles.load_profile({"HYPOTHESIS_PROFILE": "nope"})


def _profile_after(code: str, **overrides) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "HYPOTHESIS_PROFILE")}
    env.update(overrides)
    code += "; from hypothesis import settings; print(settings.get_current_profile_name())"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_importing_strategies_loads_no_profile_and_registers_no_from_type():
    # As importing Hypothesis loads no profile of ours: the runner chooses.
    # Whatever Hypothesis loaded by itself (its own "ci" where it detects a CI service) stays loaded.
    before = "from hypothesis import settings; p = settings.get_current_profile_name(); import strategies; print(p)"
    assert _profile_after(before, HYPOTHESIS_PROFILE="nightly").splitlines() == [_profile_after("import hypothesis")] * 2
    code = (
        "import strategies, hypothesis.strategies as st; from hypothesis.strategies._internal.types import _global_type_lookup as g; "
        "from reference_codec.schema import MESSAGE_TYPES; print(any(c in g for c in MESSAGE_TYPES.values()))"
    )
    assert _profile_after(code).splitlines()[0] == "False"


def test_load_profile_loads_ci_when_ci_is_true_and_the_variable_is_unset():
    # Hypothesis loads its own "ci" profile (which suppresses a health check)
    # whenever $CI exists; load_profile must replace it with ours.
    code = "import strategies; strategies.load_profile(); from hypothesis import settings; print(settings.default.derandomize)"
    assert _profile_after(code, CI="true").splitlines() == ["True", "ci"]
    assert _profile_after("import strategies; strategies.load_profile()", CI="true", HYPOTHESIS_PROFILE="nightly") == "nightly"


def test_large_batches_reach_256_only_under_nightly():
    previous = profiles.current_profile()
    try:
        settings.load_profile("nightly")
        assert profiles.large_batch_limit() == 256
        settings.load_profile("ci")
        assert profiles.large_batch_limit() == 64
    finally:
        settings.load_profile(previous)


def test_measure_counts_leaves_depth_and_bytes():
    import torch

    msg = GetInternalStateReqOutput(internal_state={"a": [1, 2], "t": torch.zeros(3, dtype=torch.float64)})
    size = strategies.measure(msg)
    # leaves: rid, http_worker_ipc, keys "a" and "t", 1, 2, three tensor elements
    assert size.leaves == 9
    assert size.depth == 4  # message > dict > list > int
    assert size.nbytes >= 24


@given(strategies.reference_struct(FlushCacheReqInput))
def test_target_size_reports_to_hypothesis_from_inside_a_test(msg):
    assert strategies.target_size(msg) == strategies.measure(msg)


_DRAWS = """
import json, os, sys
from hypothesis import given, settings, strategies as st

if os.environ.get("USE_STRATEGIES"):
    from strategies import profiles
    profiles.without_local_constants()
if os.environ.get("IMPORT_FIRST"):
    import local_constants_module  # a local module full of string literals, imported before the draws

@settings(derandomize=True, database=None, max_examples=300)
@given(st.text(max_size=30))
def draw(s):
    DRAWN.append(s)

DRAWN = []
draw()
json.dump(DRAWN, sys.stdout)
"""


@pytest.mark.parametrize("protected", [True, False], ids=["with-strategies", "plain-hypothesis"])
def test_draws_do_not_depend_on_which_local_modules_are_imported(tmp_path, protected):
    """The guard above is needed (plain Hypothesis draws differ) and works (with it they do not)."""
    (tmp_path / "local_constants_module.py").write_text(
        "\n".join(f"C{i} = 'the-local-constant-{i}'" for i in range(300)) + "\n"
    )
    (tmp_path / "draws.py").write_text(_DRAWS)
    runs = []
    for first in ("", "1"):
        env = dict(os.environ, PYTHONHASHSEED="0", IMPORT_FIRST=first, USE_STRATEGIES="1" if protected else "")
        env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT), env.get("PYTHONPATH", "")])
        out = subprocess.run([sys.executable, str(tmp_path / "draws.py")], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        runs.append(out.stdout)
    if protected:
        assert runs[0] == runs[1]
    else:
        assert runs[0] != runs[1] and "the-local-constant-" in runs[1]
