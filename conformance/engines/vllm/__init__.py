"""vLLM: its engine-core messages, its own codec through an adapter, its strategies, failure lists and findings.

* :mod:`.engine`: the :class:`~conformance.engines.profile.Engine` (``--engine vllm``).
* :mod:`.codec`: vLLM's own msgpack codec as a codec under test (``--codec vllm``).
* :mod:`.strategies`: vLLM's messages drawn within vLLM's documented ranges.
* ``failure_lists/``: the findings each released vLLM is known to show; ``findings-*.md``: what they are.
"""

from .engine import CODECS, ENGINE

__all__ = ["ENGINE", "CODECS"]
