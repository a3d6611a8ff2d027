"""A codec plug-in for the conformance suite, to copy: the whole interface in one class.

Run it::

    PYTHONPATH=examples/python-plugin python -m conformance --codec my_codec:MyCodec

The suite calls ``encode(msg)`` with reference messages
(``reference_codec.schema``) and ``decode(frames)`` with what it (or a peer,
or an attacker) sends; everything else is a declaration the suite reads once
and prints in the run's header. This one delegates to the reference codec,
so it passes; replace the two methods' bodies with your engine's codec (an
adapter converting reference messages to your engine's classes and back, as
``conformance/engines/sglang/codec.py`` does for SGLang).
"""

from __future__ import annotations

from typing import Any, List

import msgspec

from reference_codec import ReferenceCodec


class MyCodec:
    #: Shown in every failure block and the report.
    name = "my-codec"
    #: Its bytes are the reference wire (v1, or v2 with out_of_band), so golden
    #: vectors and the producer x consumer properties apply to it.
    wire_compatible = True
    #: encode() may return more than one frame (wire v2 out-of-band buffers).
    out_of_band = False
    #: The one exception decode() raises on bad input; anything else it lets
    #: escape is a finding (a receiver loop that catches only this dies).
    decode_error = msgspec.DecodeError
    #: Leave ``devices`` out to be tested on every device of the machine; other
    #: declarations (unsupported_dtypes, byte_stable, ...) are in conformance/plugin.py.

    def __init__(self) -> None:
        self._codec = ReferenceCodec()  # replace with your engine's codec

    def encode(self, msg: Any) -> List[bytes]:
        """A reference message -> the frames your engine sends."""
        return self._codec.encode(msg)

    def decode(self, frames: List[Any]) -> Any:
        """Frames as received (bytes, or zmq.Frame objects) -> a reference message, or ``decode_error``."""
        return self._codec.decode(frames)
