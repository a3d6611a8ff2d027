"""A testee that hosts one release's own codec for one message family, so two releases can talk across processes.

Two releases of an engine cannot be imported into one process; this program
runs in a release's environment (:mod:`conformance.releases.environments`)
and answers the testee protocol's framing (``conformance/PROTOCOL.md`` §1-2,
§7) with the engine-neutral operations, which work for any engine and any
framing (the message's type travels in the request)::

    python -m conformance.releases.host --engine vllm --family engine-core

* ``hello``: ``{"name": "vllm 0.33.0 engine-core", "protocol": 1, "messages": [...]}``.
* ``encode_value`` ``{"type": NAME, "value": V}``: ``V`` (plain msgpack
  values: a struct as a map of its wire field names) is converted into the
  release's class ``NAME`` (``msgspec.convert``, so the class's own
  validation runs) and written by the release's codec: ``{"frames": [...],
  "value": W}`` with ``W`` the message as built (defaults filled), in the same
  neutral form. A value the class refuses is ``invalid``; a codec failure
  ``encode_error``.
* ``decode_value`` ``{"type": NAME, "frames": [...]}``: the frames decoded by
  the release's codec as the socket's type ``NAME`` and answered as
  ``{"value": W}``; bad bytes are ``decode_error`` with the decoder's message
  (``Expected `int`, got `str` - at `$[3]```). For a tagged family, a frame
  that decodes as another message type is ``decode_error`` too: the receiver
  did not get the message that was sent.

The neutral form is ``msgspec.to_builtins`` of the message, sets sorted, so
two releases' values compare field by field.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import sys
from typing import Any, Dict, List, Optional

import msgspec

from conformance.schema_diff.snapshot import installed_version
from conformance.testee.reference_testee import claim_stdout, serve

__all__ = ["CodecHost", "main"]


class _Failure(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def neutral(obj: Any) -> Any:
    """The engine-neutral form of a message: plain values; a struct, dataclass or NamedTuple as a map of its wire field names (whatever its form on the wire); sets sorted.

    A tagged struct's map holds its tag first (``{"type": "BlockStored", ...}``,
    under the struct's ``tag_field``), so a message read as another variant of
    a union differs. A tensor or numpy array is ``{"__tensor__": {"dtype",
    "shape", "data"}}`` / ``{"__ndarray__": ...}``: its dtype name (``"float32"``;
    an ndarray's ``dtype.str``), its shape, and its C-contiguous bytes as they
    sit in a little-endian machine's memory.
    """
    if isinstance(obj, msgspec.Struct):
        config = obj.__struct_config__
        tag = {config.tag_field: config.tag} if config.tag is not None and config.tag_field is not None else {}
        return {**tag, **{f.encode_name: neutral(getattr(obj, f.name)) for f in msgspec.structs.fields(obj)}}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: neutral(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return {name: neutral(value) for name, value in zip(obj._fields, obj)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, dict):
        return {neutral(k): neutral(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [neutral(x) for x in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted((neutral(x) for x in obj), key=repr)
    if isinstance(obj, (bytearray, memoryview)):
        return bytes(obj)
    if obj is None or isinstance(obj, (bool, int, float, str, bytes)):
        return obj
    array = _array(obj)
    if array is not None:
        return array
    # A value with no plain form: its type and repr, so a change still shows.
    return {"__opaque__": f"{type(obj).__module__}.{type(obj).__qualname__}", "repr": repr(obj)[:200]}


def _array(obj: Any) -> Optional[Dict[str, Any]]:
    """A torch tensor's or numpy array's neutral form, or None for anything else (neither library is imported here)."""
    module = type(obj).__module__.split(".")[0]
    if module == "torch" and hasattr(obj, "dtype") and hasattr(obj, "shape"):
        import torch

        flat = obj.detach().to("cpu").contiguous()
        data = flat.reshape(-1).view(torch.uint8).numpy().tobytes() if flat.numel() else b""
        return {"__tensor__": {"dtype": str(obj.dtype).removeprefix("torch."), "shape": list(obj.shape), "data": data}}
    if module == "numpy" and hasattr(obj, "dtype") and hasattr(obj, "tobytes") and hasattr(obj, "shape"):
        return {"__ndarray__": {"dtype": obj.dtype.str, "shape": list(obj.shape), "data": obj.tobytes(order="C")}}
    return None


class CodecHost:
    """The testee: one family's root classes and codec, from the release importable in this process."""

    def __init__(self, engine_name: str, family_name: str):
        from conformance.engines import load_engine

        engine = load_engine(engine_name)
        family = next((f for f in engine.families if f.name == family_name), None)
        if family is None:
            raise SystemExit(f"engine {engine_name!r} has no family {family_name!r} (it has {[f.name for f in engine.families]})")
        self.types = dict(family.roots())
        self.tagged = family.framing == "tagged"
        self.codec = family.new_codec(self.types)
        version = installed_version(engine.package) or "unreleased"
        self.name = f"{engine.name} {version} {family.name}"

    def handle(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """The response to one request; never raises."""
        rid = request.get("id")
        try:
            op = request.get("op")
            if op == "hello":
                return {"id": rid, "ok": True, "name": self.name, "protocol": 1, "wire_compatible": False, "out_of_band": True, "messages": sorted(self.types)}
            cls = self.types.get(request.get("type", ""))
            if cls is None and not (op == "decode_value" and self.tagged):
                raise _Failure("unsupported", f"no message type {request.get('type')!r:.60} in {self.name}")
            if op == "encode_value":
                try:
                    obj = msgspec.convert(request.get("value"), cls, strict=False)
                except Exception as exc:  # the class's own validation, whatever it raises (vLLM's VLLMValidationError)
                    raise _Failure("invalid", f"{type(exc).__name__}: {exc}") from None
                try:
                    frames = self.codec.encode(obj)
                except Exception as exc:
                    raise _Failure("encode_error", f"{type(exc).__name__}: {exc}") from None
                return {"id": rid, "ok": True, "frames": [bytes(f) for f in frames], "value": neutral(obj)}
            if op == "decode_value":
                frames = request.get("frames")
                if not isinstance(frames, list) or not all(isinstance(f, bytes) for f in frames):
                    raise _Failure("unsupported", "request frames must be an array of bin")
                try:
                    obj = self.codec.decode(frames, cls)
                except Exception as exc:  # the receiver's refusal, as its decoder words it
                    raise _Failure("decode_error", f"{type(exc).__name__}: {exc}") from None
                if cls is None:  # a tagged frame of a type this release does not have, and its decoder took it
                    raise _Failure("decode_error", f"decoded as {type(obj).__qualname__}, which this release does not send as {request.get('type')!r:.60}")
                if not isinstance(obj, cls):
                    raise _Failure("decode_error", f"decoded as {type(obj).__qualname__}, not {cls.__qualname__}")
                return {"id": rid, "ok": True, "value": neutral(obj)}
            raise _Failure("unsupported", f"unknown op {op!r:.40}")
        except _Failure as exc:
            return {"id": rid, "ok": False, "error_kind": exc.kind, "message": _without_paths(str(exc))[:2000]}
        except Exception as exc:  # a bug here must not end the run: report it and go on
            return {"id": rid, "ok": False, "error_kind": "internal_error", "message": _without_paths(f"{type(exc).__name__}: {exc}")[:2000]}


def _without_paths(message: str) -> str:
    """``message`` with this environment's location replaced by ``<env>``: an engine's error (pickle's "Can't get attribute ... from '/path/...'") must not put a machine's paths in a report."""
    for prefix in sorted({sys.prefix, sys.base_prefix, sys.exec_prefix}, key=len, reverse=True):
        message = message.replace(prefix, "<env>")
    return message


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.releases.host", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--engine", required=True)
    parser.add_argument("--family", required=True)
    args = parser.parse_args(argv)
    responses = claim_stdout()  # before the engine is imported: vLLM logs to stdout
    return serve(CodecHost(args.engine, args.family), responses)  # type: ignore[arg-type]


if __name__ == "__main__":
    sys.exit(main())
