"""Scalar types the schema uses beyond what msgpack carries natively."""

from __future__ import annotations

from typing import Annotated

import msgspec

__all__ = ["Int128", "Int64", "UInt64", "INT64_MIN", "INT64_MAX", "UINT64_MAX"]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1

#: An integer that must fit a signed 64-bit slot (token ids, counts, offsets).
Int64 = Annotated[int, msgspec.Meta(ge=INT64_MIN, le=INT64_MAX)]
#: An unsigned 64-bit integer (hashes, pointers, bootstrap rooms). msgspec
#: cannot state an upper bound past int64, so the bound rides in ``extra``
#: for strategies; msgpack itself stops at ``UINT64_MAX``.
UInt64 = Annotated[int, msgspec.Meta(ge=0, extra={"max": UINT64_MAX})]


class Int128(int):
    """A signed integer of up to 128 bits, such as an OpenTelemetry trace id.

    msgpack integers stop at 64 bits, so a field declared ``Int128`` travels as
    the reference extension ``EXT_BIGINT`` (see :mod:`reference_codec.wire`).
    Values are plain ``int`` in every other respect; construct with
    ``Int128(value)``. Values outside ``[-2**127, 2**127)`` are rejected on
    construction so that no encoder ever has to guess a width.
    """

    __slots__ = ()

    MIN = -(2**127)
    MAX = 2**127 - 1

    def __new__(cls, value: int = 0) -> "Int128":
        self = super().__new__(cls, value)
        if not cls.MIN <= self <= cls.MAX:
            raise ValueError(f"Int128 out of range: {int(self)} does not fit in 128 signed bits")
        return self

    def __repr__(self) -> str:
        return f"Int128({int(self)})"

    def __reduce__(self):
        return (Int128, (int(self),))
