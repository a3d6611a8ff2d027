"""SGLang as installed here, at any release or development build: its own classes, its own codec, its failure lists and findings.

* :mod:`.engine`: the :class:`~conformance.engines.profile.Engine` (``--engine sglang``, or ``--codec sglang`` alone).
* :mod:`.installed`: what the installed SGLang is, read off its code (message classes, enums, ext codes).
* :mod:`.codec`: SGLang's own msgpack codec on its own classes (``--codec sglang``).
* :mod:`.strategies`: SGLang's classes drawn with SGLang's field meanings.
* :mod:`.adapter`: SGLang's codec driven with the reference schema's messages (benchmarks, byte comparisons).
* :mod:`.bench`: SGLang's codec as the benchmarks measure it, and the reference's speed target against it.
* :mod:`.sync`: following a new SGLang release with the reference schema (``python -m conformance.engines.sglang.sync``).
* ``failure_lists/``: the findings SGLang is known to show; ``findings-*.md``: what they are.
"""

from .engine import CODECS, ENGINE

__all__ = ["ENGINE", "CODECS"]
