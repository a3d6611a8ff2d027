"""SGLang's gate as an engine keeps it: its failure list lists what SGLang's codec gets wrong, and hides nothing new.

Needs SGLang 0.5.23, the release the list was recorded at (``tox -e sglang`` runs this module); skips without it.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conformance.engines.sglang.adapter import sglang_available

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SGLANG_LIST = os.path.join(ROOT, "conformance", "engines", "sglang", "failure_lists", "sglang-0.5.23.txt")

pytestmark = pytest.mark.skipif(not sglang_available(), reason="needs SGLang 0.5.23 (tox -e sglang)")


def test_one_new_bug_in_the_generation_request_fails_the_sglang_gate():
    """Every property of TokenizedGenerateReqInput, with SGLang's whole list: the lost token is reported, by path."""
    result = subprocess.run(
        [
            sys.executable, "-m", "conformance", "--engine", "sglang", "--codec", "conformance.tests.broken_codecs:SGLangLosesLastInputToken",
            "--failure-list", SGLANG_LIST, "-q", "-p", "no:xdist", "-k", "TokenizedGenerateReqInput and not Batch",
        ],
        capture_output=True, text=True, timeout=900, cwd=ROOT, env=dict(os.environ, HYPOTHESIS_PROFILE="ci", PYTHONHASHSEED="0"),
    )  # fmt: skip
    assert result.returncode == 1 and "CONFORMANCE SUITE FAILED" in result.stdout.splitlines()[-1], result.stdout[-3000:]
    assert "$.input_ids" in result.stdout and "new finding(s)" in result.stdout, result.stdout[-3000:]
