"""Property 5: positional schemas evolve only at the tail, and the codec honours that.

* a message from an older sender, missing trailing fields, decodes with their defaults;
* a message from a newer sender, with extra trailing fields, decodes by the older schema;
* if the codec exposes its own schema (``message_types``), it differs from the
  reference only in ways positional decoding survives (schema diff).
"""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.properties import MESSAGE_TAGS, PropertyFailure, check_equivalent, draw_message
from conformance.schema_diff import diff_struct
from reference_codec import ReferenceCodec
from reference_codec.paths import generic_body
from reference_codec.schema import MESSAGE_TYPES

REFERENCE = ReferenceCodec()


def _trailing_defaulted(cls) -> int:
    count = 0
    for field in reversed(msgspec.inspect.type_info(cls).fields):
        if field.required:
            break
        count += 1
    return count


EVOLVABLE = [tag for tag in MESSAGE_TAGS if _trailing_defaulted(MESSAGE_TYPES[tag])]


@pytest.fixture(autouse=True)
def _wire_compatible_only(codec):
    if not codec.caps.wire_compatible:
        pytest.skip(f"{codec.name} does not declare wire compatibility; its schema evolution is its own")


def _decode_evolved(codec, frames, what: str, msg):
    """Decode a message of another schema version; refusing it is a failure of this property, named as such."""
    try:
        return codec.decode(frames)
    except codec.caps.decode_error as exc:
        raise PropertyFailure(
            codec=codec.name, what=f"{what} is refused", message=msg, details=[f"{type(exc).__qualname__}: {str(exc)[:200]}"]
        ) from None


def _default(field: msgspec.inspect.Field):
    return field.default_factory() if field.default_factory is not msgspec.NODEFAULT else field.default


@pytest.mark.parametrize("tag", EVOLVABLE)
@given(data=st.data())
def test_message_from_an_older_schema_decodes_with_defaults(codec, tag, data):
    cls = MESSAGE_TYPES[tag]
    msg = draw_message(data, tag, codec)
    fields = msgspec.inspect.type_info(cls).fields
    drop = data.draw(st.integers(1, _trailing_defaulted(cls)), label="trailing fields the old sender lacks")
    body = generic_body(REFERENCE.encode(msg)[0])
    old_body = msgspec.msgpack.encode(body[: len(body) - drop])
    expected = msgspec.structs.replace(msg, **{f.name: _default(f) for f in fields[len(fields) - drop :]})
    what = f"an old sender's message (last {drop} fields missing)"
    check_equivalent(expected, _decode_evolved(codec, [old_body], what, msg), codec=codec.name, what=f"{what} decodes wrongly", msg=msg)


@pytest.mark.parametrize("tag", MESSAGE_TAGS)
@given(data=st.data())
def test_message_from_a_newer_schema_decodes_ignoring_extra_fields(codec, tag, data):
    msg = draw_message(data, tag, codec)
    extra = data.draw(
        st.lists(st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=3), st.lists(st.booleans(), max_size=2)), min_size=1, max_size=3),
        label="fields a newer sender appends",
    )
    body = generic_body(REFERENCE.encode(msg)[0])
    new_body = msgspec.msgpack.encode(body + extra)
    what = "a newer sender's message (extra tail fields)"
    check_equivalent(msg, _decode_evolved(codec, [new_body], what, msg), codec=codec.name, what=f"{what} decodes wrongly", msg=msg)


def _codec_schema(codec):
    schema = getattr(codec.impl, "message_types", None)
    if schema is None:
        pytest.skip(f"{codec.name} does not expose its own schema (message_types)")
    return schema


@pytest.mark.parametrize("tag", MESSAGE_TAGS)
def test_codec_schema_differs_from_the_reference_only_at_the_tail(codec, tag):
    theirs = _codec_schema(codec)
    if tag not in theirs:
        raise PropertyFailure(codec=codec.name, what=f"has no message {tag!r}: its peers' messages of that type will be refused")
    breaking = [c for c in diff_struct(tag, MESSAGE_TYPES[tag], theirs[tag]) if c.breaking]
    if breaking:
        raise PropertyFailure(
            codec=codec.name,
            what=f"schema of {tag} breaks positional decoding: " + "; ".join(f"{c.kind}: {c.detail}" for c in breaking),
        )
