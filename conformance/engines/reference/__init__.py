"""The reference schema: the wire the reference codec defines, the default engine.

* :mod:`.engine`: the :class:`~conformance.engines.profile.Engine`
  (``--engine reference``, the default): the messages of
  :mod:`reference_codec.schema` (SGLang's, as of the release it mirrors), the
  reference codec, the pickle baseline, the golden vectors and the testee
  protocol's messages.

The installed SGLang, at any release, is the ``sglang`` engine.
"""

from .engine import CODECS, ENGINE

__all__ = ["ENGINE", "CODECS"]
