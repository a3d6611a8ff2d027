"""The reference codec in place of SGLang's own on every hop of a running SGLang server: an SGLang plugin.

SGLang 0.5.23 loads its general plugins (entry point group
``sglang.srt.plugins``) at the start of every process it runs: the HTTP
server's, the detokenizer's, and the scheduler's (the scripted one calls
``load_plugins`` as SGLang's does). This package's plugin (:mod:`.plugin`)
calls :func:`install` there when ``IPC_CONFORMANCE_SGLANG_IPC=reference`` is
in the environment (which every SGLang process inherits); it replaces
``io_struct.msgpack_encode`` and ``io_struct.msgpack_decode``, which
``sock_send``, ``sock_recv`` and their async forms call, with the reference
codec's wire v1 (byte-compatible with SGLang's):

:class:`reference_codec.ReferenceCodec` over SGLang's own message classes
(:func:`codec_functions`): the reference's encoder, decoder, hooks, buffer
layouts and limits, no conversion between class sets. Installing needs SGLang's
msgpack path on (``SGLANG_USE_PICKLE_IPC=0``); otherwise :func:`install`
raises :class:`ReferenceIpcError`, which the plugin writes to stderr; no
marker is written, which the live check reads as a failed start.

Each process where the codec is installed writes one line to stderr starting with
:data:`INSTALLED_MARKER` (and its process title), so a run can check that
every process took it.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Tuple

if TYPE_CHECKING:  # the codec (and torch) is imported when installed, not when the plugin loads
    from reference_codec import Frame

__all__ = ["IPC_ENV", "INSTALLED_MARKER", "ReferenceIpcError", "codec_functions", "install"]

#: ``reference``: install the reference codec; anything else (or unset): leave SGLang's codec alone.
IPC_ENV = "IPC_CONFORMANCE_SGLANG_IPC"
#: The start of the line each process logs once the codec is in place.
INSTALLED_MARKER = "ipc-conformance: reference codec installed in"


class ReferenceIpcError(RuntimeError):
    """The reference codec cannot replace SGLang's in this process (pickle IPC on, SGLang missing)."""


def codec_functions() -> Tuple[Callable[[Any], "Frame"], Callable[[Any], Any]]:
    """``(encode, decode)`` with the signatures of SGLang's ``msgpack_encode`` and ``msgpack_decode``, backed by the reference codec.

    The reference codec reads and writes SGLang's own message classes
    (``ReferenceCodec(message_types=...)``): wire v1 is SGLang's bytes, so
    nothing is converted. SGLang's ``PickleWrapper`` is a plain struct to
    it: it travels as is, and SGLang's receivers unwrap it as they do with
    SGLang's codec.
    """
    from reference_codec import ReferenceCodec

    from .installed import message_types

    codec = ReferenceCodec(message_types=list(message_types().values()))
    return codec.frame_functions()  # one buffer per message, as sock_send and sock_recv move them


def install() -> None:
    """Replace SGLang's codec functions in this process; :class:`ReferenceIpcError` when SGLang's msgpack IPC is off."""
    try:
        from sglang.srt.managers import io_struct
    except ImportError as exc:
        raise ReferenceIpcError(f"SGLang is not importable: {exc}") from exc
    if io_struct._USE_PICKLE_IPC:
        raise ReferenceIpcError(f"{IPC_ENV}=reference needs SGLANG_USE_PICKLE_IPC=0: with pickle IPC on, SGLang never calls its msgpack codec")
    io_struct.msgpack_encode, io_struct.msgpack_decode = codec_functions()
    try:
        import setproctitle

        title = setproctitle.getproctitle()
    except ImportError:
        title = "?"
    # stderr, not logging: the plugin runs before SGLang configures its loggers in some processes
    print(f"{INSTALLED_MARKER} pid {os.getpid()} ({title})", file=sys.stderr, flush=True)
