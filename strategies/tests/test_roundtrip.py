"""Every generated message of every schema type survives the reference codec.

Encoding then decoding must raise nothing and give back the same class;
comparing values is the conformance suite's job, not this module's.
"""

from __future__ import annotations

import pytest
from hypothesis import given

import strategies
from reference_codec import ReferenceCodec
from reference_codec.schema import MESSAGE_TYPES

CODECS = [ReferenceCodec(), ReferenceCodec(out_of_band_threshold=64)]


@pytest.mark.parametrize("codec", CODECS, ids=repr)
@pytest.mark.parametrize("cls", MESSAGE_TYPES.values(), ids=lambda c: c.__name__)
def test_every_generated_message_roundtrips_through_the_reference_codec(cls, codec):
    @given(strategies.reference_struct(cls))
    def roundtrip(msg):
        strategies.target_size(msg)  # steers nightly runs toward large, deep messages
        assert type(codec.decode(codec.encode(msg))) is cls

    roundtrip()
