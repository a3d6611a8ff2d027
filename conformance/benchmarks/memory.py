"""Peak memory of one decode, measured in a fresh process from the kernel's counters.

``tracemalloc`` cannot see torch's CPU allocations, so the measure is the
process's resident set: in a fresh interpreter (no allocator state left by
other benchmarks) the message is built and encoded, its frames are copied
into fresh writable buffers as ZeroMQ delivers them, the message and the
encoder's frames are dropped, then

1. ``VmRSS`` is read (the received frames are resident, nothing else big),
2. the peak counter is reset (``echo 5 > /proc/self/clear_refs``),
3. the frames are decoded and the result kept alive,
4. ``VmHWM`` (peak resident set since the reset) is read
   (:class:`conformance.peak_memory.PeakMeter` does 1, 2 and 4).

Before step 1 the heap is trimmed (``malloc_trim``): memory freed earlier but
still resident would otherwise be reused by the decode without raising the
peak, and a copy would look free.

``extra = VmHWM - VmRSS`` is what decoding added at its peak, and
``peak_ratio = (payload + extra) / payload`` is the peak memory of a decode
against its payload (the bytes on the wire), with the received frames counted
once. A zero-copy decode scores about 1.0, a decode that copies the payload
once about 2.0. Codec ``memcpy`` (``bytearray(frame)``) checks the method:
it must read about 2.0.

Linux only (``/proc``); elsewhere :func:`measure` returns ``None``.
``python -m conformance.benchmarks.memory CODEC FAMILY`` prints one JSON line.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from typing import Any, Dict, Optional

from conformance.peak_memory import PeakMeter, trim_heap

__all__ = ["measure", "available", "PEAK_RATIO_TARGET"]

#: The target: a decode's peak memory is at most 1.1 x its payload.
PEAK_RATIO_TARGET = 1.1


def available() -> bool:
    return os.path.exists("/proc/self/clear_refs") and os.path.exists("/proc/self/status")


def _child(codec_name: str, family: str) -> Dict[str, Any]:
    from conformance.benchmarks import corpus
    from conformance.benchmarks.codecs import get_codec, wire_bytes

    if codec_name == "memcpy":
        codec = get_codec("reference-v1")
    else:
        codec = get_codec(codec_name)
    obj = codec.prepare(corpus.build(family))
    frames = codec.encode(obj)
    payload = wire_bytes(frames)
    received = [bytearray(f) for f in frames]  # writable buffers, as zmq.Frame(copy=False) delivers
    del obj, frames
    corpus.build.cache_clear()
    gc.collect()
    if codec_name == "memcpy":
        decode = lambda fs: [bytearray(f) for f in fs]  # noqa: E731 - the method's yardstick: one copy
    else:
        decode = codec.decode
    decode(received)  # warm the code paths (imports, caches) outside the window
    gc.collect()
    trim_heap()  # without it, a decode reusing freed (still resident) heap would look free
    meter = PeakMeter()
    meter.start()
    result = decode(received)
    extra = meter.growth()
    del result
    return {
        "codec": codec_name,
        "family": family,
        "payload_bytes": payload,
        "rss_before_bytes": meter.baseline(),
        "extra_bytes": extra,
        "peak_ratio": (payload + extra) / payload,
    }


def measure(codec_name: str, family: str, timeout_s: float = 300) -> Optional[Dict[str, Any]]:
    """Decode peak memory of ``family`` with ``codec_name`` (see the module docstring), or ``None`` off Linux."""
    if not available():
        return None
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.benchmarks.memory", codec_name, family],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"memory probe {codec_name} {family} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore")
    print(json.dumps(_child(sys.argv[1], sys.argv[2])))
