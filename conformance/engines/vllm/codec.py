"""Adapter: the installed vLLM's own codecs, each family's as its processes use it, behind the codec interface.

vLLM's sockets each carry one message type, and its decoders are built for
it (``MsgpackDecoder(EngineCoreOutputs)``, ``msgspec.msgpack.Decoder(
MooncakeXferMetadata)``), so the adapter offers the typed decode
``decode(frames, type)`` and sends each message through its family's codec
(:mod:`conformance.engines.vllm.families`):

* engine core (and the fault-tolerance and KV-hint messages it carries):
  ``MsgpackEncoder.encode``, the body frame, then one frame per tensor or
  array of ``size_threshold`` bytes or more (vLLM's
  ``VLLM_MSGPACK_ZERO_COPY_THRESHOLD``, 256 by default), read by
  ``MsgpackDecoder(type)``;
* handshake, KV events and the connectors' side channels: a plain
  ``msgspec.msgpack`` encoder and ``Decoder(type)``, one frame;
* the data-parallel coordinator: plain tuples, unpacked by position.

Messages are vLLM's own classes; nothing is converted, so every difference
the suite finds is vLLM's codec (or its classes' ``__post_init__``).

Run with vLLM's defaults: ``VLLM_ALLOW_INSECURE_SERIALIZATION`` unset, so
nothing is pickled, as in a vLLM deployment that has not opted in.

Any release from 0.23.0 on, or a development build: a family the installed
release lacks is left out (the run's header says which, and why), never a
reason to refuse the codec. Nothing here compares version numbers.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import msgspec

__all__ = ["VllmCodec"]


class VllmCodec:
    """vLLM's ``MsgpackEncoder``/``MsgpackDecoder(type)`` with the capabilities vLLM's wire has.

    ``size_threshold``: tensors and arrays of at least this many bytes travel
    as frames of their own (``None``: vLLM's default from its environment).
    """

    name = "vllm"
    #: This is the vLLM engine's wire reference: another implementation of
    #: vLLM's wire (a gateway) declares wire compatibility and is read by it.
    wire_compatible = True
    out_of_band = True
    typed_decode = True
    #: vLLM's decoder builds every tensor on the CPU; the receiver moves it to
    #: its device. A declared difference, not a silent pass: the suite checks
    #: device preservation only for the devices a codec declares.
    devices = ("cpu",)
    #: vLLM sends a tensor as dtype, shape and bytes: it arrives detached from
    #: autograd (``requires_grad`` False). Engine-core tensors are inference
    #: outputs, so this looks deliberate; declared, the suite detaches tensors
    #: before testing vLLM and counts each time it did.
    keeps_requires_grad = False
    #: vLLM's encoder sends structured (void) and object ndarrays only through
    #: pickle, which needs VLLM_ALLOW_INSECURE_SERIALIZATION; otherwise it raises
    #: TypeError. Documented in its code ("Fall back to pickle"), so declared.
    structured_ndarrays = False
    #: vLLM documents its encoder as not thread-safe (it stashes a message's
    #: buffers on the instance while encoding); its engine has one per socket.
    thread_safe = False
    #: What vLLM raises for input it detects as bad (``ValidationError`` is a
    #: subclass); any other exception on bad input is a finding.
    decode_error = msgspec.DecodeError

    def __init__(self, size_threshold: Optional[int] = None) -> None:
        try:
            import vllm
            from vllm.v1.serial_utils import MsgpackDecoder, MsgpackEncoder
        except Exception as exc:
            raise RuntimeError(
                f"vLLM is not importable here; install it (`tox -e vllm` does, without its GPU-only dependencies): {exc}"
            ) from exc
        from conformance.engines.profile import family_roots

        from .families import FAMILIES, PACKAGE, on_engine_core_codec

        self.release = getattr(vllm, "__version__", None)
        roots, _ = family_roots(FAMILIES, PACKAGE, PACKAGE)

        self._encoder = MsgpackEncoder(size_threshold)
        self._decoder_class = MsgpackDecoder
        self._decoders: Dict[type, Any] = {}
        # Families with a codec other than the engine core's, by root class.
        self._by_class: Dict[type, Any] = {}
        for family in FAMILIES:
            if on_engine_core_codec(family) or family.name not in roots:
                continue  # self._encoder, with this size_threshold; or a family this release lacks
            codec = family.new_codec()
            for cls in roots[family.name].values():
                self._by_class[cls] = codec
        if size_threshold is not None:
            self.name = f"vllm(size_threshold={size_threshold})"

    def __repr__(self) -> str:
        return f"VllmCodec({self.name}, vllm {self.release or '?'})"

    def encode(self, msg: Any) -> List[Any]:
        codec = self._by_class.get(type(msg))
        if codec is not None:
            return list(codec.encode(msg))
        return list(self._encoder.encode(msg))

    def decode(self, frames, msg_type: type) -> Any:
        codec = self._by_class.get(msg_type)
        if codec is not None:
            return codec.decode(list(frames), msg_type)
        decoder = self._decoders.get(msg_type)
        if decoder is None:
            decoder = self._decoders[msg_type] = self._decoder_class(msg_type)
        return decoder.decode(list(frames))
