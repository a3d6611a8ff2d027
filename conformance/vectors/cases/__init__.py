"""The golden vector cases, one module per area, registered into :data:`conformance.vectors.build.CASES`.

Importing this package imports the area modules in the order below, which is the order
of ``CASES`` and so of ``python -m conformance.vectors list``: y_ v1, y_ v2, n_ v1, n_ v2,
i_, then the fuzz findings.
"""

# isort: off
from . import (  # noqa: F401 - imported to register their cases, in this order
    messages,
    tensors,
    untyped,
    scalars,
    field_encodings,
    other_senders,
    out_of_band,
    bad_input,
    bad_buffers,
    unsafe_payloads,
    bad_out_of_band,
    implementation_defined,
    fuzz_findings,
)
# isort: on
