"""Property 2: the codec decodes to what the pickle baseline decodes (pickle is the reference behaviour).

Where pickle itself cannot restore a message (torch 2.13 cannot unpickle
uint16/uint32/uint64, float8 and complex32 tensors; numpy 2.4 unpickles some
non-native byte-order ndarrays in native order), the message as sent is the
expected value: pickle's contract is an exact restore. Hypothesis counts those
examples as events.
"""

from __future__ import annotations

from hypothesis import event, given
from hypothesis import strategies as st

from conformance.properties import check_equivalent, draw_message, each_message_type, has_non_native_ndarray


@each_message_type
@given(data=st.data())
def test_decodes_to_what_pickle_decodes(codec, pickle_baseline, tag, data):
    msg = draw_message(data, tag, codec)
    if pickle_baseline.native_byte_order_only and has_non_native_ndarray(msg):
        event("pickle baseline loses ndarray byte order in this message")
        expected = msg
    else:
        try:
            expected = pickle_baseline.decode(pickle_baseline.encode(msg))
        except pickle_baseline.decode_error:
            event("pickle baseline cannot restore this message")
            expected = msg
    decoded = codec.decode(codec.encode(msg), type(msg))
    check_equivalent(expected, decoded, codec=codec.name, what="differs from what pickle decodes", msg=msg)
