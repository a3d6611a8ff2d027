"""vLLM's data-parallel coordinator messages: plain tuples on the wire, given names here because vLLM gives them none.

The coordinator (``vllm/v1/engine/coordinator.py``) and the engine-core
client (``vllm/v1/engine/core_client.py``) exchange three messages written
with ``msgspec.msgpack.encode(tuple)`` and read with an untyped
``msgspec.msgpack.decode`` followed by positional unpacking. There is no
class in vLLM to discover, so the shapes below were read from vLLM's source
(its sending expression and its unpacking line) and declared as NamedTuples,
which msgspec writes as the same arrays. Each declaration names the sending
expression it was read from (:data:`SENT_AS`); a release has the message
where its own source still builds the tuple that way
(:func:`messages_in_release`, by ``ast``), so another release's changed tuple
is reported absent instead of being recorded in 0.34.0's shape:

* :class:`CoordinatorStats`: coordinator -> front ends, on the stats
  publisher: ``(engine_req_counts_list, current_wave, engines_running)``,
  counts ``None`` when only the wave changed; read as
  ``counts, wave, running = msgspec.msgpack.decode(buf)``.
* :class:`StartDpWave`: coordinator -> engines, after the request-type frame
  ``START_DP_WAVE``: ``(wave, exclude_engine_index)``; read by the engine's
  generic ``MsgpackDecoder`` and unpacked ``new_wave, exclude_eng_index = request``.
* :class:`ScaleElasticEp`: front end -> coordinator and client:
  ``("SCALE_ELASTIC_EP", new_data_parallel_size)``; read as
  ``msg_type, new_engine_count = msgspec.msgpack.decode(buf)``.

:class:`UnpackingCodec` is that wire: a plain encoder, and a decoder that
does what vLLM's receivers do (decode untyped, unpack by position), so what
vLLM does with a frame of the wrong shape (``ValueError`` from the unpacking,
no type check at all) is what the suite sees.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from typing import Any, Dict, List, Literal, NamedTuple, Optional, Set, Tuple, Union

import msgspec

__all__ = ["CoordinatorStats", "StartDpWave", "ScaleElasticEp", "MESSAGES", "SENT_AS", "messages_in_release", "UnpackingCodec"]


class CoordinatorStats(NamedTuple):
    """Per-engine ``[waiting, running]`` request counts (None: unchanged), the current wave, whether engines run."""

    engine_req_counts_list: Optional[List[List[Union[int, float]]]]
    current_wave: int
    engines_running: bool


class StartDpWave(NamedTuple):
    """The wave to start, and the engine that started it (it needs no notice), or None."""

    wave: int
    exclude_engine_index: Optional[int]


class ScaleElasticEp(NamedTuple):
    """Elastic expert parallelism: the new number of data-parallel engines."""

    msg_type: Literal["SCALE_ELASTIC_EP"]
    new_engine_count: int


#: The family's messages by name.
MESSAGES: Dict[str, type] = {cls.__name__: cls for cls in (CoordinatorStats, StartDpWave, ScaleElasticEp)}

#: Per message, the module of vLLM that sends it and the expressions that build its tuple there (as read in 0.23.0 to 0.34.0).
SENT_AS: Dict[str, Tuple[str, Tuple[str, ...]]] = {
    "CoordinatorStats": ("vllm.v1.engine.coordinator", ("(engine_req_counts_list, current_wave, engines_running)", "(None, current_wave, engines_running)")),
    "StartDpWave": ("vllm.v1.engine.coordinator", ("(wave, exclude_engine_index)",)),
    "ScaleElasticEp": ("vllm.v1.engine.core_client", ("('SCALE_ELASTIC_EP', new_data_parallel_size)",)),
}


def _expressions(module_name: str) -> Set[str]:
    """Every tuple expression of the module's source, as ``ast.unparse`` writes it."""
    module = importlib.import_module(module_name)
    tree = ast.parse(inspect.getsource(module))
    return {ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.Tuple)}


def messages_in_release() -> Tuple[Dict[str, type], List[str]]:
    """``(messages, missing)``: the declared messages whose sending expressions the installed vLLM's source has, and a sentence for each one it lacks.

    ``ImportError`` when the release lacks the modules.
    """
    found: Dict[str, type] = {}
    missing: List[str] = []
    sources: Dict[str, Set[str]] = {}
    for name, (module_name, expressions) in SENT_AS.items():
        if module_name not in sources:
            sources[module_name] = _expressions(module_name)
        if all(ast.unparse(ast.parse(e, mode="eval").body) in sources[module_name] for e in expressions):
            found[name] = MESSAGES[name]
        else:
            missing.append(f"{name}: {module_name} does not build {' or '.join(expressions)}")
    return found, missing


class UnpackingCodec:
    """One frame per message: ``msgspec.msgpack.encode`` of the tuple; read back untyped and unpacked by position, as vLLM's receivers do.

    ``decode`` raises ``msgspec.DecodeError`` for bytes that are not
    msgpack, or for a frame count other than one (the sockets ``recv()``
    one frame); a well-formed frame of another shape fails the way vLLM's
    unpacking does (``ValueError``, ``TypeError``), and values are not
    type-checked, as vLLM does not check them.
    """

    def __init__(self) -> None:
        self._encoder = msgspec.msgpack.Encoder()

    def encode(self, msg: Any) -> List[bytes]:
        return [self._encoder.encode(tuple(msg))]

    def decode(self, frames: List[Any], cls: type) -> Any:
        if len(frames) != 1:
            raise msgspec.DecodeError(f"{cls.__name__} travels in one frame, got {len(frames)}")
        value = msgspec.msgpack.decode(frames[0])
        width = len(getattr(cls, "_fields"))
        items = list(value)  # what vLLM's `a, b, c = value` iterates (a str or dict too)
        if len(items) != width:
            raise ValueError(f"{'not enough' if len(items) < width else 'too many'} values to unpack (expected {width}, got {len(items)})")
        return cls(*items)
