"""vLLM 0.34.0's engine-neutral golden vectors: the cases (one module per message family) and, in one folder per family, the files they generate.

``CASES`` is what :mod:`conformance.vectors.engine_build` writes from, in
this order; each module adds a family's cases (KV events, engine core, the
startup handshake, Mooncake's side channel), and another family gets vectors
by a module of its own listed here. Regenerate with vLLM 0.34.0 importable::

    python -m conformance.vectors generate --engine vllm

No module imports vLLM until a case is built.
"""

from __future__ import annotations

from typing import List

from conformance.vectors.engine_build import ValueCase

from . import engine_core, handshake, kv_events, mooncake

__all__ = ["CASES", "DIRECTORY"]

#: Where the files are: one folder per family (`kv-events/`, `engine-core/`, ...) beside this module (the engine profile names the same folder).
DIRECTORY = __path__[0]
CASES: List[ValueCase] = [*kv_events.CASES, *engine_core.CASES, *handshake.CASES, *mooncake.CASES]
