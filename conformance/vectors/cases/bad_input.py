"""n_ (wire v1): frames that are not a message of the schema.

Truncated or empty frames, no frames, bytes after the body, malformed msgpack, a body
that is not a tagged array, unknown tags, missing or mistyped fields, invalid UTF-8 and
enum values.
"""

from __future__ import annotations

import msgspec
import torch

from reference_codec import schema as s

from ..registry import UINT64_MAX, case, embedding_request, encode, message_body, reference_for, untyped_message


def _flush_body() -> bytes:
    return message_body("FlushCacheReqInput", "flush-1", None, 1.5)


@case("n_truncated_body", "the body's last byte is missing (a frame cut short)", reason="truncated")
def _():
    return [_flush_body()[:-1]]


@case("n_truncated_inside_tensor", "the body ends inside a tensor ext payload", reason="truncated")
def _():
    body = reference_for("v1").encode(embedding_request(s.MultimodalDataItem(modality=s.Modality.IMAGE, feature=torch.ones(4))))[0]
    return [body[: len(body) - 30]]


@case("n_empty_frame", "the only frame is empty: no message at all", reason="truncated")
def _():
    return [b""]


@case("n_no_frames", "a message with zero frames", reason="no frames")
def _():
    return []


@case(
    "n_trailing_bytes_after_body",
    "one valid body followed by an extra byte (what a reused ZeroMQ buffer looks like): not a message",
    reason="trailing characters",
)
def _():
    return [_flush_body() + b"\xc0"]


@case("n_reserved_msgpack_byte", "0xc1 is never used by msgpack: malformed, not skipped", reason="invalid opcode")
def _():
    return [message_body("FlushCacheReqInput", "a", None, msgspec.Raw(b"\xc1"))]


@case("n_top_level_str_body", "a bare msgpack str is not a message: every message is a tagged array", reason="Expected `array`, got `str`")
def _():
    return [encode("FlushCacheReqInput")]


@case("n_body_is_a_map", "a map body (msgspec's default struct encoding) is not the positional wire form", reason="Expected `array`, got `object`")
def _():
    return [encode({"type": "FlushCacheReqInput", "rid": "a"})]


@case("n_unknown_tag", "the tag names no message of the schema", reason="Invalid value 'NoSuchMessage'")
def _():
    return [message_body("NoSuchMessage", None, None)]


@case("n_tag_not_a_string", "the first element must be the tag str", reason="Expected `str`, got `null`")
def _():
    return [message_body(None, None, None)]


@case(
    "n_missing_required_field",
    "EncoderDispatchErrorReq without its required error_code: only fields with defaults may be missing",
    reason="Expected `array` of at least length 5, got 4",
)
def _():
    return [message_body("EncoderDispatchErrorReq", None, None, "boom")]


@case("n_wrong_field_type", "a str where Optional[float] timeout_s is declared", reason="Expected `float | null`, got `str`")
def _():
    return [message_body("FlushCacheReqInput", "a", None, "not a float")]


@case("n_nil_for_required_bool", "nil in a required, non-Optional bool field", reason="Expected `bool`, got `None`")
def _():
    return [message_body("FlushCacheReqOutput", None, None, None)]


@case("n_bool_for_int_field", "true is not an int (msgpack bool and int are distinct types)", reason="Expected `int`, got `bool`")
def _():
    return [message_body("EncoderDispatchErrorReq", None, None, "boom", True)]


@case("n_int64_field_overflow", "2**64-1 in an Int64 field: valid msgpack uint64, out of the declared range", reason="<= 9223372036854775807")
def _():
    return [message_body("EncoderDispatchErrorReq", None, None, "boom", UINT64_MAX)]


@case("n_invalid_utf8_str", "a msgpack str (rid) whose bytes are not UTF-8", reason="Invalid UTF-8")
def _():
    return [message_body("FlushCacheReqInput", msgspec.Raw(b"\xa2\xff\xfe"), None, None)]


@case("n_invalid_utf8_in_untyped_str", "invalid UTF-8 in a str inside an untyped value", reason="Invalid UTF-8")
def _():
    return [untyped_message(msgspec.Raw(b"\xa3a\xc3("))]


@case("n_invalid_enum_value", "modality 9 is not a Modality value (typed enum field)", reason="Invalid enum value 9")
def _():
    return [message_body("TokenizedEmbeddingReqInput", None, None, None, None, [[[9]]], None, [])]
