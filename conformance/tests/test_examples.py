"""The examples in examples/ work as their comments say: the plug-in passes, the CI job's commands parse."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")


def test_the_python_plugin_example_passes_a_selection_of_the_suite():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(EXAMPLES, "python-plugin"), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run(
        [sys.executable, "-m", "conformance", "--codec", "my_codec:MyCodec", "-p", "no:xdist", "-k", "golden or (test_roundtrip and FlushCacheReqInput)"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert result.stdout.rstrip().splitlines()[-1].startswith("CONFORMANCE SUITE PASSED")
    assert "conformance: testing my-codec" in result.stdout


def test_the_ci_job_example_runs_commands_the_suite_accepts():
    from conformance.__main__ import _parser

    text = open(os.path.join(EXAMPLES, "ci", "ipc-conformance.yml"), encoding="utf-8").read()
    suite = re.search(r"python -m conformance (--codec .*?)(?:#|$)", text.replace("\\\n", " "), re.S).group(1)
    args, rest = _parser().parse_known_args(shlex.split(suite))
    assert args.codec == "yourengine.ipc:Codec" and args.failure_list and args.report and rest == ["-n", "2"]


def test_the_ci_matrix_shards_one_release_per_job_and_merges_their_results_into_the_table(tmp_path):
    """The matrix jobs' two commands as written: a shard runs one release and writes its result; the merge writes the table from the shards."""
    import json
    from dataclasses import asdict

    from conformance.releases.matrix import ReleaseVerdict, _parser
    from conformance.releases.matrix import main as matrix

    text = open(os.path.join(EXAMPLES, "ci", "ipc-conformance.yml"), encoding="utf-8").read()
    commands = [line.split("#")[0].strip() for line in text.splitlines() if line.strip().startswith("python -m conformance.releases matrix")]
    shard, merge = (shlex.split(c.replace('"${{ matrix.release }}"', "0.5.23").replace("${{ matrix.release }}", "0.5.23"))[4:] for c in commands)
    args = _parser().parse_args(shard)
    assert args.engine == ["sglang"] and args.versions == "0.5.23" and args.result == "gate-0.5.23.json"
    assert merge[0] == "merge" and merge[1] == "gate-*.json"
    shard_result = tmp_path / "gate-0.5.23.json"
    shard_result.write_text(json.dumps(asdict(ReleaseVerdict("sglang", "0.5.23", "PASSED", counts={"successes": 1}))))
    out = tmp_path / "gate-matrix.md"
    argv = [str(shard_result) if a == "gate-*.json" else str(out) if a == "gate-matrix.md" else a for a in merge[1:]]
    assert matrix(["merge", *argv]) == 0 and "| sglang 0.5.23 | PASSED | 1 |" in out.read_text()


def _schema_commands(text):
    return [shlex.split(line.split("#")[0].strip())[3:] for line in text.splitlines() if line.strip().startswith("python -m conformance.schema_diff")]


def test_the_ci_jobs_release_snapshot_and_pr_gate_work_on_an_engine_and_catch_a_mid_struct_insert(tmp_path, monkeypatch, capsys):
    """The two schema steps of the example, run as written on a toy engine: the release writes a snapshot, the PR gate compares with it."""
    from conformance.schema_diff import main

    text = open(os.path.join(EXAMPLES, "ci", "ipc-conformance.yml"), encoding="utf-8").read()
    gate, release = _schema_commands(text)
    assert release[0] == "snapshot" and "--against" in gate and "--mode" in gate
    monkeypatch.syspath_prepend(str(tmp_path))
    engine = (
        "import msgspec\nfrom conformance.engines import Engine, MessageFamily\n"
        "class Req(msgspec.Struct, array_like=True):\n    a: int\n{extra}    b: float = 0.0\n"
        "ENGINE = Engine(name='toy', description='toy', message_types=lambda: {{'Req': Req}}, message_strategy=None, codecs={{}},"
        " pickle_baseline=None, families=(MessageFamily('requests', 'toy', lambda: {{'Req': Req}}, 'typed'),))\n"
    )

    def run(args, version, extra=""):
        module = f"toy_engine_{version.replace('.', '_')}"
        (tmp_path / f"{module}.py").write_text(engine.format(extra=extra))
        swapped = [a.replace("yourengine.ipc_conformance:ENGINE", f"{module}:ENGINE").replace("$VERSION", version).replace('"$LAST"', "").replace("$LAST", str(tmp_path / "ipc-schemas" / "yourengine-1.0.json")) for a in args]
        swapped = [a.replace("ipc-schemas/", str(tmp_path / "ipc-schemas") + "/") if a.startswith("ipc-schemas/") else a for a in swapped]
        return main(swapped)

    assert run(release, "1.0") == 0
    assert run(gate, "1.1") == 0  # unchanged
    assert run(gate, "1.2", extra="    x: float = 0.0\n") == 1
    assert "BREAKING: Req: field inserted: 'x' at 1 of 3" in capsys.readouterr().out


@pytest.mark.skipif(shutil.which("node") is None or not os.path.isdir(os.path.join(EXAMPLES, "testee-node", "node_modules")),
                    reason="needs Node.js and `npm ci --prefix examples/testee-node` (.ci/run does both)")
def test_the_node_testee_passes_the_golden_vectors_with_its_failure_list():
    result = subprocess.run(
        [sys.executable, "-m", "conformance", "--testee", "node examples/testee-node/testee.js", "-p", "no:xdist", "-q", "-k", "golden",
         "--failure-list", "examples/testee-node/known-failures.txt"],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert re.search(r"CONFORMANCE SUITE PASSED: \d+ successes, \d+ skipped, [1-9]\d* expected failures", result.stdout.rstrip().splitlines()[-1])
