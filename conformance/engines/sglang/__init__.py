"""SGLang: its IPC messages (the reference schema), its own codec through an adapter, its failure lists and findings.

* :mod:`.engine`: the :class:`~conformance.engines.profile.Engine` (``--engine sglang``, the default).
* :mod:`.codec`: SGLang's own msgpack codec as a codec under test (``--codec sglang``).
* :mod:`.bench`: that codec as the benchmarks measure it, and the reference's speed target against it.
* :mod:`.sync`: following a new SGLang release (``python -m conformance.engines.sglang.sync``).
* ``failure_lists/``: the findings each released SGLang is known to show; ``findings-*.md``: what they are.
"""

from .engine import CODECS, ENGINE

__all__ = ["ENGINE", "CODECS"]
