"""The schema-diff check finds every change that breaks positional decoding, and only those."""

from __future__ import annotations

from typing import Optional

import msgspec
import pytest

from conformance.schema_diff import diff_schemas, diff_struct, main
from reference_codec.schema import MESSAGE_TYPES, BaseReq


def _version(*fields, **options):
    return msgspec.defstruct("TokenizedReq", list(fields), bases=(BaseReq,), kw_only=True, **options)


V1 = _version(("input_ids", list), ("session_id", Optional[str], None), ("lora_id", Optional[str], None))


def kinds(changes):
    return [(c.kind, c.breaking) for c in changes]


def test_identical_schemas_have_no_changes():
    assert diff_schemas(MESSAGE_TYPES, MESSAGE_TYPES) == []


def test_field_inserted_in_the_middle_is_breaking():
    v2 = _version(("input_ids", list), ("priority", Optional[int], None), ("session_id", Optional[str], None), ("lora_id", Optional[str], None))
    changes = diff_struct("TokenizedReq", V1, v2)
    assert kinds(changes) == [("field inserted", True)]
    assert "'priority' at position 3" in changes[0].detail  # fields count from 0: rid, http_worker_ipc, input_ids, ...


def test_field_appended_at_the_tail_with_a_default_is_compatible():
    v2 = _version(("input_ids", list), ("session_id", Optional[str], None), ("lora_id", Optional[str], None), ("priority", Optional[int], None))
    assert kinds(diff_struct("TokenizedReq", V1, v2)) == [("field appended", False)]


def test_field_appended_without_a_default_is_breaking():
    v2 = _version(("input_ids", list), ("session_id", Optional[str], None), ("lora_id", Optional[str], None), ("priority", int))
    assert kinds(diff_struct("TokenizedReq", V1, v2)) == [("field appended", True)]


def test_field_removed_from_the_middle_is_breaking_and_from_the_tail_is_not():
    middle = _version(("input_ids", list), ("lora_id", Optional[str], None))
    assert kinds(diff_struct("TokenizedReq", V1, middle)) == [("field removed", True)]
    tail = _version(("input_ids", list), ("session_id", Optional[str], None))
    assert kinds(diff_struct("TokenizedReq", V1, tail)) == [("field removed", False)]


def test_type_change_and_new_requirement_are_breaking_default_change_is_not():
    v2 = _version(("input_ids", bytes), ("session_id", Optional[str], "s"), ("lora_id", str))
    assert kinds(diff_struct("TokenizedReq", V1, v2)) == [
        ("type changed", True),
        ("default changed", False),
        ("type changed", True),
        ("default changed", True),
    ]


def test_losing_array_like_is_breaking():
    v2 = msgspec.defstruct("TokenizedReq", [("input_ids", list)], tag=True)
    assert ("array_like changed", True) in kinds(diff_struct("TokenizedReq", V1, v2))


def test_removed_and_added_messages_are_reported():
    old = {"A": V1, "B": V1}
    new = {"A": V1, "C": V1}
    assert kinds(diff_schemas(old, new)) == [("message removed", True), ("message added", False)]


def test_command_line_exits_non_zero_on_a_breaking_change(capsys, monkeypatch):
    import types
    import sys

    v2 = _version(("input_ids", list), ("priority", Optional[int], None), ("session_id", Optional[str], None), ("lora_id", Optional[str], None))
    module = types.ModuleType("fake_schemas")
    module.OLD, module.NEW = {"TokenizedReq": V1}, {"TokenizedReq": v2}
    monkeypatch.setitem(sys.modules, "fake_schemas", module)
    assert main(["fake_schemas:OLD", "fake_schemas:NEW"]) == 1
    assert "BREAKING: TokenizedReq: field inserted" in capsys.readouterr().out
    assert main(["fake_schemas:OLD", "fake_schemas:OLD"]) == 0


@pytest.mark.parametrize("tag", ["TokenizedGenerateReqInput", "BatchTokenIDOutput"])
def test_reference_schema_against_itself_per_message(tag):
    assert diff_struct(tag, MESSAGE_TYPES[tag], MESSAGE_TYPES[tag]) == []
