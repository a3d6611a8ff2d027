"""Plain msgpack values (the engine-neutral form of ``conformance/PROTOCOL.md`` §9) written as JSON, and read back exactly.

JSON has no byte strings, no NaN or infinities, and only string map keys;
a plain value has all three. They are written as one-key objects whose key
starts with ``$``, and an object of the value itself is never written with
such a key, so reading is unambiguous::

    b"\\x01\\xff"            {"$bytes": "01ff"}
    float("nan"), inf, -inf  {"$float": "nan"}, {"$float": "inf"}, {"$float": "-inf"}
    a map with a key that is not a str, or a str key starting with "$"
                             {"$map": [[key, value], ...]}   (keys in order)

Everything else is itself: ``null``, ``true``/``false``, ints (any size:
a reader in another language must parse them as 64-bit, not as doubles),
floats (always with a ``.`` or an exponent: ``1.0`` stays a float), strings,
arrays, and maps with string keys.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List

__all__ = ["to_json", "from_json"]


def to_json(value: Any) -> Any:
    """``value`` (plain values: None, bool, int, float, str, bytes, list, dict) as a JSON-ready value; ``TypeError`` for anything else."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return {"$float": "nan"}
        if math.isinf(value):
            return {"$float": "inf" if value > 0 else "-inf"}
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$bytes": bytes(value).hex()}
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        if all(isinstance(key, str) and not key.startswith("$") for key in value):
            return {key: to_json(item) for key, item in value.items()}
        return {"$map": [[to_json(key), to_json(item)] for key, item in value.items()]}
    raise TypeError(f"{type(value).__qualname__} is not a plain value: {value!r:.80}")


def from_json(value: Any) -> Any:
    """The plain value a :func:`to_json` result (parsed from JSON text) stands for; ``ValueError`` on an unknown ``$`` key."""
    if isinstance(value, list):
        return [from_json(item) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        (key, inner), = value.items()
        if key == "$bytes":
            return bytes.fromhex(inner)
        if key == "$float":
            return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[inner]
        if key == "$map":
            pairs: List[Any] = inner
            return {_hashable(from_json(k)): from_json(v) for k, v in pairs}
    odd = [key for key in value if key.startswith("$")]
    if odd:
        raise ValueError(f"unknown key {odd[0]!r} in a JSON plain value")
    out: Dict[str, Any] = {key: from_json(item) for key, item in value.items()}
    return out


def _hashable(key: Any) -> Any:
    return tuple(_hashable(k) for k in key) if isinstance(key, list) else key
