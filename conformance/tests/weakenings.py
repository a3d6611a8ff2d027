"""A pytest plugin for the meta-tests: switch off one property's check, to prove a meta-test depends on it.

``python -m conformance ... -p conformance.tests.weakenings`` with
``IPC_META_WEAKEN=NAME`` replaces the check NAME with one that can never fail
(or with one that no longer tests the codec). A meta-test that still sees
its broken codec fail under the weakening was not testing that check.
Test-only: the shipped suite never loads it.
"""

from __future__ import annotations

import os
import sys
from typing import Callable, Dict

WEAKEN_ENV = "IPC_META_WEAKEN"


def _suite_module(name: str):
    for module_name, module in sys.modules.items():
        if module_name == name or module_name.endswith("." + name):
            return module
    raise LookupError(f"suite module {name} is not imported: is it in the selection?")


def _equivalence() -> None:
    import conformance.equivalence as equivalence
    import conformance.properties as properties

    def nothing(*args, **kwargs):
        return []

    properties.differences = nothing
    equivalence.differences = nothing
    for module_name in ("test_golden_vectors",):
        try:
            _suite_module(module_name).differences = nothing
        except LookupError:
            pass


def _reencode_bytes() -> None:
    _suite_module("test_reencode")._same_bytes = lambda a, b: True


def _schema_evolution() -> None:
    from reference_codec import ReferenceCodec

    reference = ReferenceCodec()
    _suite_module("test_schema_evolution")._decode_evolved = lambda codec, frames, what, msg: reference.decode(frames)


def _schema_diff() -> None:
    _suite_module("test_schema_evolution").diff_struct = lambda *args, **kwargs: []


def _decoder_contract() -> None:
    from conformance.fuzz.harness import Harness, Outcome

    Harness.run = lambda self, frames, msg_type=None: Outcome("rejected")


def _frame_count() -> None:
    _suite_module("test_bad_input")._must_reject = lambda codec, frames, fault, msg: None


def _transport_decode() -> None:
    module = _suite_module("test_transport")
    decode = module._decode_received
    module._decode_received = lambda codec, frames, key, msg: decode(codec, [bytes(f) for f in frames], key, msg)


def _device_refusal() -> None:
    _suite_module("test_devices")._decoded_without_a_declared_mapping = lambda codec, msg, decoded, device, count: None


def _golden_rejection() -> None:
    _suite_module("test_golden_vectors")._rejection_required = lambda codec, vector, decoded: None


#: Each weakening by name: what it switches off.
WEAKENINGS: Dict[str, Callable[[], None]] = {
    "equivalence": _equivalence,  # every value comparison finds no difference
    "reencode-bytes": _reencode_bytes,  # two encodings always count as the same bytes
    "schema-evolution": _schema_evolution,  # an older or newer sender's body is decoded by the reference, not the codec
    "schema-diff": _schema_diff,  # the schema diff finds no breaking change
    "decoder-contract": _decoder_contract,  # every hostile input counts as rejected
    "frame-count": _frame_count,  # a frame list of the wrong length is never checked
    "transport-decode": _transport_decode,  # received zmq.Frames are copied to bytes before the codec sees them
    "device-refusal": _device_refusal,  # a tensor from an absent device may be decoded anywhere
    "golden-rejection": _golden_rejection,  # an n_ vector that decodes is let through
}


def pytest_collection_finish(session) -> None:
    name = os.environ.get(WEAKEN_ENV)
    if not name:
        return
    if name not in WEAKENINGS:
        raise ValueError(f"{WEAKEN_ENV}={name!r}: one of {sorted(WEAKENINGS)}")
    WEAKENINGS[name]()
