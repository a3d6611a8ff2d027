"""y_ (wire v1): scalar edge values: 128-bit integers, float64 bit patterns, non-ASCII UTF-8 text."""

from __future__ import annotations

import struct

from reference_codec import schema as s

from ..registry import UINT64_MAX, case, generate_request, token_id_output


def _f64(bits: str) -> float:
    return struct.unpack(">d", bytes.fromhex(bits))[0]


@case("y_trace_id_int128", "request time stats carrying a 128-bit OpenTelemetry trace id (Int128 as ext 67) and uint64 span id")
def _():
    trace = s.TraceContext(trace_id=s.Int128(0x4BF92F3577B34DA6A3CE929D0E0E4736), span_id=0x00F067AA0BA902B7)
    stats = s.APIServerReqTimeStats(created_time=1700000000.25, tokenize_finish_time=1700000000.5, trace=trace)
    return generate_request(time_stats=stats)


@case("y_int128_extremes", "batch time stats whose trace ids are -2**127, 2**127-1, 0 and -1: minimal two's-complement ext 67")
def _():
    items = [
        s.SchedulerReqTimeStats(trace=s.TraceContext(trace_id=s.Int128(v), span_id=UINT64_MAX, trace_flags=0))
        for v in (s.Int128.MIN, s.Int128.MAX, 0, -1)
    ]
    return token_id_output(4, time_stats=s.BatchReqTimeStats(items=items))


@case(
    "y_float_edge_cases",
    "float64 bits exactly: -0.0, +-inf, quiet and signalling NaN payloads, negative NaN, smallest/largest subnormal, max",
)
def _():
    return s.GetWeightsByNameReqOutput(
        parameter=[
            0.0,
            -0.0,
            float("inf"),
            float("-inf"),
            _f64("7ff8000000000000"),
            _f64("7ff8000000000abc"),
            _f64("7ff0000000000001"),
            _f64("fff8000000000000"),
            5e-324,
            _f64("000fffffffffffff"),
            1.7976931348623157e308,
            [0.1, -1e-300],
        ]
    )


@case(
    "y_non_ascii_strings",
    "UTF-8 text: accents, CJK, RTL, emoji ZWJ, combining marks, NUL, U+2028, BOM, U+10FFFF, in str fields and dict keys",
)
def _():
    return s.GetInternalStateReqOutput(
        rid="h\u00e9llo-\U0001f642",
        internal_state={
            "\u6f22\u5b57": "\u6f22\u5b57\u304b\u306a \u05e9\u05dc\u05d5\u05dd",
            "zwj": "\U0001f469\u200d\U0001f4bb e\u0301",
            "controls": "a\x00b\u2028c\ufeffd",
            "max": "\U0010ffff",
        },
    )
