"""The SGLang installed here, as its own code says it is: its message classes, its enums, its codec's wire form.

Nothing here compares version numbers. What differs between releases is read
off the installed code: the message classes are the tagged structs of
``io_struct`` that derive from a tagged base (``BaseReq``, ``BaseBatchReq``),
at any depth, as SGLang's own decoder is meant to find them; the ext codes are
the ``_MSGPACK_EXT_*`` constants of the module that defines the codec's hooks,
where the release has one (0.5.19 on); before that, tensors travel as
``(shape, dtype, bytes)`` arrays, which is not the reference wire.

Importing this module imports neither SGLang nor torch.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import types
from typing import Dict, Mapping, Optional, Tuple

__all__ = [
    "IO_MODULE",
    "CODEC_MODULES",
    "PICKLE_IPC_ENV",
    "REFERENCE_EXT_CODES",
    "io_struct",
    "msgpack_io",
    "message_types",
    "enum_types",
    "ext_codes",
    "reference_wire_gap",
    "installed_release",
]

IO_MODULE = "sglang.srt.managers.io_struct"
#: Where SGLang's msgpack codec keeps its ext codes, newest location first.
CODEC_MODULES = ("sglang.srt.utils.msgpack_utils",)

#: SGLang 0.5.15 to 0.5.23 ship with pickle IPC on (``SGLANG_USE_PICKLE_IPC``
#: defaults to true); its msgpack path, the one under test, needs it off: only
#: then does ``wrap_as_pickle`` wrap ``time_stats`` and ``customized_info``, as
#: its msgpack receivers expect.
PICKLE_IPC_ENV = "SGLANG_USE_PICKLE_IPC"

#: The reference wire's ext codes for buffers (``reference_codec/wire.py``), by the word SGLang's constant names carry.
REFERENCE_EXT_CODES: Mapping[int, str] = {1: "ARRAY", 2: "TORCH_TENSOR", 3: "NP_ARRAY"}


def io_struct() -> types.ModuleType:
    """``sglang.srt.managers.io_struct``, imported with msgpack IPC on unless the environment already says otherwise.

    ``ImportError`` when SGLang is not installed (or a package it imports is missing).
    """
    if IO_MODULE not in sys.modules:
        os.environ.setdefault(PICKLE_IPC_ENV, "0")
    return importlib.import_module(IO_MODULE)


def msgpack_io() -> types.ModuleType:
    """:func:`io_struct` for a codec that drives SGLang's msgpack path: ``RuntimeError`` saying what to do when SGLang
    does not import, or when its pickle IPC is on in this process (then ``time_stats`` and ``customized_info`` are not
    wrapped, and every message carrying them fails in SGLang's own msgpack decoder)."""
    try:
        io = io_struct()
    except Exception as exc:
        raise RuntimeError(f"SGLang is not importable here; install it (`tox -e sglang` does, without its GPU-only dependencies): {exc}") from exc
    if getattr(io, "_USE_PICKLE_IPC", False):
        raise RuntimeError(
            f"SGLang's msgpack IPC is off in this process ({PICKLE_IPC_ENV}={os.environ.get(PICKLE_IPC_ENV)!r}, or SGLang was "
            f"imported before the suite set it): run with {PICKLE_IPC_ENV}=0 to test its msgpack codec"
        )
    return io


@functools.lru_cache(maxsize=None)
def _messages(module: types.ModuleType) -> Tuple[Tuple[str, type], ...]:
    from .sync import engine_messages

    return tuple(sorted(engine_messages(module).items()))


def message_types() -> Dict[str, type]:
    """``tag -> class`` for every message the installed SGLang's IPC carries (tagged structs deriving a tagged base, any depth)."""
    return dict(_messages(io_struct()))


def enum_types(messages: Mapping[str, type]) -> Tuple[type, ...]:
    """Every ``enum.Enum`` class a field of ``messages`` (or of a struct they hold) is declared with, each once."""
    from reference_codec.type_tree import reachable_enums

    return tuple(reachable_enums(list(messages.values())))


def ext_codes() -> Dict[int, str]:
    """``code -> constant name`` of the ext types the installed codec writes; empty for a release whose codec has none."""
    for name in CODEC_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        return {value: attr for attr, value in sorted(vars(module).items()) if attr.startswith("_MSGPACK_EXT_") and isinstance(value, int)}
    return {}


def reference_wire_gap() -> Optional[str]:
    """Why the installed codec cannot speak the reference wire, read from its ext codes; ``None`` when its buffer codes are the reference's."""
    codes = ext_codes()
    if not codes:
        return "its codec has no msgpack ext types: tensors, ndarrays and arrays travel as (shape, dtype, bytes) arrays, not the reference's ext 1-3"
    wrong = [f"ext {code} is {codes.get(code, 'absent')}" for code, word in REFERENCE_EXT_CODES.items() if not codes.get(code, "").endswith("_" + word)]
    if wrong:
        return f"its buffer ext codes are not the reference's ({'; '.join(wrong)})"
    return None


def installed_release() -> Optional[str]:
    """The installed SGLang's ``__version__`` (a development build's too), or ``None``."""
    from conformance.engines.profile import installed_version

    return installed_version("sglang")
