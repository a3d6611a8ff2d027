"""An engine's golden vectors against any testee that answers the engine-neutral operations (``conformance/PROTOCOL.md`` §9).

::

    python -m conformance.vectors test --engine vllm --family kv-events \\
        --testee "examples/kv-events-rust/target/release/kv-events-rust" \\
        --failure-list examples/kv-events-rust/known-failures-vllm.txt

The vectors are files (:mod:`conformance.vectors.engine_format`), so this
needs neither the engine nor its codec. For every vector of the engine (of
``--family``, if given):

* ``decode_value`` with the vector's ``type`` and ``frames``: a ``y_`` vector
  must decode to ``expected`` exactly (strict comparison of the neutral
  forms: a missing or extra field, an int for a float, ``-0.0`` for ``0.0``
  all differ); an ``n_`` vector must be answered ``decode_error``; an ``i_``
  vector either, and if decoded, to ``expected`` when the engine decodes it.
* ``encode_value`` of a ``y_`` vector's ``input`` (where it has one): the
  testee must build it (``value`` equal to ``expected``) and its frames must
  read back, through ``decode_value`` of ``--reference`` (a §9 host of the
  engine's wire reference, such as ``python -m conformance.releases.host
  --engine vllm --family kv-events`` in the engine's environment), as
  ``expected``. Without ``--reference`` the testee reads its own frames back,
  and the verdict says so: that checks the testee against itself, not
  against the engine's wire.

Each failure is one *outcome* of one vector (:data:`OUTCOMES`); a failure
list names the expected ones, one per line::

    # VECTOR (family/file)                     OUTCOME   # reason
    kv-events/y_batch_with_appended_field.json refuses   # rmp-serde checks a tuple struct's length

Strict both ways: an outcome not listed fails the run, and so does a listed
outcome that did not happen (an unexpected pass: the list is stale or the
bug is fixed). Lines of vectors outside ``--family`` are not judged. The
last line is ``VECTORS PASSED|FAILED: ...`` with the counts; the exit status
is 0 only for PASSED.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .engine_format import EngineVector, load_engine_vectors

__all__ = ["OUTCOMES", "Outcome", "KnownFailure", "parse_failure_list", "check_vector", "run_testee", "MAX_DIFFERENCES"]

#: Every way a vector can fail, as a failure list names it.
OUTCOMES: Dict[str, str] = {
    "refuses": "a y_ vector answered decode_error",
    "accepts": "an n_ vector decoded",
    "differs": "a vector decoded to another value than expected",
    "error": "decode_value answered another error (unsupported, internal_error) or the testee crashed, timed out or answered malformed",
    "encode-invalid": "encode_value of a y_ vector's input was not built (invalid, unsupported, encode_error, a crash)",
    "encode-differs": "encode_value built another value than expected",
    "encode-misread": "the testee's encode_value frames were refused or read as another value",
}
#: Differing paths shown per failure.
MAX_DIFFERENCES = 8
_LINE = re.compile(r"^(?P<vector>\S+)\s+(?P<outcome>\S+)\s*(?:#\s*(?P<reason>.*))?$")


@dataclass(frozen=True)
class Outcome:
    """One failure of one vector: what happened, with the details a reader needs (error text, differing paths)."""

    vector: str  # "kv-events/y_x.json"
    outcome: str  # a key of OUTCOMES
    details: Tuple[str, ...] = ()


@dataclass(frozen=True)
class KnownFailure:
    """One line of a failure list."""

    vector: str
    outcome: str
    reason: str
    line: int


def parse_failure_list(path: str) -> List[KnownFailure]:
    """The lines of a failure list; ``ValueError`` naming the line for an unknown outcome, a missing reason or a repeated line."""
    entries: List[KnownFailure] = []
    seen = set()
    with open(path, encoding="utf-8") as fh:
        for number, raw in enumerate(fh, 1):
            text = raw.strip()
            if not text or text.startswith("#"):
                continue
            match = _LINE.match(text)
            if not match or match["outcome"] not in OUTCOMES:
                raise ValueError(f"{path}:{number}: expected 'FAMILY/VECTOR.json  OUTCOME  # reason' with OUTCOME one of {sorted(OUTCOMES)}: {text[:120]}")
            if not (match["reason"] or "").strip():
                raise ValueError(f"{path}:{number}: a known failure needs a reason after '#'")
            key = (match["vector"], match["outcome"])
            if key in seen:
                raise ValueError(f"{path}:{number}: {key[0]} {key[1]} is listed twice")
            seen.add(key)
            entries.append(KnownFailure(match["vector"], match["outcome"], match["reason"].strip(), number))
    return entries


def _bounded(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _ask(host: Any, op: str, **fields: Any) -> Dict[str, Any]:
    """The testee's answer; a crash, timeout or malformed answer becomes ``error_kind`` ``crashed`` with its message."""
    from conformance.testee.client import TesteeError

    try:
        return host.call(op, **fields)
    except TesteeError as exc:
        return {"ok": False, "error_kind": "crashed", "message": f"{type(exc).__name__}: {exc}"}


def check_vector(vector: EngineVector, testee: Any, reader: Any) -> List[Outcome]:
    """The failures of ``vector`` against ``testee`` (a :class:`~conformance.releases.confirm.HostProcess`); ``reader`` decodes the testee's own encodings."""
    from conformance.releases.values import differences

    def diff(expected: Any, got: Any) -> List[str]:
        return differences(expected, got, limit=MAX_DIFFERENCES, strict=True, words=("expected", "got"))

    found: List[Outcome] = []
    read = _ask(testee, "decode_value", type=vector.type, frames=list(vector.frames))
    if read.get("ok"):
        if vector.kind == "n":
            found.append(Outcome(vector.file, "accepts", (f"decoded to {_bounded(read.get('value'))}",)))
        elif vector.expected is not None:
            paths = diff(vector.expected, read.get("value"))
            if paths:
                found.append(Outcome(vector.file, "differs", tuple(paths)))
    elif read.get("error_kind") == "decode_error":
        if vector.kind == "y":
            found.append(Outcome(vector.file, "refuses", (f"decode_error: {str(read.get('message'))[:300]}",)))
    else:
        found.append(Outcome(vector.file, "error", (f"{read.get('error_kind')}: {str(read.get('message'))[:300]}",)))
    if vector.kind == "y" and vector.input is not None:
        found += _check_encode(vector, testee, reader, diff)
    return found


def _check_encode(vector: EngineVector, testee: Any, reader: Any, diff) -> List[Outcome]:
    made = _ask(testee, "encode_value", type=vector.type, value=vector.input)
    if not made.get("ok"):
        return [Outcome(vector.file, "encode-invalid", (f"{made.get('error_kind')}: {str(made.get('message'))[:300]}",))]
    out: List[Outcome] = []
    paths = diff(vector.expected, made.get("value"))
    if paths:
        out.append(Outcome(vector.file, "encode-differs", tuple(paths)))
    back = _ask(reader, "decode_value", type=vector.type, frames=list(made.get("frames") or []))
    if not back.get("ok"):
        out.append(Outcome(vector.file, "encode-misread", (f"{reader.name} answered {back.get('error_kind')}: {str(back.get('message'))[:300]}",)))
    else:
        paths = diff(vector.expected, back.get("value"))
        if paths:
            out.append(Outcome(vector.file, "encode-misread", (f"read by {reader.name}:", *paths)))
    return out


def _judge(outcomes: List[Outcome], known: Sequence[KnownFailure], files: Sequence[str]) -> Tuple[List[Outcome], List[Outcome], List[KnownFailure]]:
    """(expected failures, unexpected failures, listed lines that did not happen) among the vectors that ran (``files``)."""
    listed = {(k.vector, k.outcome): k for k in known}
    expected = [o for o in outcomes if (o.vector, o.outcome) in listed]
    unexpected = [o for o in outcomes if (o.vector, o.outcome) not in listed]
    happened = {(o.vector, o.outcome) for o in outcomes}
    ran = set(files)
    family_ran = {f.split("/")[0] for f in files}
    stale = [k for k in known if (k.vector, k.outcome) not in happened and (k.vector in ran or k.vector.split("/")[0] in family_ran)]
    return expected, unexpected, stale


def run_testee(
    engine_spec: str,
    argv: Sequence[str],
    *,
    family: Optional[str] = None,
    failure_list: Optional[str] = None,
    reference: Optional[Sequence[str]] = None,
    timeout: float = 30.0,
    out: Any = None,
) -> int:
    """Run every vector of the engine (of ``family``) against the testee ``argv``; print the verdict to ``out`` (stdout); 0 for PASSED, 1 for FAILED, 2 when nothing could run."""
    import sys

    from conformance.engines import find_engine
    from conformance.releases.confirm import HostProcess
    from conformance.testee.client import TesteeError

    out = out or sys.stdout
    engine = find_engine(engine_spec)
    declared = engine.value_vectors
    if declared is None:
        print(f"error: engine {engine.name!r} declares no value_vectors", file=out)
        return 2
    vectors = load_engine_vectors(declared.directory, family)
    if not vectors:
        print(f"error: {engine.name} has no vectors{f' of family {family!r}' if family else ''} in {os.path.basename(declared.directory)}", file=out)
        return 2
    known = parse_failure_list(failure_list) if failure_list else []
    try:
        testee = HostProcess(argv=argv, timeout=timeout)
    except TesteeError as exc:
        print(f"error: the testee did not start or say hello: {exc}", file=out)
        return 2
    try:
        reader = HostProcess(argv=reference, timeout=timeout) if reference else testee
    except TesteeError as exc:
        testee.close()
        print(f"error: the reference did not start or say hello: {exc}", file=out)
        return 2
    try:
        outcomes = [o for v in vectors for o in check_vector(v, testee, reader)]
    finally:
        testee.close()
        if reader is not testee:
            reader.close()
    files = [v.file for v in vectors]
    expected, unexpected, stale = _judge(outcomes, known, files)
    where = f"engine {engine.name} {declared.release}" + (f", family {family}" if family else "")
    print(f"testee {testee.name}: {len(vectors)} vectors of {where}", file=out)
    by_file = {v.file: v for v in vectors}
    for o in unexpected:
        v = by_file[o.vector]
        print(f"FAIL {o.vector} [{v.type}] {o.outcome} (testee {testee.name}): {OUTCOMES[o.outcome]}", file=out)
        print(f"  vector: {v.description}", file=out)
        print(f"  frames: {_bounded(' '.join(f.hex() for f in v.frames), 160)}", file=out)
        for line in o.details:
            print(f"  {line}", file=out)
    for k in stale:
        print(f"UNEXPECTED PASS {k.vector} {k.outcome} (listed at {failure_list}:{k.line}: {k.reason}): fixed, or the line is stale; remove it", file=out)
    if reference:
        print(f"encode_value frames read by the reference {reader.name}", file=out)
    else:
        print("encode_value frames read back by the testee itself (no --reference): the encode direction is checked against the testee, not the engine's wire", file=out)
    passed = len(set(files) - {o.vector for o in outcomes})
    verdict = "PASSED" if not unexpected and not stale else "FAILED"
    print(
        f"VECTORS {verdict}: {len(vectors)} vectors, {passed} without failures, {len(expected)} expected failures, "
        f"{len(unexpected)} unexpected failures, {len(stale)} unexpected passes",
        file=out,
    )
    return 0 if verdict == "PASSED" else 1
