"""The codec of a message family that declares none: what a program outside the engine writes and reads it with."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Union

import msgspec

__all__ = ["PlainCodec"]


class PlainCodec:
    """A plain ``msgspec.msgpack`` encoder, one frame per message, and a decoder of the socket's declared type.

    ``decode(frames, cls)`` decodes the one frame as ``cls``; with ``cls``
    ``None``, as any of ``types`` by tag (a tagged family), or untyped when
    none is given. A frame count other than one is ``msgspec.DecodeError``:
    these sockets ``recv()`` a single frame, so a multipart message is a
    mis-split one.
    """

    def __init__(self, types: Sequence[type] = ()) -> None:
        self._encoder = msgspec.msgpack.Encoder()
        self._decoders: Dict[Any, msgspec.msgpack.Decoder] = {}
        self._any = Union[tuple(types)] if len(types) > 1 else (types[0] if types else Any)

    def encode(self, obj: Any) -> List[bytes]:
        return [self._encoder.encode(obj)]

    def decode(self, frames: List[Any], cls: Optional[type] = None) -> Any:
        if len(frames) != 1:
            raise msgspec.DecodeError(f"a message of this family is one frame, got {len(frames)}")
        target = self._any if cls is None else cls
        decoder = self._decoders.get(target)
        if decoder is None:
            decoder = self._decoders[target] = msgspec.msgpack.Decoder(target)
        return decoder.decode(frames[0])
