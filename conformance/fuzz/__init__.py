"""Fuzzing decoders with hostile frames: attacks, the per-input contract, and the seeded long loop.

* :mod:`.attacks` and :mod:`.bytes_mutations` make hostile input from valid encodings;
* :mod:`.harness` decodes one input and classifies the outcome against the contract
  (message or declared decode error; bounded time and memory; no code executed);
* :mod:`.loop` runs millions of inputs in watched worker processes (``python -m conformance.fuzz``);
* :mod:`.minimise` shrinks the loop's findings, :mod:`.findings` saves them as ``n_`` golden vectors.

The Hypothesis form of the same properties is ``conformance/suite/test_bad_input.py``.
"""
