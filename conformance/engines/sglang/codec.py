"""SGLang's own msgpack codec, as installed, on SGLang's own message classes: the codec the SGLang gate tests (``--codec sglang``).

Messages are the installed release's classes (:mod:`.installed`), drawn by
:mod:`.strategies`; ``encode`` is ``io_struct.msgpack_encode`` and ``decode``
``io_struct.msgpack_decode``, with nothing converted on the way, so every
difference the suite finds is SGLang's codec or its classes' hooks
(``__post_init__`` runs again on decode). Any release with msgpack IPC
(0.5.15 on) and any development build: what the codec can do is read off the
installed code, never off a version number:

* ``wire_compatible``: whether its buffer ext codes are the reference wire's
  (:func:`.installed.reference_wire_gap`; 0.5.19 on). Before that a tensor is
  a ``(shape, dtype, bytes)`` array, and the properties that read its bytes
  with the reference are skipped, saying so.
* ``message_types``: the classes it encodes and decodes.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import msgspec

from .installed import installed_release, message_types, msgpack_io, reference_wire_gap

__all__ = ["SGLangCodec"]


class SGLangCodec:
    """The installed SGLang's ``msgpack_encode``/``msgpack_decode`` behind the codec interface."""

    name = "sglang"
    out_of_band = False
    #: SGLang raises ``msgspec.DecodeError`` for what it detects; anything else
    #: escaping ``decode`` on bad input is a finding of the bad-input property.
    decode_error = msgspec.DecodeError

    def __init__(self) -> None:
        self._io = msgpack_io()
        self.release: Optional[str] = installed_release()
        #: Why its bytes are not the reference wire's, or None (they are: the reference reads and writes them).
        self.wire_gap: Optional[str] = reference_wire_gap()
        self.wire_compatible = self.wire_gap is None
        #: SGLang's own message classes by tag.
        self.message_types: Dict[str, type] = message_types()

    def __repr__(self) -> str:
        return f"SGLangCodec(sglang {self.release or '?'})"

    def encode(self, msg: Any) -> List[bytes]:
        return [self._io.msgpack_encode(msg)]

    def decode(self, frames: Any) -> Any:
        if isinstance(frames, (bytes, bytearray, memoryview)):
            frames = [frames]
        if len(frames) != 1:
            raise msgspec.DecodeError(f"SGLang's codec reads exactly one frame, got {len(frames)}")
        return self._io.msgpack_decode(bytes(frames[0]))
