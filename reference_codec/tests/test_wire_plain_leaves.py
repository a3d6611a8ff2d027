"""wire.all_plain: which untyped values the walks may pass over, because msgpack reads them back unchanged."""

from __future__ import annotations

import pytest

from reference_codec import wire


@pytest.mark.parametrize(
    "values, plain",
    [
        ([], True),
        ([None, True, "s", b"b", 1.5], True),
        ([wire.INT_MIN, wire.UINT_MAX, 0], True),
        ([wire.UINT_MAX + 1], False),
        ([wire.INT_MIN - 1, "s"], False),
        ([1, "s", wire.UINT_MAX + 1], False),
        ([1, (1,)], False),
        ([[1]], False),
        ([bytearray(b"x")], False),
        ({"a": 1, "b": "x"}.values(), True),
        ({"a": {}}.values(), False),
    ],
    ids=["empty", "leaves", "int-edges", "past-uint64", "below-int64", "mixed-past-uint64", "tuple", "list", "bytearray", "dict-values", "dict-of-dict"],
)
def test_a_plain_leaf_is_a_value_msgpack_reads_back_unchanged(values, plain):
    assert wire.all_plain(values) is plain
