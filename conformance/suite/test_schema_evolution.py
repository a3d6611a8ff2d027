"""Property 5: positional schemas evolve only at the tail, map schemas anywhere, and the codec honours that.

* a message from an older sender, missing trailing fields, decodes with their defaults;
* a message from a newer sender, with extra trailing fields, decodes by the older schema;
* a map-encoded message (a struct with field names on the wire, a
  dataclass) from an older sender, missing any of its defaulted fields,
  decodes with their defaults; from a newer sender, with keys the receiver
  does not know, decodes ignoring them: what vLLM's connectors reason about
  by hand ("a P that predates this field always gets it");
* the same for every positional struct nested in a message (``SamplingParams``
  inside ``TokenizedGenerateReqInput``, the requests of a batch): each may
  come from another version than the message around it;
* if the codec exposes its own schema (``message_types``), it differs from the
  reference only in ways positional decoding survives (the recursive schema
  diff of :mod:`conformance.schema_diff`, nested structs included).

Old and new senders' bytes are the engine's wire reference's, edited; an
engine without one (``Engine.wire_reference``) has none of the first three.
Map messages are checked at the top level.
"""

from __future__ import annotations

import dataclasses

import msgspec
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from msgspec import inspect as mi

from conformance.findings import Finding
from conformance.properties import ENGINE, MESSAGE_TAGS, MESSAGE_TYPES, PropertyFailure, check_equivalent, draw_message, held_or_reject, reference_frames
from conformance.schema_diff import diff_struct
from reference_codec.paths import generic_body
from reference_codec.type_tree import reachable_structs, struct_info, structs_under, type_info
from strategies.builder import is_pickle_carrier

#: The engine's wire reference writing everything in one frame: the old and new senders' bytes are its bytes, edited.
REFERENCE = ENGINE.wire_reference(False) if ENGINE.wire_reference is not None else None


def _trailing_defaulted(cls) -> int:
    count = 0
    for field in reversed(msgspec.inspect.type_info(cls).fields):
        if field.required:
            break
        count += 1
    return count


def _positional(cls) -> bool:
    info = type_info(cls)
    return isinstance(info, mi.StructType) and info.array_like and not is_pickle_carrier(cls)  # pickled bytes in a wrapper, not a schema


def _offset(cls) -> int:
    """Where the fields start in a positional struct's encoding: after the tag, if it has one."""
    return 0 if mi.type_info(cls).tag is None else 1


POSITIONAL = [tag for tag in MESSAGE_TAGS if _positional(MESSAGE_TYPES[tag])]
EVOLVABLE = [tag for tag in POSITIONAL if _trailing_defaulted(MESSAGE_TYPES[tag])]


def _map_encoded(cls) -> bool:
    info = type_info(cls)
    if isinstance(info, mi.StructType):
        return not info.array_like and not is_pickle_carrier(cls)
    return isinstance(info, mi.DataclassType)


def _defaulted(cls) -> list:
    return [f for f in mi.type_info(cls).fields if not f.required]


MAPPED = [tag for tag in MESSAGE_TAGS if _map_encoded(MESSAGE_TYPES[tag])]
MAP_EVOLVABLE = [tag for tag in MAPPED if _defaulted(MESSAGE_TYPES[tag])]

#: What a newer sender adds: values of any plain kind.
_EXTRA_VALUE = st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=3), st.lists(st.booleans(), max_size=2))
_EXTRA = st.lists(_EXTRA_VALUE, min_size=1, max_size=3)


@pytest.fixture(autouse=True)
def _wire_compatible_only(codec):
    if not codec.caps.wire_compatible:
        pytest.skip(f"{codec.name} does not declare wire compatibility; its schema evolution is its own")


def _reference_frames(msg):
    """The reference's frames for ``msg``: its body decoded generically, and the frames after it.

    Skips the property when the engine has no wire reference to write another version's bytes with.
    """
    if REFERENCE is None:
        pytest.skip(f"engine {ENGINE.name} has no wire reference to write another version's bytes with")
    frames = reference_frames(REFERENCE, msg)
    return generic_body(frames[0]), [bytes(f) for f in frames[1:]]


def _decode_evolved(codec, frames, what: str, msg):
    """Decode a message of another schema version; refusing it is a failure of this property, named as such."""
    try:
        return codec.decode(frames, type(msg))
    except codec.caps.decode_error as exc:
        raise PropertyFailure(
            codec=codec.name,
            what=f"{what} is refused",
            message=msg,
            details=[f"{type(exc).__qualname__}: {str(exc)[:200]}"],
            finding=Finding.of("refuses", type(exc).__qualname__, str(exc)),
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
    body, rest = _reference_frames(msg)
    old_body = msgspec.msgpack.encode(body[: len(body) - drop])
    # What the receiver's own classes hold once the missing fields take their defaults (an engine may normalise them).
    expected = held_or_reject(codec, msgspec.structs.replace(msg, **{f.name: _default(f) for f in fields[len(fields) - drop :]}))
    what = f"an old sender's message (last {drop} fields missing)"
    check_equivalent(expected, _decode_evolved(codec, [old_body, *rest], what, msg), codec=codec.name, what=f"{what} decodes wrongly", msg=msg)


@pytest.mark.parametrize("tag", POSITIONAL)
@given(data=st.data())
def test_message_from_a_newer_schema_decodes_ignoring_extra_fields(codec, tag, data):
    msg = draw_message(data, tag, codec)
    extra = data.draw(
        st.lists(st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=3), st.lists(st.booleans(), max_size=2)), min_size=1, max_size=3),
        label="fields a newer sender appends",
    )
    body, rest = _reference_frames(msg)
    new_body = msgspec.msgpack.encode(body + extra)
    what = "a newer sender's message (extra tail fields)"
    check_equivalent(msg, _decode_evolved(codec, [new_body, *rest], what, msg), codec=codec.name, what=f"{what} decodes wrongly", msg=msg)


def _replace(msg, changes):
    if isinstance(msg, msgspec.Struct):
        return msgspec.structs.replace(msg, **changes)
    return dataclasses.replace(msg, **changes)


@pytest.mark.parametrize("tag", MAP_EVOLVABLE)
@given(data=st.data())
def test_map_message_from_an_older_schema_decodes_with_defaults_for_the_keys_it_lacks(codec, tag, data):
    cls = MESSAGE_TYPES[tag]
    msg = draw_message(data, tag, codec)
    body, rest = _reference_frames(msg)
    if not isinstance(body, dict):
        pytest.skip(f"{tag}: the wire reference does not write it as a map")
    present = [f for f in _defaulted(cls) if f.encode_name in body]
    if not present:
        event("every defaulted field already omitted by the sender")
    lacks = data.draw(st.lists(st.sampled_from(present), unique_by=lambda f: f.name, max_size=len(present)), label="defaulted fields the old sender lacks") if present else []
    gone = {f.encode_name for f in lacks}
    old_body = msgspec.msgpack.encode({k: v for k, v in body.items() if k not in gone})
    expected = held_or_reject(codec, _replace(msg, {f.name: _default(f) for f in lacks})) if lacks else msg
    what = f"an old sender's map message (without {', '.join(sorted(gone)) or 'nothing'})"
    check_equivalent(expected, _decode_evolved(codec, [old_body, *rest], what, msg), codec=codec.name, what=f"{what} decodes wrongly", msg=msg)


@pytest.mark.parametrize("tag", MAPPED)
@given(data=st.data())
def test_map_message_from_a_newer_schema_decodes_ignoring_keys_it_does_not_know(codec, tag, data):
    msg = draw_message(data, tag, codec)
    body, rest = _reference_frames(msg)
    if not isinstance(body, dict):
        pytest.skip(f"{tag}: the wire reference does not write it as a map")
    known = {f.encode_name for f in mi.type_info(MESSAGE_TYPES[tag]).fields} | set(body)
    extra = data.draw(
        st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: k not in known), _EXTRA_VALUE, min_size=1, max_size=3),
        label="keys a newer sender adds",
    )
    first = data.draw(st.booleans(), label="new keys first")
    new_body = msgspec.msgpack.encode({**extra, **body} if first else {**body, **extra})
    what = f"a newer sender's map message (extra keys {sorted(extra)})"
    check_equivalent(msg, _decode_evolved(codec, [new_body, *rest], what, msg), codec=codec.name, what=f"{what} decodes wrongly", msg=msg)


# --- nested positional structs ------------------------------------------------------


def _nested_positional(cls) -> bool:
    """Whether a message can carry a positional struct below its own fields (itself, if it nests itself)."""
    below = [s.cls for f in struct_info(cls).fields for s in structs_under(f.type)]
    return any(_positional(nested) for nested in reachable_structs(below))


NESTED = [tag for tag in POSITIONAL if _nested_positional(MESSAGE_TYPES[tag])]


def _evolve(value, item, data, older: bool):
    """``(item, value)`` with the tails of nested positional structs as another schema version writes them.

    ``item`` is ``value``'s generic encoding (a struct is a list, tag first if
    tagged). Each nested positional struct reached through fields and lists
    may lose trailing defaulted fields (``older``: the expected value gets
    their defaults) or gain extra trailing elements (newer: the expected value
    is unchanged). Returns the inputs themselves where nothing changed.
    """
    if isinstance(value, msgspec.Struct) and isinstance(item, list):
        cls = type(value)
        info = mi.type_info(cls)
        offset = 1 if info.tag is not None else 0
        body, changes = list(item), {}
        for i, field in enumerate(info.fields):
            if offset + i < len(body):
                new_item, new_value = _evolve(getattr(value, field.name), body[offset + i], data, older)
                if new_item is not body[offset + i]:
                    body[offset + i], changes[field.name] = new_item, new_value
        if _positional(cls) and data.draw(st.booleans(), label=f"{cls.__name__} from another schema version"):
            if older and _trailing_defaulted(cls):
                drop = data.draw(st.integers(1, _trailing_defaulted(cls)), label=f"trailing {cls.__name__} fields the old sender lacks")
                body = body[: len(body) - drop]
                changes.update({f.name: _default(f) for f in info.fields[len(info.fields) - drop :]})
            elif not older:
                body = body + data.draw(_EXTRA, label=f"fields a newer sender appends to {cls.__name__}")
        if body == item and not changes:
            return item, value
        return body, msgspec.structs.replace(value, **changes) if changes else value
    if type(value) is list and isinstance(item, list) and len(value) == len(item):
        pairs = [_evolve(v, it, data, older) for v, it in zip(value, item)]
        if all(new_item is it for (new_item, _), it in zip(pairs, item)):
            return item, value
        return [p[0] for p in pairs], [p[1] for p in pairs]
    return item, value



def _evolved_nested(codec, tag, data, older: bool):
    msg = draw_message(data, tag, codec)
    body, rest = _reference_frames(msg)
    start = _offset(type(msg))
    fields = [_evolve(getattr(msg, f.name), body[start + i], data, older) for i, f in enumerate(mi.type_info(type(msg)).fields)]
    changes = {f.name: v for f, (it, v), old in zip(mi.type_info(type(msg)).fields, fields, body[start:]) if it is not old}
    if not changes:
        event("no nested positional struct in this message")
    new_body = msgspec.msgpack.encode([*body[:start], *(it for it, _ in fields)])
    expected = held_or_reject(codec, msgspec.structs.replace(msg, **changes)) if changes else msg
    return msg, [new_body, *rest], expected


@pytest.mark.parametrize("tag", NESTED)
@given(data=st.data())
def test_nested_structs_from_an_older_schema_decode_with_defaults(codec, tag, data):
    msg, frames, expected = _evolved_nested(codec, tag, data, older=True)
    what = "an old sender's nested structs (trailing fields missing)"
    check_equivalent(expected, _decode_evolved(codec, frames, what, msg), codec=codec.name, what=f"{what} decode wrongly", msg=msg)


@pytest.mark.parametrize("tag", NESTED)
@given(data=st.data())
def test_nested_structs_from_a_newer_schema_decode_ignoring_extra_fields(codec, tag, data):
    msg, frames, expected = _evolved_nested(codec, tag, data, older=False)
    what = "a newer sender's nested structs (extra tail fields)"
    check_equivalent(expected, _decode_evolved(codec, frames, what, msg), codec=codec.name, what=f"{what} decode wrongly", msg=msg)


def _codec_schema(codec):
    schema = getattr(codec.impl, "message_types", None)
    if schema is None:
        pytest.skip(f"{codec.name} does not expose its own schema (message_types)")
    return schema


@pytest.mark.parametrize("tag", MESSAGE_TAGS)
def test_codec_schema_differs_from_the_reference_only_at_the_tail(codec, tag):
    theirs = _codec_schema(codec)
    if tag not in theirs:
        raise PropertyFailure(
            codec=codec.name, what=f"has no message {tag!r}: its peers' messages of that type will be refused", finding=Finding.of("breaks-schema", tag, "no such message")
        )
    breaking = [c for c in diff_struct(tag, MESSAGE_TYPES[tag], theirs[tag]) if c.breaks("backward")]
    if breaking:
        raise PropertyFailure(
            codec=codec.name,
            what=f"schema of {tag} breaks positional decoding: " + "; ".join(f"{c.where}: {c.kind}: {c.detail}" for c in breaking),
            finding=Finding.of("breaks-schema", tag, "; ".join(sorted({c.kind for c in breaking}))),
        )
