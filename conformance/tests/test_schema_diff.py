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


def directions(changes):
    return [(c.kind, c.backward, c.forward) for c in changes]


def test_identical_schemas_have_no_changes():
    assert diff_schemas(MESSAGE_TYPES, MESSAGE_TYPES) == []


def test_field_inserted_in_the_middle_is_breaking():
    v2 = _version(("input_ids", list), ("priority", Optional[int], None), ("session_id", Optional[str], None), ("lora_id", Optional[str], None))
    changes = diff_struct("TokenizedReq", V1, v2)
    assert kinds(changes) == [("field inserted", True)]
    assert "'priority' at 3 of 6" in changes[0].detail  # fields count from 0: rid, http_worker_ipc, input_ids, ...


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


def test_type_change_is_refused_both_ways_and_a_default_change_breaks_nothing_when_every_field_is_written():
    v2 = _version(("input_ids", bytes), ("session_id", Optional[str], "s"), ("lora_id", str))
    assert directions(diff_struct("TokenizedReq", V1, v2)) == [
        ("type changed", "refuses", "refuses"),
        ("default changed", "ok", "ok"),  # a positional sender writes every field, its default or not
        ("type changed", "refuses", "ok"),  # an old sender's None is refused
        ("default removed", "ok", "ok"),
    ]


def test_with_omit_defaults_a_changed_default_is_misread_and_a_removed_one_refused():
    old = msgspec.defstruct("M", [("x", int, 0), ("y", int, 1)], omit_defaults=True, tag=True, kw_only=True)
    new = msgspec.defstruct("M", [("x", int, 5), ("y", int)], omit_defaults=True, tag=True, kw_only=True)
    assert directions(diff_struct("M", old, new)) == [("default changed", "misreads", "misreads"), ("default removed", "refuses", "ok")]
    sent = msgspec.msgpack.encode(old(x=0, y=2))  # x equals its old default: left out
    assert msgspec.msgpack.decode(sent, type=msgspec.defstruct("M", [("x", int, 5), ("y", int, 1)], tag=True)).x == 5  # read as the new default


def test_losing_array_like_is_breaking():
    v2 = msgspec.defstruct("TokenizedReq", [("input_ids", list)], tag=True)
    assert ("array_like changed", True) in kinds(diff_struct("TokenizedReq", V1, v2))


def test_removed_and_added_messages_are_reported():
    old = {"A": V1, "B": V1}
    new = {"A": V1, "C": V1}
    assert directions(diff_schemas(old, new)) == [("message removed", "refuses", "ok"), ("message added", "ok", "refuses")]


def test_command_line_exits_non_zero_on_a_breaking_change(capsys, monkeypatch):
    import sys
    import types

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


# --- nested structs ----------------------------------------------------------------

SP_FIELDS = [("temperature", float, 1.0), ("top_p", float, 1.0), ("top_k", int, -1)]


def _sampling(fields, **options):
    return msgspec.defstruct("SamplingParams", fields, array_like=True, kw_only=True, **options)


def _request(sampling):
    return msgspec.defstruct(
        "TokenizedGenerateReqInput",
        [("input_ids", list), ("sampling_params", Optional[sampling], None), ("history", list[sampling], [])],
        bases=(BaseReq,),
        kw_only=True,
    )


OLD_SP = _sampling(SP_FIELDS)


@pytest.mark.parametrize(
    "fields, kind, breaking, detail",
    [
        ([SP_FIELDS[0], ("min_p", float, 0.0), *SP_FIELDS[1:]], "field inserted", True, "'min_p' at 1 of 4, before 'top_p'"),
        ([SP_FIELDS[0], SP_FIELDS[2]], "field removed", True, "'top_p' at 1 of 3"),
        ([SP_FIELDS[1], SP_FIELDS[0], SP_FIELDS[2]], "field renamed or reordered", True, "position 0 of 3"),
        ([*SP_FIELDS, ("min_p", float, 0.0)], "field appended", False, "'min_p' at the tail (3 of 4)"),
        ([*SP_FIELDS, ("min_p", float)], "field appended", True, "without a default"),
    ],
    ids=["insert", "remove", "reorder", "tail-append", "tail-append-required"],
)
def test_a_change_inside_a_nested_positional_struct_is_found_with_its_path(fields, kind, breaking, detail):
    changes = diff_struct("TokenizedGenerateReqInput", _request(OLD_SP), _request(_sampling(fields)))
    assert kinds(changes) == [(kind, breaking)]
    assert changes[0].where == "TokenizedGenerateReqInput.sampling_params -> SamplingParams"  # first path that reaches it
    assert detail in changes[0].detail
    assert str(changes[0]).startswith(f"{'BREAKING' if breaking else 'compatible'}: TokenizedGenerateReqInput.sampling_params -> SamplingParams: {kind}")


def test_an_inserted_nested_field_makes_an_older_reader_misread_without_an_error():
    """Why the diff must look inside: the old reader decodes the new bytes and gets the wrong top_p."""
    floats = [("temperature", float, 1.0), ("top_p", float, 1.0), ("repetition_penalty", float, 1.0)]
    old_sp, new_sp = _sampling(floats), _sampling([floats[0], ("min_p", float, 0.0), *floats[1:]])
    old_req, new_req = _request(old_sp), _request(new_sp)
    data = msgspec.msgpack.encode(new_req(input_ids=[1], sampling_params=new_sp(temperature=0.7, min_p=0.05, top_p=0.9)))
    misread = msgspec.msgpack.decode(data, type=old_req)
    assert misread.sampling_params.top_p == 0.05  # min_p's value
    assert any(c.breaking for c in diff_struct("TokenizedGenerateReqInput", old_req, new_req))


def test_a_struct_encoded_as_a_map_matches_fields_by_name():
    old = msgspec.defstruct("Hints", [("a", int, 0), ("b", int, 0)])
    new = msgspec.defstruct("Hints", [("c", int, 0), ("b", int, 0), ("a", int, 0)])
    outer = lambda hints: msgspec.defstruct("M", [("hints", dict[str, hints], {})], tag=True, array_like=True)  # noqa: E731
    changes = diff_struct("M", outer(old), outer(new))
    assert kinds(changes) == [("field added", False)] and changes[0].where == "M.hints -> Hints"


def test_constrained_ints_compare_by_base_type_and_constraints():
    from reference_codec.schema import Int64, UInt64

    plain = msgspec.defstruct("M", [("room", Optional[int], None)], tag=True, array_like=True)
    unsigned = msgspec.defstruct("M", [("room", Optional[UInt64], None)], tag=True, array_like=True)
    assert kinds(diff_struct("M", unsigned, unsigned)) == []
    # A negative room is now refused (ge tightened); rooms above 2**63 now fit (le loosened).
    assert directions(diff_struct("M", plain, unsigned)) == [("constraint tightened", "refuses", "ok"), ("constraint loosened", "ok", "refuses")]
    assert directions(diff_struct("M", unsigned, plain)) == [("constraint tightened", "refuses", "ok"), ("constraint loosened", "ok", "refuses")]
    int64 = msgspec.defstruct("M", [("room", Optional[Int64], None)], tag=True, array_like=True)
    assert kinds(diff_struct("M", plain, int64)) == []  # an int field means int64 (see schema_diff._INT_MIN)


def test_a_widened_union_is_backward_compatible_and_breaks_forward_and_a_narrowed_one_the_other_way():
    narrow = msgspec.defstruct("M", [("x", Optional[str], None)], tag=True, array_like=True)
    wide = msgspec.defstruct("M", [("x", Optional[str | int], None)], tag=True, array_like=True)
    assert directions(diff_struct("M", narrow, wide)) == [("type widened", "ok", "refuses")]
    assert directions(diff_struct("M", wide, narrow)) == [("type changed", "refuses", "ok")]


def test_a_changed_tag_is_breaking():
    a = msgspec.defstruct("M", [("x", int, 0)], tag="M", array_like=True)
    b = msgspec.defstruct("M", [("x", int, 0)], tag="M2", array_like=True)
    assert ("tag changed", True) in kinds(diff_struct("M", a, b))


def test_a_module_is_read_by_discovering_its_tagged_messages(tmp_path, monkeypatch, capsys):
    import sys
    import types

    from conformance.schema_diff import discover_messages

    discovered = discover_messages(sys.modules["reference_codec.schema"])
    assert set(MESSAGE_TYPES) <= set(discovered) and "BaseReq" not in discovered  # bases with tagged subclasses are left out
    old, new = types.ModuleType("schema_v1"), types.ModuleType("schema_v2")
    old.TokenizedGenerateReqInput = _request(OLD_SP)
    new.TokenizedGenerateReqInput = _request(_sampling([SP_FIELDS[0], ("min_p", float, 0.0), *SP_FIELDS[1:]]))
    monkeypatch.setitem(sys.modules, "schema_v1", old)
    monkeypatch.setitem(sys.modules, "schema_v2", new)
    assert main(["schema_v1", "schema_v2"]) == 1
    out = capsys.readouterr().out
    assert "BREAKING: TokenizedGenerateReqInput.sampling_params -> SamplingParams: field inserted: 'min_p' at 1 of 4" in out
    assert "compared 1 message types and 2 structs: 1 breaking change(s) (backward)" in out
    assert "schema diff schema_v1 -> schema_v2 (backward; 1 message types, 2 structs compared): 1 BREAKING change(s), first: TokenizedGenerateReqInput.sampling_params" in out
    assert main(["schema_v1", "schema_v2", "--json"]) == 1
    import json

    report = json.loads(capsys.readouterr().out)
    assert report["breaking"] == 1 and report["changes"][0]["where"] == "TokenizedGenerateReqInput.sampling_params -> SamplingParams"
    with pytest.raises(SystemExit):
        main(["schema_v1", "no_such_module_here"])


def _engine_with_family_raising(exc: ImportError):
    from types import SimpleNamespace

    from conformance.engines import MessageFamily

    class Ping(msgspec.Struct, tag=True):
        n: int

    def missing():
        raise exc

    families = (MessageFamily("core", "pings", lambda: {"Ping": Ping}), MessageFamily("later", "newer family", missing))
    return SimpleNamespace(name="toy", package="toyengine", families=families)  # what engine_snapshot reads of an Engine


def test_a_snapshot_names_a_family_the_release_lacks_and_refuses_one_that_a_missing_dependency_hides():
    from conformance.schema_diff.snapshot import SnapshotError, engine_snapshot

    lacked = engine_snapshot(_engine_with_family_raising(ModuleNotFoundError("no", name="toyengine.later")), release="1.0")
    assert list(lacked.families) == ["core"] and set(lacked.absent) == {"later"}
    with pytest.raises(SnapshotError, match=r"family 'later' of toy 1.0 did not import, and not because the release lacks it.*httpx"):
        engine_snapshot(_engine_with_family_raising(ModuleNotFoundError("No module named 'httpx'", name="httpx")), release="1.0")
