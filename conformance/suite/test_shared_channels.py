"""Property 9: on a socket that several message types share untagged, a later type's message is never read as an earlier one.

A family declares such sockets (:attr:`MessageFamily.channels
<conformance.engines.profile.MessageFamily>`): the receiver decodes a frame
as the first type, and goes on to the next when that one is refused or reads
as its *empty* message (every field at its default: Mooncake's "a heartbeat
with no transfer ids" is a pull). So for every pair of an earlier type E and a
later type L, a message of L, written by the codec, decoded by the codec as
E, must be refused or be E's empty message. Anything else is a pull read as a
heartbeat: the receiver acts on the wrong message, silently. This is what a
field added to L with a name E also has breaks, and what "msgspec skips the
fields it does not know" takes on trust. A codec that does not declare the
engine's wire (pickle) is skipped: its frames name their own class.
"""

from __future__ import annotations

from typing import List, Tuple

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.findings import Finding
from conformance.properties import ENGINE, MESSAGE_TYPES, PropertyFailure, check_equivalent, draw_message


def _pairs() -> List[Tuple[str, str, str]]:
    """Each (channel, earlier type, later type) of a shared socket, among the types the installed release has (an older one may lack one)."""
    found = []
    for family in ENGINE.families:
        for channel, declared in family.channels.items():
            types = [name for name in declared if name in MESSAGE_TYPES]
            for i, earlier in enumerate(types):
                found.extend((channel, earlier, later) for later in types[i + 1 :])
    return found


PAIRS = _pairs()


def _empty(cls: type):
    """The message with every field at its default, or None when a field is required."""
    if any(f.required for f in msgspec.inspect.type_info(cls).fields):
        return None
    return cls()


@pytest.mark.parametrize("channel,earlier,later", PAIRS, ids=[f"{later}-as-{earlier}" for _, earlier, later in PAIRS])
@given(data=st.data())
def test_a_later_type_on_a_shared_socket_is_never_read_as_an_earlier_one(codec, channel, earlier, later, data):
    if not codec.caps.wire_compatible:
        # its frames are not the engine's untagged ones (pickle's say their own class), so it never shares the engine's socket
        pytest.skip(f"{codec.name} does not declare wire compatibility; only the engine's wire shares its sockets untagged")
    msg = draw_message(data, later, codec)
    frames = codec.encode(msg)
    try:
        read = codec.decode(frames, MESSAGE_TYPES[earlier])
    except codec.caps.decode_error:
        return  # refused: the receiver tries the next type
    empty = _empty(MESSAGE_TYPES[earlier])
    what = f"on the {channel}, a {later} is read as a {earlier}"
    if empty is None:
        raise PropertyFailure(codec=codec.name, what=f"{what} with every required field", message=msg, details=[f"read: {read!r}"[:300]], finding=Finding.of("misreads", earlier, later))
    check_equivalent(empty, read, codec=codec.name, what=f"{what} that is not empty: the receiver acts on the wrong message", msg=msg)
