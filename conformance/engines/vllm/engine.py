"""The installed vLLM (0.23.0 on, or a development build): every message that crosses one of its process or machine boundaries, one type per socket, through vLLM's own codecs.

* **Messages**: the roots of every family in :mod:`.families`: the engine
  core's structs (``vllm.v1.engine``), the startup handshake, the
  data-parallel coordinator, KV events, fault tolerance, KV hints, and the
  disaggregation side channels (encoder-cache transfer, Mooncake, MoRIIO,
  NIXL), discovered at load from vLLM's modules, so a vLLM release that adds
  one is tested without an edit here.
* **Frames**: untagged; the socket's declared type is the decoder's
  (``MsgpackDecoder(EngineCoreOutputs)``), so codecs under test offer
  ``decode(frames, type)``. Each family has its own codec
  (:class:`~conformance.engines.vllm.codec.VllmCodec` dispatches).
* **Strategies**: the generic builder over vLLM's own classes, with vLLM's
  meaning where the types cannot say it: classes whose ``__post_init__``
  validates (``SamplingParams``, ``PoolingParams``, ``LoRARequest``,
  ``StructuredOutputsParams``, ...) are drawn within vLLM's documented ranges
  (``_valid_fields``), so almost every draw is a valid instance; the
  custom classes deep inside (``MultiModalKwargsItem``, ``UtilityResult``)
  get strategies by type. Untyped fields (``dict[str, Any]``) hold JSON-like
  values within int64, which is what vLLM documents for them; no SGLang
  meaning or enum leaks in (an empty semantic registry).
* **Codecs**: ``vllm`` (:class:`conformance.engines.vllm.codec.VllmCodec`, also the
  wire reference) and ``pickle`` (what vLLM's sockets carried before msgpack).
* **Golden vectors**: engine-neutral ones (``vectors/``: KV events, engine
  core, handshake, Mooncake), for a port in any language.
"""

from __future__ import annotations

import importlib
import os
from typing import Any, Callable, Dict, Mapping

from conformance.engines.profile import Engine, ValueVectors

from .families import FAMILIES, PACKAGE
from .releases import RELEASES
from .strategies import message_strategy

__all__ = ["ENGINE", "CODECS"]

MESSAGES_MODULE = "vllm.v1.engine"


def _vllm():
    from conformance.engines.vllm.codec import VllmCodec

    return VllmCodec()


def _pickle():
    from reference_codec import PickleCodec

    return PickleCodec()


#: Built-in codecs of this engine, by ``--codec`` name.
CODECS: Dict[str, Callable[[], Any]] = {"vllm": _vllm, "pickle": _pickle}


def _wire_reference(out_of_band: bool):
    from conformance.engines.vllm.codec import VllmCodec

    # Without out-of-band frames every buffer is inline, so one frame is the whole message.
    return VllmCodec() if out_of_band else VllmCodec(size_threshold=2**62)


def _setup() -> None:
    # vLLM logs a warning per SamplingParams with a tiny temperature; the run's output is the verdict.
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    importlib.import_module(MESSAGES_MODULE)


def _message_types() -> Mapping[str, type]:
    from .families import all_roots

    return dict(sorted(all_roots().items()))


ENGINE = Engine(
    name="vllm",
    description="the installed vLLM's messages (its own classes, any release from 0.23.0 or a development build), every family (engine core, handshake, DP coordinator, KV events, fault tolerance, KV hints, disaggregation side channels), one type per socket",
    message_types=_message_types,
    message_strategy=message_strategy,
    codecs=CODECS,
    pickle_baseline=_pickle,
    typed_frames=True,
    wire_reference=_wire_reference,
    vectors_dir=None,
    setup=_setup,
    families=FAMILIES,
    snapshots_dir=os.path.join(os.path.dirname(os.path.abspath(__file__)), "schemas"),
    package=PACKAGE,
    releases=RELEASES,
    value_vectors=ValueVectors(directory=os.path.join(os.path.dirname(os.path.abspath(__file__)), "vectors"), cases="conformance.engines.vllm.vectors", release="0.34.0"),
)
