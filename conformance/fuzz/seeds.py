"""The valid encodings the fuzz harness starts from: every message type, drawn with a fixed seed.

Seeds come from the selected engine's strategies (for SGLang, ``st.from_type``
of each message class) with Hypothesis seeded by ``seed``, so a run is reproducible, and are
encoded by the implementation under test, so its own layout (v1, v2, or
another) is what gets damaged. A message the implementation cannot encode is
skipped and counted; that is the encoding properties' business, not this one's.
"""

from __future__ import annotations

import warnings
from typing import Any, List, Tuple

from .attacks import Seed

__all__ = ["build_seeds"]


def build_seeds(codec: Any, *, per_type: int = 2, seed: int = 0) -> Tuple[List[Seed], int]:
    """``(seeds, skipped)``: up to ``per_type`` encodings of every message type, plus the engine's samples."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as fixed_seed

    from conformance.properties import ENGINE, MESSAGE_TYPES, message_strategy

    out: List[Seed] = []
    skipped = 0

    def add(msg: Any, label: str) -> None:
        nonlocal skipped
        try:
            frames = codec.encode(msg)
        except Exception:
            skipped += 1
            return
        out.append(Seed.of(frames, label))

    def collector(tag: str):
        @fixed_seed(seed)
        @settings(
            max_examples=per_type,
            database=None,
            phases=[Phase.generate],
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=False,
        )
        @given(message_strategy(tag, codec))
        def collect(msg):
            add(msg, tag)

        return collect

    for tag in sorted(MESSAGE_TYPES):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            collector(tag)()

    for label, msg in ENGINE.samples(seed):
        add(msg, label)
    return out, skipped
