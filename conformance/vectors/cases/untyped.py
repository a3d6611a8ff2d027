"""y_ (wire v1): untyped (``Any``) values keep their Python type: numpy scalars, tuples, torch.Size, enums, big ints, array.array."""

from __future__ import annotations

from array import array

import numpy as np
import torch

from reference_codec import schema as s

from ..registry import INT64_MAX, INT64_MIN, UINT64_MAX, case


@case("y_numpy_scalars", "numpy scalars in untyped fields (ext 66) stay numpy scalars of their dtype, not Python numbers")
def _():
    return s.GetInternalStateReqOutput(
        internal_state={
            "f32": np.float32(1.5),
            "f64": np.float64(0.1),
            "f16": np.float16(-0.0),
            "i8": np.int8(-128),
            "u64": np.uint64(UINT64_MAX),
            "b": np.bool_(True),
            "c64": np.complex64(1 - 2j),
        }
    )


@case(
    "y_untyped_python_types",
    "untyped values keep Python types: tuple (ext 64), torch.Size (65), enum (68), >64-bit ints (67), int keys, bytes",
)
def _():
    return s.GetInternalStateReqOutput(
        internal_state={
            "tuple": (1, "a", (2.5, None), []),
            "size": torch.Size([2, 3]),
            "empty_size": torch.Size([]),
            "enum": s.Modality.VIDEO,
            "big": 2**100,
            "most_negative_128": -(2**127),
            "u64": UINT64_MAX,
            "i64_min": INT64_MIN,
            "just_past_u64": 2**64,
            "bytes": b"\x00\xff",
            "int_keys": {1: "one", -1: "minus one"},
            "list_of_tuples": [(1, 2), ()],
        }
    )


@case("y_array_typecodes", "array.array of fixed-size typecodes keeps its typecode (b B h H i I q Q f d), machine bytes")
def _():
    return s.GetInternalStateReqOutput(
        internal_state={
            "b": array("b", [-128, 127]),
            "B": array("B", [0, 255]),
            "h": array("h", [-32768]),
            "H": array("H", [65535]),
            "i": array("i", [-(2**31)]),
            "I": array("I", [2**32 - 1]),
            "q": array("q", [INT64_MIN, INT64_MAX]),
            "Q": array("Q", [UINT64_MAX]),
            "f": array("f", [1.5, float("-inf")]),
            "d": array("d", [-0.0, 5e-324]),
            "empty": array("d"),
        }
    )
