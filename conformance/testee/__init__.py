"""The non-Python plug-in path: a program under test spoken to over stdin/stdout.

The protocol is specified in ``conformance/PROTOCOL.md``. This package holds
its framing (:mod:`.protocol`), the suite's side (:mod:`.client`,
:class:`TesteeCodec`), the reference testee to copy
(:mod:`.reference_testee`) and a deliberately broken one for meta-tests
(:mod:`.broken_testee`).
"""

from .client import (
    TesteeCodec,
    TesteeCrashed,
    TesteeDecodeError,
    TesteeEncodeError,
    TesteeError,
    TesteeProtocolError,
    TesteeTimeout,
    TesteeUnsupported,
)
from .protocol import PROTOCOL_VERSION, ProtocolError, read_message, write_message

__all__ = [
    "TesteeCodec",
    "TesteeError",
    "TesteeDecodeError",
    "TesteeEncodeError",
    "TesteeUnsupported",
    "TesteeCrashed",
    "TesteeTimeout",
    "TesteeProtocolError",
    "PROTOCOL_VERSION",
    "ProtocolError",
    "read_message",
    "write_message",
]
