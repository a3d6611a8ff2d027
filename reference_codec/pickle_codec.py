"""The pickle baseline: what the engine did before msgpack, behind the codec interface."""

from __future__ import annotations

import functools
import pickle
from typing import Any, List, Optional, Sequence, Tuple, Union

from .errors import DecodeError

__all__ = ["PickleCodec"]


@functools.lru_cache(maxsize=None)
def _unpicklable_tensor_dtypes() -> Tuple[str, ...]:
    import warnings

    import torch

    from .dtypes import TORCH_DTYPES

    failing = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # complex32 warns on allocation
        for name, dtype in TORCH_DTYPES.items():
            try:
                pickle.loads(pickle.dumps(torch.zeros(1, dtype=dtype), protocol=pickle.HIGHEST_PROTOCOL))
            except Exception:
                failing.append(name)
    return tuple(failing)


@functools.lru_cache(maxsize=None)
def _loses_ndarray_byte_order() -> bool:
    """Whether a big-endian ndarray comes back little-endian (values kept, dtype changed).

    numpy 2.x restores arrays pickled through ``__reduce__`` (any protocol below
    5, and non-contiguous arrays under protocol 5) in native byte order.
    """
    import numpy as np

    for array in (np.arange(4, dtype=">f8"), np.arange(8, dtype=">f8")[::2]):
        if pickle.loads(pickle.dumps(array, protocol=pickle.HIGHEST_PROTOCOL)).dtype != array.dtype:
            return True
    return False


class PickleCodec:
    """``socket.send_pyobj`` semantics, as frames.

    ``PickleCodec()`` pickles with ``pickle.HIGHEST_PROTOCOL`` into one frame,
    as pyzmq's ``send_pyobj`` does. ``PickleCodec(out_of_band=True)`` uses
    protocol 5 and sends every ``PickleBuffer`` (numpy arrays, for instance)
    as its own frame, without copying it.

    This is the *baseline*, not a safe codec: ``decode`` runs ``pickle.loads``,
    which executes whatever the sender chose. Failures are reported as
    :class:`~reference_codec.DecodeError` so that the suite can compare error
    behaviour, not because pickle is safe on bad input.
    """

    wire_compatible = False
    decode_error = DecodeError
    #: Declared for the conformance suite: ``decode`` runs ``pickle.loads``.
    executes_code_on_decode = True
    #: Pickle's memo makes bytes depend on object identity, not only value:
    #: a decoded copy can re-encode to different bytes for the same value.
    byte_stable = False
    #: Takes the socket's message type (and ignores it), so it is the pickle
    #: baseline of engines whose frames do not say their type (vLLM).
    typed_decode = True

    def __init__(self, *, out_of_band: bool = False):
        if not isinstance(out_of_band, bool):
            raise TypeError(f"out_of_band must be a bool, got {out_of_band!r}")
        self.out_of_band = out_of_band
        self.name = "pickle-oob" if out_of_band else "pickle"
        #: Tensor dtypes this torch cannot pickle and unpickle (measured, not assumed):
        #: torch 2.13 fails on uint16/32/64, float8 and complex32 storages.
        self.unsupported_dtypes = _unpicklable_tensor_dtypes()
        #: Measured too: numpy 2.4 unpickles a non-contiguous ``>f8`` array as ``<f8``.
        self.native_byte_order_only = _loses_ndarray_byte_order()

    def __repr__(self) -> str:
        return "PickleCodec(out_of_band=True)" if self.out_of_band else "PickleCodec()"

    def encode(self, msg: Any) -> List[Union[bytes, memoryview]]:
        if not self.out_of_band:
            return [pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)]
        buffers: List[pickle.PickleBuffer] = []
        body = pickle.dumps(msg, protocol=5, buffer_callback=buffers.append)
        return [body, *(b.raw() for b in buffers)]

    def decode(self, frames: Union[Sequence[Any], bytes, bytearray, memoryview], msg_type: Optional[type] = None) -> Any:
        """The unpickled message; ``msg_type`` (what a socket of an untagged engine carries) is not needed: a pickle names its class."""
        if isinstance(frames, (bytes, bytearray, memoryview)):
            frames = [frames]
        if not frames:
            raise DecodeError("no frames", "$")
        try:
            if self.out_of_band:
                return pickle.loads(frames[0], buffers=frames[1:])  # type: ignore[arg-type]  # bytes-likes are Sequences too, so mypy keeps bytes in the union after the wrap above
            if len(frames) != 1:
                raise DecodeError(f"expected 1 frame, got {len(frames)}", "$")
            return pickle.loads(frames[0])  # type: ignore[arg-type]  # as above
        except DecodeError:
            raise
        except Exception as exc:
            raise DecodeError(f"unpickling failed: {type(exc).__name__}: {exc}", "$") from None
