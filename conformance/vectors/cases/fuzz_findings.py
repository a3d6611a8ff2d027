"""n_fuzz_: the fuzz loop's findings against real implementations, shrunk, one vector each.

The findings are ``conformance/fuzz/findings/*.json`` (``python -m conformance.fuzz ...
--save-findings``). Each broke some decoder (the description says which, and how); the
reference rejects each, so every implementation must. A finding of one frame is a v1
vector, one of several frames a v2 vector.
"""

from __future__ import annotations

from conformance.fuzz.findings import load_findings

from ..registry import case


def _register_fuzz_findings() -> None:
    for finding in load_findings():
        if finding.reference_reason is None:
            continue  # the reference decodes it: not a rejection vector (the fuzz loop reports such cases)
        frames = [bytes.fromhex(f) for f in finding.frames]
        wire_version = "v2" if len(frames) > 1 else "v1"
        case(f"n_fuzz_{finding.name}", finding.description, wire=wire_version, reason=finding.reference_reason[:60])(
            lambda frames=frames: frames
        )


_register_fuzz_findings()
