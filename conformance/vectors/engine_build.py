"""Writing and checking an engine's engine-neutral golden vectors from its cases, with the engine's own codec.

An engine that declares :class:`~conformance.engines.profile.ValueVectors`
lists its cases (:class:`ValueCase`) in the module it names. Each case says
its family, message type and kind, and builds either a message of the
engine's own classes (written by the family's own codec, as its processes
write it) or :class:`Frames` made by hand. Every vector is then *read* by the
family's own decoder through :class:`conformance.releases.host.CodecHost`,
the same host that answers ``conformance/PROTOCOL.md`` §9 for the engine, so
``expected`` is that host's neutral form of what the engine decoded, and
``input`` is checked to build, through the host's ``encode_value``, the same
value. Nothing is written that the engine's codec does not agree with:

* ``y_``: the engine decodes it; a built message decodes to its own neutral form.
* ``n_``: the engine refuses it, with ``reject_reason`` in its message.
* ``i_``: ``expected`` records what the engine does (its value, or null: refused).

Generating needs the engine importable, at the declared release (for vLLM,
a Python with vLLM 0.34.0: ``tox -e rust-consumer``'s, or the release
history's cached environment, ``python -m conformance.releases envs``)::

    python -m conformance.vectors generate --engine vllm

Checking the files' format does not; :func:`check_engine` says why it did not
regenerate when it cannot.
"""

from __future__ import annotations

import difflib
import importlib
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import msgspec

from .build import VectorError, _format
from .engine_format import ENGINE_FIELDS, engine_vector_files, load_engine_vectors
from .format import check_description
from .plain_json import to_json

__all__ = ["Frames", "ValueCase", "case_registrar", "engine_cases", "engine_expected_files", "generate_engine", "check_engine", "regeneration_skip_reason"]


@dataclass(frozen=True)
class Frames:
    """What a hand-made case returns: the frames, exactly as a socket would carry them."""

    frames: Sequence[bytes]


@dataclass(frozen=True)
class ValueCase:
    """One engine vector: ``build()`` returns a message of the engine's classes or :class:`Frames` (it may import the engine)."""

    name: str
    family: str
    type: str
    description: str
    build: Callable[[], Any]
    reject_reason: Optional[str] = None

    def __post_init__(self) -> None:
        check_description(f"vector {self.name}", self.description)

    @property
    def kind(self) -> str:
        return self.name[0]

    @property
    def file(self) -> str:
        return f"{self.family}/{self.name}.json"


def case_registrar(family: str, cases: List[ValueCase]) -> Callable[..., Callable[[Callable[[], Any]], Callable[[], Any]]]:
    """For a cases module: ``case(name, type_name, description, reason=None)``, a decorator that appends the ``ValueCase`` its function builds to ``cases``."""

    def case(name: str, type_name: str, description: str, reason: Optional[str] = None) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
        def register(build: Callable[[], Any]) -> Callable[[], Any]:
            cases.append(ValueCase(name, family, type_name, description, build, reason))
            return build

        return register

    return case


def engine_cases(module: str) -> List[ValueCase]:
    """The ``CASES`` of the cases module ``module``; importing it must not need the engine."""
    cases = getattr(importlib.import_module(module), "CASES", None)
    if not isinstance(cases, list) or not all(isinstance(c, ValueCase) for c in cases):
        raise VectorError(f"{module}.CASES must be a list of ValueCase")
    return cases


def _declaration(engine_spec: str):
    from conformance.engines import find_engine

    engine = find_engine(engine_spec)
    if engine.value_vectors is None:
        raise VectorError(f"engine {engine.name!r} declares no value_vectors")
    return engine, engine.value_vectors


def regeneration_skip_reason(engine_spec: str) -> Optional[str]:
    """Why this process cannot regenerate ``engine_spec``'s vectors (the engine is not importable, or is another release), or None."""
    from conformance.schema_diff.snapshot import installed_version

    engine, declared = _declaration(engine_spec)
    if engine.package is not None:
        try:
            importlib.import_module(engine.package)
        except Exception as exc:  # an engine that fails to import for any reason cannot write vectors here
            return f"{engine.package} is not importable here ({type(exc).__name__}: {str(exc)[:120]})"
        version = installed_version(engine.package)
        if version != declared.release:
            return f"{engine.package} {version} is installed; the vectors are {engine.name} {declared.release}'s"
    return None


class _Hosts:
    """One :class:`~conformance.releases.host.CodecHost` per family, created on first use."""

    def __init__(self, engine_spec: str) -> None:
        self.engine_spec = engine_spec
        self.hosts: Dict[str, Any] = {}

    def __call__(self, family: str) -> Any:
        if family not in self.hosts:
            from conformance.releases.host import CodecHost

            self.hosts[family] = CodecHost(self.engine_spec, family)
        return self.hosts[family]


def _ask(host: Any, **request: Any) -> Dict[str, Any]:
    return host.handle({"id": 0, **request})


def _frames_of(host: Any, built: Any) -> List[bytes]:
    if isinstance(built, Frames):
        return [bytes(f) for f in built.frames]
    return [bytes(memoryview(f).cast("B")) for f in host.codec.encode(built)]


def _input_of(obj: Any) -> Any:
    """The message as plain values shaped for ``msgspec.convert`` into its class, or None where it holds a value with no plain form."""
    try:
        return msgspec.to_builtins(obj, builtin_types=(bytes, bytearray, memoryview))
    except TypeError:
        return None


def build_engine_vector(case: ValueCase, hosts: Callable[[str], Any], engine: str, release: str) -> Dict[str, Any]:
    """The file content of ``case``, verified against the family's own codec; :class:`VectorError` otherwise."""
    from conformance.releases.host import neutral
    from conformance.releases.values import differences

    where = case.file
    if case.kind not in "yni" or case.name[1:2] != "_":
        raise VectorError(f"{where}: a vector name starts with y_, n_ or i_")
    if (case.reject_reason is not None) != (case.kind == "n"):
        raise VectorError(f"{where}: n_ vectors, and only they, have a reject_reason")
    host = hosts(case.family)
    if case.type not in host.types:
        raise VectorError(f"{where}: family {case.family!r} has no message type {case.type!r}")
    try:
        built = case.build()
        frames = _frames_of(host, built)
    except Exception as exc:
        raise VectorError(f"{where}: building the case failed: {type(exc).__name__}: {exc}") from exc
    read = _ask(host, op="decode_value", type=case.type, frames=frames)
    expected = given = None
    if case.kind == "n":
        if read["ok"]:
            raise VectorError(f"{where}: {host.name} decodes this n_ vector")
        assert case.reject_reason is not None
        if read["error_kind"] != "decode_error" or case.reject_reason not in read["message"]:
            raise VectorError(f"{where}: reject_reason {case.reject_reason!r} is not in {host.name}'s {read['error_kind']}: {read['message']!r}")
    elif read["ok"]:
        expected = read["value"]
        if not isinstance(built, Frames):
            diffs = differences(neutral(built), expected, strict=True, words=("built", "decoded"))
            if diffs:
                raise VectorError(f"{where}: {host.name} decodes the message differently from how it was built: {'; '.join(diffs)}")
    elif case.kind == "y":
        raise VectorError(f"{where}: {host.name} refuses this y_ vector: {read['message']}")
    if case.kind == "y":
        decoded = host.codec.decode(frames, host.types[case.type])
        given = _input_of(decoded)
        if given is not None:
            made = _ask(host, op="encode_value", type=case.type, value=given)
            if not made["ok"]:
                raise VectorError(f"{where}: {host.name} cannot build the input back: {made['error_kind']}: {made['message']}")
            diffs = differences(expected, made["value"], strict=True, words=("decoded", "built from input"))
            if diffs:
                raise VectorError(f"{where}: the input builds another value: {'; '.join(diffs)}")
    return {
        "name": case.name,
        "description": case.description,
        "engine": engine,
        "release": release,
        "family": case.family,
        "type": case.type,
        "frames": [f.hex() for f in frames],
        "expected": to_json(expected),
        "input": to_json(given),
        "reject_reason": case.reject_reason,
    }


def render_engine_vector(vector: Dict[str, Any]) -> str:
    """The exact text of an engine vector file: ASCII JSON, the layout of the reference vectors, one trailing newline."""
    return _format({key: vector[key] for key in ENGINE_FIELDS}, 0, 100) + "\n"


def engine_expected_files(engine_spec: str) -> Dict[str, str]:
    """``{"<family>/<name>.json": text}`` for every case of the engine: what :func:`generate_engine` writes (needs the engine)."""
    engine, declared = _declaration(engine_spec)
    cases = engine_cases(declared.cases)
    seen: Dict[str, ValueCase] = {}
    families = {f.name for f in engine.families}
    for case in cases:
        if case.file in seen:
            raise VectorError(f"two cases named {case.file!r}")
        if case.family not in families:
            raise VectorError(f"{case.file}: engine {engine.name!r} has no family {case.family!r} ({sorted(families)})")
        seen[case.file] = case
    hosts = _Hosts(engine_spec)
    return {case.file: render_engine_vector(build_engine_vector(case, hosts, engine.name, declared.release)) for case in cases}


def generate_engine(engine_spec: str) -> Tuple[List[str], List[str]]:
    """Write every vector of the engine and delete stale ones; (written, removed) relative paths. ``VectorError`` where the engine cannot regenerate here."""
    why = regeneration_skip_reason(engine_spec)
    if why is not None:
        raise VectorError(f"cannot generate {engine_spec}'s vectors: {why}")
    _, declared = _declaration(engine_spec)
    files = engine_expected_files(engine_spec)
    current = engine_vector_files(declared.directory)
    written, removed = [], []
    for rel, text in sorted(files.items()):
        if current.get(rel) != text:
            path = os.path.join(declared.directory, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="ascii", newline="\n") as fh:
                fh.write(text)
            written.append(rel)
    for rel in sorted(set(current) - set(files)):
        os.remove(os.path.join(declared.directory, rel))
        removed.append(rel)
    return written, removed


def check_engine(engine_spec: str) -> Tuple[List[str], Optional[str], int]:
    """(problems, skip, count) for the engine's vector files.

    Always: every file parses, names the engine and release declared, sits in
    a folder of one of the engine's families, and one case generates each
    (by name). Where the engine can regenerate here (``skip`` is None), every
    file must also be exactly what :func:`generate_engine` writes; otherwise
    ``skip`` says why that part did not run.
    """
    engine, declared = _declaration(engine_spec)
    problems: List[str] = []
    try:
        vectors = load_engine_vectors(declared.directory)
    except ValueError as exc:
        return [str(exc)], None, 0
    families = {f.name for f in engine.families}
    for vector in vectors:
        if vector.engine != engine.name or vector.release != declared.release:
            problems.append(f"{vector.file}: written for {vector.engine} {vector.release}, not {engine.name} {declared.release}")
        if vector.family not in families:
            problems.append(f"{vector.file}: {engine.name} has no family {vector.family!r}")
    named = {case.file for case in engine_cases(declared.cases)}
    on_disk = {vector.file for vector in vectors}
    problems += [f"{rel}: missing" for rel in sorted(named - on_disk)]
    problems += [f"{rel}: no case generates it (stale file)" for rel in sorted(on_disk - named)]
    skip = regeneration_skip_reason(engine_spec)
    if skip is None and not problems:
        files, current = engine_expected_files(engine_spec), engine_vector_files(declared.directory)
        for rel in sorted(files):
            if current.get(rel) != files[rel]:
                old, new = current.get(rel, "").splitlines(), files[rel].splitlines()
                diff = [line for line in difflib.unified_diff(old, new, lineterm="", n=0) if line[:1] in "+-" and line[:3] not in ("+++", "---")]
                first = diff[0] if diff else "(whitespace or line endings)"
                problems.append(f"{rel}: differs from what {engine.name} {declared.release} writes ({len(diff)} changed lines; first: {first[:120]})")
    return problems, skip, len(vectors)
