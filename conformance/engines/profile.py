"""The engine description every generic part of the suite reads, and how one is selected."""

from __future__ import annotations

import functools
import importlib
import os
import pkgutil
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from .default import DEFAULT_ENGINE

__all__ = [
    "Engine",
    "MessageFamily",
    "VectorValueUnavailable",
    "Release",
    "ValueVectors",
    "ENGINES",
    "ENGINE_ENV",
    "DEFAULT_ENGINE",
    "EngineSelectionError",
    "FamilyNotInRelease",
    "family_absent",
    "family_roots",
    "installed_version",
    "load_engine",
    "find_engine",
    "engine_from_environment",
    "engine_spec_from_environment",
]

ENGINE_ENV = "IPC_CONFORMANCE_ENGINE"
#: The codec under test (read here only to infer the engine; :mod:`conformance.plugin` loads it).
CODEC_ENV = "IPC_CONFORMANCE_CODEC"


def _builtin_engines() -> Dict[str, str]:
    # Every subpackage of conformance.engines is an engine: adding one edits no list here.
    # Found by file, not by import, so naming the engines loads none of them.
    here = os.path.dirname(os.path.abspath(__file__))
    return {
        info.name: f"{__package__}.{info.name}:ENGINE"
        for info in sorted(pkgutil.iter_modules([here]), key=lambda info: info.name)
        if info.ispkg
    }


#: Built-in engines: name -> ``MODULE:ATTR`` of its :class:`Engine` (imported only when selected).
ENGINES: Mapping[str, str] = _builtin_engines()


class FamilyNotInRelease(ImportError):
    """A family's ``roots`` cannot be read in the release installed here for a reason other than a missing module: its shapes are declared for another release, say. Reported as absent, with the reason, like a module the release lacks."""


def family_absent(exc: BaseException, package: Optional[str]) -> bool:
    """Whether ``exc``, raised by a family's ``roots``, means the installed release does not have the family (a module of the engine's own
    ``package`` is missing, or :class:`FamilyNotInRelease`), rather than that this environment lacks a dependency."""
    if isinstance(exc, FamilyNotInRelease):
        return True
    missing = getattr(exc, "name", None)
    return bool(isinstance(exc, ModuleNotFoundError) and package and missing and (missing == package or missing.startswith(package + ".")))


def installed_version(package: Optional[str]) -> Optional[str]:
    """The version of ``package`` this process runs, or None (not installed, or no package named).

    The imported package's own ``__version__`` when it is imported already (a
    development build on ``PYTHONPATH`` says its own, where the distribution
    installed beside it would say another), else the installed distribution's.
    """
    if not package:
        return None
    imported = getattr(sys.modules.get(package), "__version__", None)
    if isinstance(imported, str) and imported:
        return imported
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def family_roots(
    families: Sequence["MessageFamily"], package: Optional[str], owner: str
) -> Tuple[Dict[str, Mapping[str, type]], Dict[str, str]]:
    """``(roots, absent)``: each family's roots that the installed release of ``package`` has, and for each family it lacks the reason.

    A family whose modules fail to import for another reason (this
    environment lacks a dependency) raises ``ImportError`` naming ``owner``
    (the engine) and the family.
    """
    roots: Dict[str, Mapping[str, type]] = {}
    absent: Dict[str, str] = {}
    for family in families:
        try:
            roots[family.name] = family.roots()
        except ImportError as exc:
            if not family_absent(exc, package):
                raise ImportError(f"{owner} family {family.name!r} ({family.description}) does not import: {exc}") from exc
            absent[family.name] = str(exc) if isinstance(exc, FamilyNotInRelease) else f"the release has no module {getattr(exc, 'name', None) or exc}"
    return roots, absent


class EngineSelectionError(RuntimeError):
    """The engine named cannot be found or loaded (its package is not installed, the spec is wrong)."""


def _nothing() -> None:
    return None


def _same_value(value: Any) -> Any:
    return value


class VectorValueUnavailable(RuntimeError):
    """A golden vector's expected value cannot be built with the installed engine's classes (they differ from those the vectors were written for); the message says how."""


def _no_samples(seed: int) -> Sequence[Tuple[str, Any]]:
    return ()


def _no_ext_types() -> Mapping[int, str]:
    return {}


def _no_report() -> List[str]:
    return []


@dataclass(frozen=True)
class MessageFamily:
    """Messages that cross one kind of boundary of an engine (its IPC sockets, its KV-event stream, a handshake).

    It is what a schema snapshot records (:mod:`conformance.schema_diff`), and
    it is declared so that it resolves in *any* release of the engine: the
    snapshot of an older release is written in that release's own
    environment, from its runtime classes.

    Attributes
    ----------
    name
        Short and stable across releases (``"engine-core"``, ``"kv-events"``):
        snapshots of two releases are compared family by family.
    description
        One line for reports.
    roots
        ``() -> {name: class}``: the message types a frame of this family can
        be, found in the release's modules when called (import inside). Every
        struct, dataclass or NamedTuple reachable from a root is part of the
        family. ``ImportError`` when the release does not have the family
        (it appeared later).
    framing
        ``"tagged"``: a frame says its own type (a tag field);
        ``"typed"``: the socket's declared type says it.
    ext_types
        ``() -> {code: what}``: the msgpack ext codes the engine's codec
        writes for this family (tensors, arrays, pickled fallbacks), from the
        release's own constants.
    codec
        ``() -> codec`` with ``encode(obj) -> [frame, ...]`` and
        ``decode(frames, cls) -> obj``: the release's own encoder and decoder
        for this family, as its processes use them (``cls`` is the socket's
        declared type; a tagged family may ignore it). ``None``: a plain
        ``msgspec.msgpack`` encoder and a decoder of ``cls``, which is what a
        family published for other programs (KV events) is written and read
        with.
    channels
        Sockets on which several of the family's types arrive untagged, by
        name: the types in the order the receiver tries them (Mooncake's
        prefill side channel: a lease heartbeat first, then a pull). The
        suite checks that a later type's message is never read as an earlier
        one (:mod:`conformance.suite.test_shared_channels`).
    """

    name: str
    description: str
    roots: Callable[[], Mapping[str, type]]
    framing: str = "tagged"
    ext_types: Callable[[], Mapping[int, str]] = _no_ext_types
    codec: Optional[Callable[[], Any]] = None
    channels: Mapping[str, Tuple[str, ...]] = field(default_factory=dict)

    def new_codec(self, roots: Optional[Mapping[str, type]] = None) -> Any:
        """A new instance of the family's codec: its own, or a :class:`~conformance.engines.plain_codec.PlainCodec` (for a tagged family, decoding any of ``roots`` by its tag)."""
        if self.codec is not None:
            return self.codec()
        from .plain_codec import PlainCodec

        return PlainCodec(list(roots.values()) if roots and self.framing == "tagged" else ())


@dataclass(frozen=True)
class Release:
    """One published release of an engine, as the release history installs it (:mod:`conformance.releases`).

    ``requirements`` are installed with ``--no-deps`` beside the engine's own
    wheel (also ``--no-deps``): the pure-Python packages its family modules
    import on a CPU machine, pinned, so an environment built a year later
    imports the same code.
    """

    version: str
    requirements: Tuple[str, ...] = ()


@dataclass(frozen=True)
class ValueVectors:
    """Where an engine keeps its engine-neutral golden vectors (:mod:`conformance.vectors.engine_format`), and what writes them.

    ``directory`` holds one folder per message family, each with ``y_``,
    ``n_`` and ``i_`` files; they are read without the engine installed.
    ``cases`` is the module (``"pkg.mod"``) whose ``CASES`` list
    (:class:`conformance.vectors.engine_build.ValueCase`) generates them; it
    may import the engine only inside each case's ``build``. ``release`` is
    the engine release the files were generated with: regenerating them
    with another is refused (the files state what that release does).
    """

    directory: str
    cases: str
    release: str


@dataclass(frozen=True)
class Engine:
    """One engine's IPC wire as the suite sees it.

    Attributes
    ----------
    name, description
        Shown in the run's header and in errors.
    message_types
        ``() -> {name: class}``: every message type a socket of the engine
        carries; each name is a test id (``test_roundtrip[EngineCoreRequest]``).
        Called once, after :attr:`setup`.
    message_strategy
        ``(class) -> SearchStrategy`` of valid messages of that type.
    codecs
        Built-in codecs by name: ``--codec NAME`` within this engine. Each
        value is a factory called with no arguments.
    pickle_baseline
        Factory of the codec the pickle-agreement property compares with.
    typed_frames
        False: a frame says its own type (a tag), ``decode(frames)``. True:
        the socket's declared type says it, and a codec under test must offer
        ``decode(frames, type)`` (``typed_decode = True``).
    wire_reference
        ``(out_of_band: bool) -> codec`` whose bytes define the engine's wire,
        read and written by the producer/consumer and schema-evolution
        properties for codecs that declare ``wire_compatible``. ``None``: the
        engine has no wire reference and those properties are skipped.
    vectors_dir
        Golden vectors (``conformance/vectors`` layout), or ``None``.
    vector_value
        ``(value) -> value``: a vector's expected value (built with the
        classes :mod:`conformance.neutral` knows) as the engine's codecs
        decode it; identity by default. It raises
        :class:`VectorValueUnavailable` (the vector's value check is skipped,
        saying why) where the installed classes cannot hold it.
    samples
        ``(seed) -> [(label, message)]``: realistic, tensor-heavy messages
        beside the drawn ones; the fuzz loop seeds from them too, and the
        transport helpers' test sends the last one. Empty by default.
    bench_codecs
        Codecs of the engine the benchmarks measure beside the reference
        codec, on the reference schema's corpus: name -> factory of an object
        with ``prepare(msg)``, ``encode(obj)`` and ``decode(frames)``
        (:class:`conformance.benchmarks.codecs.BenchCodec`). A factory raises
        ``ImportError`` when the engine's package is not installed.
    bench_target
        The name in :attr:`bench_codecs` that the reference codec's speed
        targets compare with, or ``None``.
    bench_labels
        Name in :attr:`bench_codecs` -> what the benchmark tables call it
        (column header, target lines, skip reasons), e.g. the engine and its
        release; known without calling the factory. A name absent here is
        shown as itself.
    reference_schema
        True when the engine's messages are the reference schema's
        (``reference_codec.schema``): the testee protocol
        (``conformance/PROTOCOL.md``), the golden vectors and the fuzz
        findings carry their neutral form. Other engines take a Python codec
        (``--codec MODULE:ATTR``).
    setup
        Run once when the engine is loaded: imports, environment the engine
        reads at import, equivalence rules (``register_rule``).
    package
        The engine's distribution on the package index (``"vllm"``), or ``None``.
    families
        The :class:`MessageFamily` s of the engine's wire, for schema
        snapshots and cross-release checks; empty when none is declared.
    releases
        The published releases the release history covers, oldest first.
    snapshots_dir
        Where the release history keeps the engine's schema snapshots
        (``<name>-<version>.json``), checked in; ``None``: none kept.
    value_vectors
        The engine's engine-neutral golden vectors (:class:`ValueVectors`),
        checked by ``python -m conformance.vectors check`` and sent to any
        testee by ``python -m conformance.vectors test --engine NAME``;
        ``None``: none.
    live_frontend
        ``() -> front end``: the engine's real serving front end (its HTTP
        server and IPC processes, started for real) for ``python -m
        conformance.live --frontend NAME``: IPC modes, a server per mode, a
        seeded workload, normalised answers, the control requests and the
        engine's own benchmark command; the interface is in
        :mod:`conformance.live.frontend`. Imports inside (the engine's
        package need not be installed to load the engine). ``None``: the
        engine has none.
    report
        ``() -> [line, ...]``: what a run's summary (and its JSON report) says
        about the engine installed here beside the verdict, e.g. how far the
        reference schema is from its classes; called after the run, once.
        Informational: it never changes the verdict.
    """

    name: str
    description: str
    message_types: Callable[[], Mapping[str, type]]
    message_strategy: Callable[[type], Any]
    codecs: Mapping[str, Callable[[], Any]]
    pickle_baseline: Callable[[], Any]
    typed_frames: bool = False
    wire_reference: Optional[Callable[[bool], Any]] = None
    vectors_dir: Optional[str] = None
    vector_value: Callable[[Any], Any] = _same_value
    samples: Callable[[int], Sequence[Tuple[str, Any]]] = _no_samples
    reference_schema: bool = False
    bench_codecs: Mapping[str, Callable[[], Any]] = field(default_factory=dict)
    bench_target: Optional[str] = None
    bench_labels: Mapping[str, str] = field(default_factory=dict)
    setup: Callable[[], None] = _nothing
    package: Optional[str] = None
    families: Sequence[MessageFamily] = ()
    releases: Sequence[Release] = ()
    snapshots_dir: Optional[str] = None
    value_vectors: Optional[ValueVectors] = None
    live_frontend: Optional[Callable[[], Any]] = None
    report: Callable[[], List[str]] = _no_report

    @functools.cached_property
    def types(self) -> Mapping[str, type]:
        """:attr:`message_types`, resolved once."""
        found = dict(self.message_types())
        if not found:
            raise EngineSelectionError(f"engine {self.name!r} declares no message types")
        return found

    def __hash__(self) -> int:
        return hash(self.name)


_loaded: Dict[str, Engine] = {}


def find_engine(spec: Optional[str] = None) -> Engine:
    """The :class:`Engine` that ``spec`` names (a key of :data:`ENGINES` or ``MODULE:ATTR``), imported but not set up: the engine's own package need not be installed in this process."""
    spec = (spec or DEFAULT_ENGINE).strip()
    target = ENGINES.get(spec, spec)
    if ":" not in target:
        raise EngineSelectionError(f"unknown engine {spec!r}: use one of {sorted(ENGINES)} or MODULE:ATTR naming an Engine")
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise EngineSelectionError(f"engine {spec!r}: cannot import {module_name!r}: {exc}") from exc
    engine = getattr(module, attr, None)
    if not isinstance(engine, Engine):
        raise EngineSelectionError(f"engine {spec!r}: {target} is {engine!r}, not a conformance.engines.Engine")
    return engine


def load_engine(spec: Optional[str] = None) -> Engine:
    """The engine named by ``spec`` (a key of :data:`ENGINES` or ``MODULE:ATTR``), set up once per process."""
    spec = (spec or DEFAULT_ENGINE).strip()
    if spec in _loaded:
        return _loaded[spec]
    engine = find_engine(spec)
    try:
        engine.setup()
        engine.types  # noqa: B018 - resolve now: a missing engine package fails here, with its name
    except ImportError as exc:
        raise EngineSelectionError(f"engine {spec!r} needs its package installed: {exc}") from exc
    _loaded[spec] = engine
    return engine


def engine_spec_from_environment() -> str:
    """The engine a run tests, without loading it: what ``$IPC_CONFORMANCE_ENGINE`` names; else, when the codec
    ``$IPC_CONFORMANCE_CODEC`` names is also the name of a built-in engine (``sglang``, ``vllm``: the engine's
    own codec), that engine; else the default (:data:`DEFAULT_ENGINE`)."""
    named = os.environ.get(ENGINE_ENV)
    if named:
        return named
    return engine_named_by(os.environ.get(CODEC_ENV)) or DEFAULT_ENGINE


def engine_named_by(codec: Optional[str]) -> Optional[str]:
    """The built-in engine a ``--codec`` is named after (``sglang``, ``vllm``: that engine's own codec), or None."""
    codec = (codec or "").strip()
    return codec if codec in ENGINES else None


def engine_from_environment() -> Engine:
    """The engine :func:`engine_spec_from_environment` names, set up."""
    return load_engine(engine_spec_from_environment())
