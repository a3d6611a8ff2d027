"""Reference codec for LLM-serving IPC: wire schema, msgpack codec, pickle baseline, transport.

Public surface::

    from reference_codec import ReferenceCodec, PickleCodec, DecodeError, EncodeError, DecodeLimits
    from reference_codec.schema import MESSAGE_TYPES, BatchTokenIDOutput, ...
    from reference_codec import transport, wire

The wire format is specified in :mod:`reference_codec.wire`.
"""

from .codec import Frame, Frames, ReferenceCodec
from .errors import DecodeError, EncodeError
from .limits import DecodeLimits
from .pickle_codec import PickleCodec
from .schema import MESSAGE_TYPES

__all__ = [
    "ReferenceCodec",
    "PickleCodec",
    "DecodeError",
    "EncodeError",
    "DecodeLimits",
    "Frame",
    "Frames",
    "MESSAGE_TYPES",
]
