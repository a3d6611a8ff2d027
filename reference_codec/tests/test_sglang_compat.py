"""Wire v1 is SGLang 0.5.23's wire: same bytes both ways where neither side carries an opaque field.

Runs where SGLang is installed and its classes are the reference schema's
release (``tox -e sglang``); skipped elsewhere. The gate at any other release
tests SGLang's own classes (``--codec sglang``), not these.
"""

from __future__ import annotations

import pytest
import torch

from conformance.engines.sglang.adapter import ReferenceAdapter, reference_mismatch, sglang_available
from conformance.equivalence import assert_equivalent
from reference_codec import ReferenceCodec
from reference_codec import schema as s
from reference_codec.samples import batch_token_id_output, minimal

pytestmark = pytest.mark.skipif(not sglang_available(), reason="SGLang is not installed (tox -e sglang)")


@pytest.fixture(scope="module", autouse=True)
def _the_reference_schemas_classes():
    mismatch = reference_mismatch()
    if mismatch:
        pytest.skip(mismatch)

REFERENCE = ReferenceCodec()


@pytest.fixture(scope="module")
def sglang():
    return ReferenceAdapter()


def _message_params():
    for tag, cls in sorted(s.MESSAGE_TYPES.items()):
        msg = minimal(cls)
        if "rid" in cls.__struct_fields__:
            msg.rid = f"rid-{tag}"  # AbortReq's __post_init__ in SGLang turns rid=None into ""
        yield pytest.param(msg, id=tag)
    yield pytest.param(batch_token_id_output(16), id="BatchTokenIDOutput-16-with-tensors")
    item = s.MultimodalDataItem(
        modality=s.Modality.VIDEO,
        hash=2**64 - 1,
        offsets=[(0, 4)],
        feature=torch.zeros(2, 3, dtype=torch.bfloat16),
        model_specific_data={"image_grid_thw": torch.tensor([[1, 2, 2]])},
    )
    msg = minimal(s.TokenizedGenerateReqInput)
    msg.rid = "mm"
    msg.mm_inputs = s.MultimodalProcessorOutput(mm_items=[item], mrope_positions=torch.arange(6).reshape(3, 2))
    yield pytest.param(msg, id="TokenizedGenerateReqInput-multimodal")


MESSAGES = list(_message_params())


@pytest.mark.parametrize("msg", MESSAGES)
def test_reference_and_sglang_write_identical_bytes(sglang, msg):
    assert REFERENCE.encode(msg) == sglang.encode(msg)


@pytest.mark.parametrize("msg", MESSAGES)
def test_sglang_decodes_reference_bytes_and_the_reverse(sglang, msg):
    assert_equivalent(msg, sglang.decode(REFERENCE.encode(msg)), context="reference -> sglang")
    assert_equivalent(msg, REFERENCE.decode(sglang.encode(msg)), context="sglang -> reference")


def test_the_schema_diff_from_sglang_to_the_reference_finds_only_documented_differences(sglang):
    from conformance.engines.sglang.sync import documented, to_add
    from conformance.schema_diff import diff_schemas, load_schema

    # As a reviewer runs it: python -m conformance.schema_diff sglang.srt.managers.io_struct reference_codec.schema
    theirs = load_schema("sglang.srt.managers.io_struct")
    breaking = [c for c in diff_schemas(theirs, load_schema("reference_codec.schema")) if c.breaks("backward")]
    assert breaking and all(documented(c) for c in breaking), [str(c) for c in breaking if not documented(c)]
    assert to_add(s.MESSAGE_TYPES, {tag: cls for tag, cls in theirs.items() if tag in sglang.message_types}) == []


def test_the_sync_command_needs_no_change_for_the_release_the_schema_mirrors(capsys):
    from conformance.engines.sglang.sync import main

    assert main(["--check"]) == 0
    assert "no change needed" in capsys.readouterr().out
