"""vLLM's KV-event golden vectors against the consumers in ``examples/``, each with its own strict failure list.

* ``examples/kv-events-rust`` (serde, rmp-serde): ``known-failures-vllm.txt``;
  findings in ``docs/findings/rust-kv-events.md``. Built with cargo (offline,
  Debian's crates) when missing or stale; skipped, with cargo's reason, where it
  cannot be built.
* ``examples/testee-node`` (@msgpack/msgpack): ``known-failures-vllm-kv-events.txt``;
  findings in ``docs/findings/javascript-msgpack.md``. Skipped without Node.js
  or ``npm ci --prefix examples/testee-node``.

A vector that starts or stops failing, or fails another way, fails the test:
the list is updated with the finding, never silently. Neither needs vLLM
(the vectors are files); with ``IPC_CONFORMANCE_VLLM_PYTHON`` naming a
Python with vLLM 0.34.0, the consumers' own encodings are also read back by
vLLM's codec (``--reference``) instead of by the consumer itself.
"""

from __future__ import annotations

import io
import os
import shutil
from typing import List, Optional

import pytest

from conformance.releases.tests.test_rust_kv_events import _rust_binary
from conformance.vectors.engine_testee import run_testee

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")


def _reference() -> Optional[List[str]]:
    python = os.environ.get("IPC_CONFORMANCE_VLLM_PYTHON")
    return [python, "-m", "conformance.releases.host", "--engine", "vllm", "--family", "kv-events"] if python else None


def _verdict(argv: List[str], failure_list: str) -> str:
    out = io.StringIO()
    status = run_testee("vllm", argv, family="kv-events", failure_list=failure_list, reference=_reference(), out=out)
    text = out.getvalue()
    assert status == 0, f"the vectors' verdict changed against {failure_list}:\n{text}"
    return text.rstrip().splitlines()[-1]


def test_the_rust_consumer_fails_exactly_the_vllm_kv_event_vectors_its_list_names():
    last = _verdict([_rust_binary()], os.path.join(EXAMPLES, "kv-events-rust", "known-failures-vllm.txt"))
    assert "5 expected failures, 0 unexpected failures, 0 unexpected passes" in last, last


@pytest.mark.skipif(
    shutil.which("node") is None or not os.path.isdir(os.path.join(EXAMPLES, "testee-node", "node_modules")),
    reason="needs Node.js and `npm ci --prefix examples/testee-node` (.ci/run does both)",
)
def test_the_node_testee_fails_exactly_the_vllm_kv_event_vectors_its_list_names():
    testee = ["node", os.path.join(EXAMPLES, "testee-node", "testee.js")]
    last = _verdict(testee, os.path.join(EXAMPLES, "testee-node", "known-failures-vllm-kv-events.txt"))
    assert "2 expected failures, 0 unexpected failures, 0 unexpected passes" in last, last

