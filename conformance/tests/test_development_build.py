"""The gate on an engine's development branch: a development build of SGLang is gated with no edit to the suite.

The build is made from the SGLang installed here (``tox -e sglang``), as a
pull request would change it: a copy of the package (a tree of links to the
installed files, with the changed files written out) whose version is
``X.dev0``, with one new message type, one field inserted mid-struct, and one
regression seeded into its codec. The gate run on it (``--codec sglang``, the
copy first on ``PYTHONPATH``) must

* find, draw and test the new type (its properties pass: nothing is wrong with it);
* name the insertion in the wire check against the last release: struct,
  field, both directions, what the receiver does;
* name the seeded regression in the properties, by path;
* pass every property of a message nothing was done to.

Skips without SGLang.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from conformance.engines.sglang.adapter import sglang_available

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(not sglang_available(), reason="needs SGLang (tox -e sglang)")

#: The new message type the development build adds (before io_struct builds its decoder's union).
NEW_TYPE = '''

class ConformanceProbeReqInput(BaseReq, kw_only=True):
    """Added by the development build of the suite's test: a message no release has."""

    note: str = ""
    token_ids: List[int] = msgspec.field(default_factory=list)


'''
#: The message a field is inserted into, before its second field, and the field.
INSERTED_INTO, INSERTED = "UpdateWeightFromDiskReqOutput", "    weights_checksum: Optional[str] = None\n"
#: The message whose decode the seeded regression breaks: its ``message`` is lost.
REGRESSED = "FlushCacheReqOutput"
REGRESSION = '''

_released_msgpack_decode = msgpack_decode


def msgpack_decode(data: bytes) -> Any:
    obj = _released_msgpack_decode(data)
    if type(obj).__name__ == "FlushCacheReqOutput":
        obj.message = ""  # the seeded regression: the text is lost on decode
    return obj
'''


def _link_tree(source: str, target: str, changed: set) -> None:
    """``target`` as ``source``, every file a link to the installed one, except the files in ``changed`` (relative paths,
    written afterwards) and their cached bytecode, which Python then writes into the copy, never into the installed tree."""
    for folder, _, files in os.walk(source):
        rel = os.path.relpath(folder, source)
        os.makedirs(os.path.join(target, rel), exist_ok=True)
        in_cache = os.path.basename(rel) == "__pycache__"
        module_folder = os.path.dirname(rel) if in_cache else rel
        stale = {os.path.splitext(os.path.basename(c))[0] for c in changed if os.path.normpath(os.path.dirname(c) or ".") == os.path.normpath(module_folder)}
        for name in files:
            path = os.path.normpath(os.path.join(rel, name))
            if path in changed or (in_cache and name.split(".")[0] in stale):
                continue
            os.symlink(os.path.join(folder, name), os.path.join(target, path))


def _development_build(tmp_path):
    """A development build of the installed SGLang under ``tmp_path``: ``(folder to put first on PYTHONPATH, its version)``."""
    import sglang
    import sglang.srt.managers.io_struct as io

    package = os.path.dirname(os.path.abspath(sglang.__file__))
    io_rel = os.path.relpath(os.path.abspath(io.__file__), package)
    changed = {io_rel, "_version.py", "version.py"}
    root = tmp_path / "devbuild"
    _link_tree(package, str(root / "sglang"), changed)
    released = getattr(sglang, "__version__", "0.0.0")
    base = re.match(r"(\d+)\.(\d+)\.(\d+)", released)
    assert base, released
    dev = f"{base.group(1)}.{base.group(2)}.{int(base.group(3)) + 1}.dev0"
    (root / "sglang" / "version.py").write_text(f'__version__ = "{dev}"\n__version_tuple__ = tuple(__version__.split("."))\n')
    (root / "sglang" / "_version.py").write_text(f'__version__ = version = "{dev}"\n')
    source = open(io.__file__, encoding="utf-8").read()
    head, sep, tail = source.partition("\n_struct_types = tuple(")
    assert sep, "io_struct has no _struct_types union: the development build needs another anchor"
    source = head + NEW_TYPE + sep + tail
    cls = re.search(rf"^class {INSERTED_INTO}\(BaseReq, kw_only=True\):\n(    .*\n)", source, re.M)
    assert cls, f"{INSERTED_INTO} is not declared as the test expects"
    source = source[: cls.end(1)] + INSERTED + source[cls.end(1) :]
    source += REGRESSION
    (root / "sglang" / io_rel).write_text(source, encoding="utf-8")
    return str(root), dev


def test_a_development_build_is_gated_without_an_edit_to_the_suite(tmp_path):
    build, dev = _development_build(tmp_path)
    report = tmp_path / "gate.json"
    selected = [
        f"conformance/suite/test_roundtrip.py::test_decode_of_encode_is_equivalent_to_the_message[{t}]" for t in ("ConformanceProbeReqInput", REGRESSED, INSERTED_INTO, "AbortReq")
    ] + [
        "conformance/suite/test_pickle_agreement.py::test_decodes_to_what_pickle_decodes[ConformanceProbeReqInput]",
        "conformance/suite/test_release_wire.py",
    ]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([build, ROOT]), SGLANG_USE_PICKLE_IPC="0", PYTHONHASHSEED="0")
    env.pop("IPC_CONFORMANCE_ENGINE", None)
    result = subprocess.run(
        [sys.executable, "-m", "conformance", "--codec", "sglang", "--report", str(report), "-p", "no:xdist", *selected],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=900,
    )  # fmt: skip
    out = result.stdout
    assert result.returncode == 1, out[-4000:]
    assert f"sglang {dev} installed here" in out, out[:3000]
    outcomes = {nodeid.split("::")[-1]: test["outcome"] for nodeid, test in json.loads(report.read_text())["tests"].items()}

    # The new type: found in the build's own classes, drawn and tested, and it conforms.
    assert outcomes["test_decode_of_encode_is_equivalent_to_the_message[ConformanceProbeReqInput]"] == "passed", outcomes
    assert outcomes["test_decodes_to_what_pickle_decodes[ConformanceProbeReqInput]"] == "passed", outcomes
    assert outcomes["test_the_wire_against_the_last_release_breaks_no_peer[io/ConformanceProbeReqInput]"] == "passed", outcomes  # new, not a break

    # The insertion: named by the wire check, with the field, both directions and the receivers' fate.
    assert outcomes[f"test_the_wire_against_the_last_release_breaks_no_peer[io/{INSERTED_INTO}]"] == "failed", outcomes
    assert "breaks the wire with sglang " in out and f"at io/{INSERTED_INTO}: field inserted weights_checksum" in out, out[-6000:]
    assert re.search(rf"{INSERTED_INTO}: field inserted: 'weights_checksum' at \d+ of \d+, before 'message'.*old sender -> this build: (refuses|misreads)", out), out[-6000:]
    assert "breaks both" in out, out[-6000:]

    # The seeded regression: named by the round trip, by path.
    assert outcomes[f"test_decode_of_encode_is_equivalent_to_the_message[{REGRESSED}]"] == "failed", outcomes
    assert "$.message" in out, out[-6000:]

    # Nothing else fails: the untouched message, the inserted one within one build, every other wire case.
    assert outcomes["test_decode_of_encode_is_equivalent_to_the_message[AbortReq]"] == "passed", outcomes
    assert outcomes[f"test_decode_of_encode_is_equivalent_to_the_message[{INSERTED_INTO}]"] == "passed", outcomes
    failed = sorted(name for name, outcome in outcomes.items() if outcome == "failed")
    # The build is compared with the installed release's own snapshot (the newest older than X.dev0): only what the build changed differs.
    assert failed == sorted([f"test_decode_of_encode_is_equivalent_to_the_message[{REGRESSED}]", f"test_the_wire_against_the_last_release_breaks_no_peer[io/{INSERTED_INTO}]"]), failed
