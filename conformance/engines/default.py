"""The engine a run tests when none is named: the one place the suite chooses an engine.

The reference schema is the default because the reference codec, the golden
vectors and the testee protocol speak it: ``python -m conformance --codec
reference`` checks the reference codec against the wire it defines. A codec
named like a built-in engine (``--codec sglang``, ``--codec vllm``) selects
that engine when none is named
(:func:`conformance.engines.profile.engine_spec_from_environment`).
"""

DEFAULT_ENGINE = "reference"
