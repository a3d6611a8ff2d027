"""The one injection point: which implementation the suite tests, and what it declares.

An implementation under test is any object with

    encode(msg) -> list of bytes-like frames
    decode(frames) -> msg

over reference messages (:mod:`reference_codec.schema`). It may declare
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

Select it with ``python -m conformance --codec SPEC`` or the environment
variable ``IPC_CONFORMANCE_CODEC=SPEC``. SPEC is a built-in name (see
``BUILTIN_CODECS``) or ``MODULE:ATTR``, where ATTR is the object itself or a
class or factory called with no arguments. ``--testee "CMD ARGS"`` (or
``IPC_CONFORMANCE_TESTEE``) selects a program speaking the testee protocol
(``conformance/PROTOCOL.md``) instead.
"""

from __future__ import annotations

import importlib
import os
import shlex
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Tuple, Type, Union

import msgspec

__all__ = [
    "Capabilities",
    "CodecUnderTest",
    "BUILTIN_CODECS",
    "CODEC_ENV",
    "TESTEE_ENV",
    "load_codec",
    "load_testee",
    "codec_from_environment",
    "CodecSelectionError",
]

CODEC_ENV = "IPC_CONFORMANCE_CODEC"
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


@dataclass(frozen=True)
class CodecUnderTest:
    """The implementation and its declared capabilities, as the properties see them."""

    impl: Any
    caps: Capabilities

    @property
    def name(self) -> str:
        return self.caps.name

    def encode(self, msg: Any):
        return self.impl.encode(msg)

    def decode(self, frames):
        return self.impl.decode(frames)

    def __repr__(self) -> str:
        return f"<codec {self.caps.name}: {self.impl!r}>"


def _reference():
    from reference_codec import ReferenceCodec

    return ReferenceCodec()


def _reference_v2():
    from reference_codec import ReferenceCodec

    codec = ReferenceCodec(out_of_band_threshold=256)
    codec.name = "reference-v2"
    return codec


def _pickle():
    from reference_codec import PickleCodec

    return PickleCodec()


def _pickle_oob():
    from reference_codec import PickleCodec

    return PickleCodec(out_of_band=True)


def _sglang():
    from .codecs.sglang import SGLangCodec

    return SGLangCodec()


#: Built-in implementations by name.
BUILTIN_CODECS: Dict[str, Callable[[], Any]] = {
    "reference": _reference,
    "reference-v2": _reference_v2,
    "pickle": _pickle,
    "pickle-oob": _pickle_oob,
    "sglang": _sglang,
}


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
    )


def load_codec(spec: str) -> CodecUnderTest:
    """Resolve a built-in name or ``MODULE:ATTR`` to the implementation under test."""
    if not isinstance(spec, str) or not spec.strip():
        raise CodecSelectionError("codec spec must be a built-in name or MODULE:ATTR, got an empty value")
    spec = spec.strip()
    if spec in BUILTIN_CODECS:
        impl = BUILTIN_CODECS[spec]()
        return CodecUnderTest(impl, _capabilities(impl, spec))
    if ":" not in spec:
        raise CodecSelectionError(
            f"unknown codec {spec!r}: use one of {sorted(BUILTIN_CODECS)} or MODULE:ATTR (e.g. mypkg.codec:MyCodec)"
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
    impl = obj() if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "encode")) else obj
    for method in ("encode", "decode"):
        if not callable(getattr(impl, method, None)):
            raise CodecSelectionError(f"{spec}: the implementation has no callable {method}()")
    return CodecUnderTest(impl, _capabilities(impl, spec))


def load_testee(command: str) -> CodecUnderTest:
    """A program speaking the testee protocol, started with ``command``."""
    from .testee.client import TesteeCodec

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
_loaded: Dict[Tuple[str, str], CodecUnderTest] = {}


def codec_from_environment() -> CodecUnderTest:
    """The implementation named by the environment; fails loudly when none is.

    Loaded once per process and selection; the caller that finishes with it
    closes it (the suite's ``codec`` fixture does).
    """
    testee = os.environ.get(TESTEE_ENV)
    spec = os.environ.get(CODEC_ENV)
    key = ("testee", testee) if testee else ("codec", spec or "")
    if key in _loaded:
        return _loaded[key]
    if testee:
        selected = load_testee(testee)
    elif not spec:
        raise CodecSelectionError(
            f"no implementation selected: run `python -m conformance --codec NAME|MODULE:ATTR` "
            f"or set {CODEC_ENV} (built-in names: {', '.join(sorted(BUILTIN_CODECS))})"
        )
    else:
        selected = load_codec(spec)
    _loaded[key] = selected
    return selected
