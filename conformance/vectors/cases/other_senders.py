"""y_ (wire v1): frames the reference never writes but must read, as another sender writes them.

An older or newer schema (missing or extra trailing fields, a message that is only its tag)
and another encoder's valid but non-minimal msgpack.
"""

from __future__ import annotations

import msgspec

from reference_codec import schema as s

from ..registry import Ext, Raw, case, encode, generate_request, message_body, reference_for


def _generic(body: bytes) -> list:
    return msgspec.msgpack.decode(body, ext_hook=lambda code, data: Ext(code, bytes(data)))


@case(
    "y_old_schema_missing_trailing_fields",
    "an older sender's request ends after `stream`: every later field takes its default (tail-only schema evolution)",
)
def _():
    msg = generate_request(sampling_params=s.SamplingParams(max_new_tokens=4, stop="</s>"))
    body = reference_for("v1").encode(msg)[0]
    items = _generic(body)
    cut = 1 + s.TokenizedGenerateReqInput.__struct_fields__.index("stream") + 1
    return Raw([encode(items[:cut])], msg)


@case("y_tag_only_message", "only the tag: every field of FlushCacheReqInput has a default, so the oldest possible sender decodes")
def _():
    return Raw([message_body("FlushCacheReqInput")], s.FlushCacheReqInput())


@case(
    "y_newer_schema_extra_trailing_fields",
    "a newer sender appended fields (str, int, array, map, nil): a decoder ignores extra trailing elements",
)
def _():
    return Raw(
        [message_body("FlushCacheReqInput", "flush-2", None, 0.5, "future", 7, [1.5, None], {"k": b"v"}, None)],
        s.FlushCacheReqInput(rid="flush-2", timeout_s=0.5),
    )


@case(
    "y_non_minimal_msgpack_encodings",
    "valid but non-minimal msgpack: array32, str32/str16/str8, map32, uint64/int64 holding small ints, float32 not used",
)
def _():
    body = (
        b"\xdd\x00\x00\x00\x06"  # array32 of 6
        + b"\xdb\x00\x00\x00\x1c" + b"ListExternalCorporaReqOutput"  # str32 tag
        + b"\xda\x00\x01" + b"r"  # str16 rid
        + b"\xc0"  # http_worker_ipc nil
        + b"\xc3"  # success true
        + b"\xdf\x00\x00\x00\x02"  # map32 of 2
        + b"\xd9\x01" + b"a" + b"\xcf" + (7).to_bytes(8, "big")  # str8 key, uint64 value
        + b"\xa1" + b"b" + b"\xd3" + (-3).to_bytes(8, "big", signed=True)  # int64 value
        + b"\xd9\x00"  # message: empty str8
    )
    return Raw([body], s.ListExternalCorporaReqOutput(rid="r", success=True, corpus_token_counts={"a": 7, "b": -3}))
