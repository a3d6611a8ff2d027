"""``ReferenceCodec(message_types=...)``: another class set of the same wire, read and written directly."""

from __future__ import annotations

from array import array

import msgspec
import pytest

from reference_codec import EncodeError, ReferenceCodec
from reference_codec import schema as s


class Ping(msgspec.Struct, tag=True, array_like=True, kw_only=True):
    rid: str
    ids: array


def test_another_class_set_round_trips_and_writes_msgspecs_layout_with_the_reference_buffers():
    codec = ReferenceCodec(message_types=[Ping])
    msg = Ping(rid="r", ids=array("q", [1, 2]))
    (frame,) = codec.encode(msg)
    back = codec.decode([frame])
    assert type(back) is Ping and back.rid == "r" and back.ids == msg.ids and back.ids.typecode == "q"
    assert frame.startswith(b"\x93\xa4Ping")  # a 3-item array, the tag first, as msgspec writes it


def test_a_message_outside_the_class_set_is_refused_naming_message_types():
    codec = ReferenceCodec(message_types=[Ping])
    with pytest.raises(EncodeError, match="this codec's message_types"):
        codec.encode(s.FlushCacheReqInput(rid="x"))


@pytest.mark.parametrize("bad", [[], [int], ["Ping"]])
def test_message_types_that_are_not_struct_classes_raise_a_typeerror_naming_the_argument(bad):
    with pytest.raises(TypeError, match="message_types must be"):
        ReferenceCodec(message_types=bad)
