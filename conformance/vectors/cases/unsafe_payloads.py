"""n_ (wire v1): payloads a decoder must refuse to act on: pickles (never unpickled) and nesting past the depth limit."""

from __future__ import annotations

import pickle

import msgspec

from reference_codec import schema as s
from reference_codec import wire

from ..registry import Ext, case, encode, generate_request, message_body, reference_for, str_output, untyped_message


@case(
    "n_pickled_time_stats",
    "SGLang's PickleWrapper in time_stats: unpickling is refused (the payload is a harmless pickled dict)",
    reason="pickled payload refused",
)
def _():
    msg = generate_request(time_stats=s.PickleWrapper(pickle.dumps({"created_time": 1.0}, protocol=4)))
    return reference_for("v1").encode(msg)


@case(
    "n_pickled_customized_info",
    "SGLang's PickleWrapper in customized_info of an output batch: refused like time_stats",
    reason="pickled payload refused",
)
def _():
    msg = str_output(1, customized_info=s.PickleWrapper(pickle.dumps({"k": [1]}, protocol=4)))
    return reference_for("v1").encode(msg)


@case("n_pickle_wrapper_in_typed_field", "a PickleWrapper where a float is declared is a type error", reason="Expected `float | null`, got `array`")
def _():
    return [message_body("FlushCacheReqInput", "a", None, s.PickleWrapper(b"\x80\x04K\x01."))]


@case("n_deep_nesting_untyped", "an untyped value nested 100 arrays deep: over the depth limit of 64", reason="nested deeper than 64")
def _():
    return [untyped_message(msgspec.Raw(b"\x91" * 100 + b"\xc0"))]


@case("n_deep_nesting_stack", "5000 nested arrays: must be refused without exhausting the decoder's stack", reason="recursion limit")
def _():
    return [untyped_message(msgspec.Raw(b"\x91" * 5000 + b"\xc0"))]


@case("n_deep_tuple_nesting", "tuples (ext 64) nested 100 deep inside each other's payloads", reason="deeper than")
def _():
    payload = encode([])
    for _ in range(100):
        payload = encode([Ext(wire.EXT_TUPLE, payload)])
    return [untyped_message(Ext(wire.EXT_TUPLE, payload))]
