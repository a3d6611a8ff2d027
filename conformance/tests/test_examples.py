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
    assert "python -m conformance.schema_diff base_messages yourengine.messages" in text


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
