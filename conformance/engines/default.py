"""The engine a run tests when none is named: the one place the suite chooses an engine.

SGLang is the default because the reference codec speaks its wire: the
reference schema (``reference_codec.schema``) mirrors SGLang's messages, so
``python -m conformance --codec reference`` checks the reference codec
against the engine it was written for.
"""

DEFAULT_ENGINE = "sglang"
