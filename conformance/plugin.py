"""The one injection point: which implementation the suite tests, and what it declares.

An implementation under test is any object with

    encode(msg) -> list of bytes-like frames
    decode(frames) -> msg                 (or decode(frames, type) -> msg)

over the messages of the selected engine (:mod:`conformance.engines`; by
default SGLang's, the reference schema :mod:`reference_codec.schema`). It may declare
capabilities as attributes; absent ones take the defaults of
:class:`Capabilities`:

    name              str, shown in every failure message
    wire_compatible   bool, True if its bytes are reference wire (v1 or v2), so
                      the reference must read them and it must read the reference's
    decode_error      exception type (or tuple) it raises on bad input
    out_of_band       bool, True if it may return more than one frame
    devices           tuple of device strings it preserves ("cpu", "cuda:0", ...)
    executes_code_on_decode
                      bool, True for pickle-like codecs: the bad-input
                      properties are skipped (damaged input would run code)
    unsupported_dtypes
                      tensor dtype names it cannot carry; the suite casts such
                      tensors to float32 before testing it (and says so)
    byte_stable       bool, False if re-encoding a decoded message may give
                      other bytes for the same value (pickle's memo); the
                      second-hop property then checks values only
    native_byte_order_only
                      bool, True if ndarrays come back in native byte order
                      (values kept); the suite converts non-native ndarrays
                      before testing it (and says so)
    typed_decode      bool, True if ``decode`` takes the message type as a
                      second argument; required by engines whose frames do
                      not say their type (vLLM: the socket does)
    keeps_requires_grad
                      bool, False if tensors arrive detached from autograd
                      (values kept); the suite detaches tensors before
                      testing it (and says so)
    structured_ndarrays
                      bool, False if ndarrays of structured (void) dtypes
                      cannot be sent; the suite sends their bytes as uint8
                      arrays instead (and says so)
    thread_safe       bool, False if one instance must not encode from two
                      threads at once; the transport property's senders then
                      take turns
    map_location      str or None: where the codec places a tensor sent from a
                      device this process lacks ("cpu"); None (the default)
                      means it refuses such a tensor with its decode error.
                      Placing it anywhere else is a silent device drop
    as_held(msg)      optional method: the message as the engine's own
                      classes hold it once constructed (an engine that
                      normalises or validates in its constructors); the suite
                      draws through it, so construction-time rewrites are the
                      expected value and messages its constructors refuse are
                      not drawn
    message_types     optional mapping {tag: class} of the codec's own
                      message classes, for the schema-evolution property

Select it with ``python -m conformance --codec SPEC`` or the environment
variable ``IPC_CONFORMANCE_CODEC=SPEC``. SPEC is a built-in name of the engine
(``--engine``: each engine lists its own in ``Engine.codecs``) or ``MODULE:ATTR``, where ATTR is the object itself or a
class or factory called with no arguments. ``--testee "CMD ARGS"`` (or
``IPC_CONFORMANCE_TESTEE``) selects a program speaking the testee protocol
(``conformance/PROTOCOL.md``) instead.
"""

from __future__ import annotations

import importlib
import os
import shlex
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple, Type, Union

import msgspec

from .engines import Engine, EngineSelectionError, engine_from_environment
from .engines.profile import CODEC_ENV
from .findings import mark_side

__all__ = [
    "Capabilities",
    "CodecUnderTest",
    "CODEC_ENV",
    "TESTEE_ENV",
    "load_codec",
    "load_testee",
    "codec_from_environment",
    "CodecSelectionError",
]

TESTEE_ENV = "IPC_CONFORMANCE_TESTEE"


class CodecSelectionError(RuntimeError):
    """No implementation was selected, or the selection could not be loaded."""


@dataclass(frozen=True)
class Capabilities:
    name: str
    wire_compatible: bool = False
    decode_error: Union[Type[BaseException], Tuple[Type[BaseException], ...]] = msgspec.DecodeError
    out_of_band: bool = False
    devices: Tuple[str, ...] = field(default=("cpu",))
    executes_code_on_decode: bool = False
    byte_stable: bool = True
    unsupported_dtypes: Tuple[str, ...] = ()
    native_byte_order_only: bool = False
    typed_decode: bool = False
    keeps_requires_grad: bool = True
    structured_ndarrays: bool = True
    thread_safe: bool = True
    map_location: Optional[str] = None


@dataclass(frozen=True)
class CodecUnderTest:
    """The implementation and its declared capabilities, as the properties see them."""

    impl: Any
    caps: Capabilities

    @property
    def name(self) -> str:
        return self.caps.name

    def encode(self, msg: Any):
        """``impl.encode(msg)``; an exception escaping it is marked as the sender's (:func:`~conformance.findings.mark_side`)."""
        try:
            return self.impl.encode(msg)
        except BaseException as exc:
            mark_side(exc, "encode")
            raise

    def decode(self, frames, msg_type: Optional[type] = None):
        """``impl.decode(frames, msg_type)`` for a codec that declares ``typed_decode``, else ``impl.decode(frames)``.

        An exception escaping it is marked as the receiver's."""
        try:
            if self.caps.typed_decode and msg_type is not None:
                return self.impl.decode(frames, msg_type)
            return self.impl.decode(frames)
        except BaseException as exc:
            mark_side(exc, "decode")
            raise

    def as_held(self, msg: Any) -> Any:
        """``msg`` as the engine's classes hold it (``impl.as_held``), or ``msg`` itself for a codec without one."""
        held = getattr(self.impl, "as_held", None)
        return msg if held is None else held(msg)

    def __repr__(self) -> str:
        return f"<codec {self.caps.name}: {self.impl!r}>"


def _visible_devices() -> Tuple[str, ...]:
    import torch

    devices = ["cpu"]
    if torch.cuda.is_available():
        devices += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    return tuple(devices)


def _capabilities(impl: Any, default_name: str) -> Capabilities:
    name = getattr(impl, "name", None) or default_name
    decode_error = getattr(impl, "decode_error", msgspec.DecodeError)
    if not (isinstance(decode_error, type) and issubclass(decode_error, BaseException)) and not (
        isinstance(decode_error, tuple) and all(isinstance(e, type) and issubclass(e, BaseException) for e in decode_error)
    ):
        raise CodecSelectionError(f"{name}: decode_error must be an exception type or a tuple of them, got {decode_error!r}")
    devices = getattr(impl, "devices", None)
    return Capabilities(
        name=str(name),
        wire_compatible=bool(getattr(impl, "wire_compatible", False)),
        decode_error=decode_error,
        out_of_band=bool(getattr(impl, "out_of_band", False)),
        devices=tuple(devices) if devices is not None else _visible_devices(),
        executes_code_on_decode=bool(getattr(impl, "executes_code_on_decode", False)),
        byte_stable=bool(getattr(impl, "byte_stable", True)),
        unsupported_dtypes=tuple(getattr(impl, "unsupported_dtypes", ())),
        native_byte_order_only=bool(getattr(impl, "native_byte_order_only", False)),
        typed_decode=bool(getattr(impl, "typed_decode", False)),
        keeps_requires_grad=bool(getattr(impl, "keeps_requires_grad", True)),
        structured_ndarrays=bool(getattr(impl, "structured_ndarrays", True)),
        thread_safe=bool(getattr(impl, "thread_safe", True)),
        map_location=_map_location(impl, name),
    )


def _map_location(impl: Any, name: Any) -> Optional[str]:
    value = getattr(impl, "map_location", None)
    if value is None:
        return None
    import torch

    try:
        return str(torch.device(value))
    except (TypeError, RuntimeError) as exc:
        raise CodecSelectionError(f"{name}: map_location must be a device string such as 'cpu', got {value!r}") from exc


def load_codec(spec: str, engine: Optional[Engine] = None) -> CodecUnderTest:
    """Resolve a built-in name of ``engine`` (default: the environment's) or ``MODULE:ATTR`` to the implementation under test."""
    if engine is None:
        engine = _default_engine()
    if not isinstance(spec, str) or not spec.strip():
        raise CodecSelectionError("codec spec must be a built-in name or MODULE:ATTR, got an empty value")
    spec = spec.strip()
    if spec in engine.codecs:
        try:
            impl = engine.codecs[spec]()
        except Exception as exc:  # an engine's codec whose package is missing: a verdict, not a traceback
            raise CodecSelectionError(f"built-in codec {spec!r} of engine {engine.name} cannot be loaded: {exc}") from exc
        return _checked(CodecUnderTest(impl, _capabilities(impl, spec)), engine)
    if ":" not in spec:
        raise CodecSelectionError(
            f"unknown codec {spec!r} for engine {engine.name}: use one of {sorted(engine.codecs)} or MODULE:ATTR (e.g. mypkg.codec:MyCodec)"
        )
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise CodecSelectionError(f"cannot import {module_name!r} for codec {spec!r}: {exc}") from exc
    try:
        obj = module
        for part in attr.split("."):
            obj = getattr(obj, part)
    except AttributeError as exc:
        raise CodecSelectionError(f"{module_name!r} has no attribute {attr!r}") from exc
    try:
        impl = obj() if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "encode")) else obj
    except Exception as exc:
        raise CodecSelectionError(f"{spec}: building the codec raised {type(exc).__qualname__}: {exc}") from exc
    for method in ("encode", "decode"):
        if not callable(getattr(impl, method, None)):
            raise CodecSelectionError(f"{spec}: the implementation has no callable {method}()")
    return _checked(CodecUnderTest(impl, _capabilities(impl, spec)), engine)


def _checked(selected: CodecUnderTest, engine: Engine) -> CodecUnderTest:
    """``selected``, unless ``engine``'s frames carry no type and the codec cannot be told one."""
    if engine.typed_frames and not selected.caps.typed_decode:
        raise CodecSelectionError(
            f"{selected.name}: engine {engine.name}'s frames do not say their type (the socket does), so the codec "
            f"must offer decode(frames, type) and declare typed_decode = True"
        )
    return selected


def _default_engine() -> Engine:
    """The engine the environment names (``$IPC_CONFORMANCE_ENGINE``, else the default engine)."""
    try:
        return engine_from_environment()
    except EngineSelectionError as exc:
        raise CodecSelectionError(str(exc)) from exc


def load_testee(command: str, engine: Optional[Engine] = None) -> CodecUnderTest:
    """A program speaking the testee protocol, started with ``command``."""
    from .testee.client import TesteeCodec

    if engine is not None and not engine.reference_schema:
        raise CodecSelectionError(
            f"the testee protocol carries the reference schema's messages; engine {engine.name} takes a Python codec (--codec MODULE:ATTR)"
        )
    argv = shlex.split(command)
    if not argv:
        raise CodecSelectionError("testee command is empty")
    impl = TesteeCodec(argv)
    try:
        caps = _capabilities(impl, f"testee:{argv[0]}")  # reading them starts the program and says hello
    except Exception as exc:
        impl.close()
        raise CodecSelectionError(f"testee {command!r} did not start or answer hello: {exc}") from exc
    return CodecUnderTest(impl, caps)


# ``python -m conformance`` loads the selection once to fail early and the
# suite, in the same process, reuses it (a testee program starts only once).
_loaded: Dict[Tuple[str, str, str], CodecUnderTest] = {}


def codec_from_environment() -> CodecUnderTest:
    """The implementation named by the environment, within the engine it names; fails loudly when none is.

    Loaded once per process and selection; the caller that finishes with it
    closes it (the suite's ``codec`` fixture does).
    """
    try:
        engine = engine_from_environment()
    except EngineSelectionError as exc:
        raise CodecSelectionError(str(exc)) from exc
    testee = os.environ.get(TESTEE_ENV)
    spec = os.environ.get(CODEC_ENV)
    key = (engine.name, "testee", testee) if testee else (engine.name, "codec", spec or "")
    if key in _loaded:
        return _loaded[key]
    if testee:
        selected = load_testee(testee, engine)
    elif not spec:
        raise CodecSelectionError(
            f"no implementation selected: run `python -m conformance --codec NAME|MODULE:ATTR` "
            f"or set {CODEC_ENV} (built-in names for engine {engine.name}: {', '.join(sorted(engine.codecs))})"
        )
    else:
        selected = load_codec(spec, engine)
    _loaded[key] = selected
    return selected
