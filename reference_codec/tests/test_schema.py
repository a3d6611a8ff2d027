"""The reference schema matches SGLang 0.5.23 and its message table is complete."""

from __future__ import annotations

import importlib
import json
import pathlib

import msgspec
import pytest

from conformance.engines.sglang.sync import fields_snapshot, snapshot_path, to_add
from reference_codec import schema
from reference_codec.schema import MESSAGE_TYPES, SCHEMA_VERSION, BaseBatchReq, BaseReq, iter_subclasses, wire_tag

#: The fields of every message of the release the schema mirrors, as ``python -m conformance.engines.sglang.sync`` wrote them.
SNAPSHOT = json.loads(pathlib.Path(snapshot_path(SCHEMA_VERSION)).read_text())["messages"]


def test_message_types_has_every_sglang_message_and_no_other():
    assert sorted(MESSAGE_TYPES) == sorted(SNAPSHOT)


def test_the_snapshot_is_what_the_sync_command_writes_for_the_same_fields():
    assert fields_snapshot(MESSAGE_TYPES, "")["messages"] == SNAPSHOT


def test_sync_lists_an_appended_field_and_a_new_message_of_a_newer_release():
    from typing import Optional

    flush = MESSAGE_TYPES["FlushCacheReqInput"]
    newer_flush = msgspec.defstruct(
        "FlushCacheReqInput", [("timeout_s", Optional[float], None), ("drain", bool, False)], bases=(BaseReq,), kw_only=True
    )
    new_message = msgspec.defstruct("DrainReqInput", [("deadline_s", float, 0.0)], bases=(BaseReq,), kw_only=True)
    wanted = to_add({"FlushCacheReqInput": flush}, {"FlushCacheReqInput": newer_flush, "DrainReqInput": new_message})
    assert wanted == [
        "add message DrainReqInput (rid, http_worker_ipc, deadline_s) to reference_codec/schema",
        "append to FlushCacheReqInput: 'drain' at the tail (3 of 4)",
    ]
    assert to_add(MESSAGE_TYPES, MESSAGE_TYPES) == []  # "no change needed"


def test_every_tag_is_unique_and_is_the_class_name():
    tags = [wire_tag(cls) for cls in MESSAGE_TYPES.values()]
    assert len(tags) == len(set(tags))
    for tag, cls in MESSAGE_TYPES.items():
        assert tag == cls.__name__ == wire_tag(cls)


def test_every_message_class_declared_in_the_schema_modules_is_in_message_types():
    declared = set()
    for name in ("generation", "control"):
        module = importlib.import_module(f"reference_codec.schema.{name}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, (BaseReq, BaseBatchReq)) and obj not in (BaseReq, BaseBatchReq):
                declared.add(obj)
    assert declared == set(MESSAGE_TYPES.values())


@pytest.mark.parametrize("tag", sorted(SNAPSHOT))
def test_field_names_order_and_defaults_match_sglang_0_5_23(tag):
    cls = MESSAGE_TYPES[tag]
    ours = [(f.name, f.default) for f in msgspec.inspect.type_info(cls).fields]
    theirs = SNAPSHOT[tag]
    assert [name for name, _ in ours] == [name for name, _ in theirs], "field names or order differ"
    for (name, default), (_, their_default) in zip(ours, theirs):
        if their_default is None:
            assert default is msgspec.NODEFAULT, f"{name} must be required"
        elif their_default.startswith("msgspec.field(default_factory="):
            continue  # checked by constructing below
        else:
            expected = eval(their_default, {"ProfileReqType": schema.ProfileReqType})  # literals from the snapshot
            assert default == expected and type(default) is type(expected), f"{name} default differs"


def test_iter_subclasses_finds_grandchildren_that_direct_subclass_scans_miss():
    class Child(BaseReq, kw_only=True):
        pass

    class GrandChild(Child, kw_only=True):
        x: int = 0

    found = set(iter_subclasses(BaseReq))
    assert GrandChild in found and GrandChild not in set(BaseReq.__subclasses__())


def test_message_types_ignores_subclasses_declared_outside_the_schema():
    class PluginMessage(BaseReq, kw_only=True):
        pass

    assert "PluginMessage" not in MESSAGE_TYPES


def test_every_message_is_a_tagged_positional_kw_only_struct():
    for cls in MESSAGE_TYPES.values():
        cfg = cls.__struct_config__
        assert cfg.array_like and cfg.tag == cls.__name__, cls
        if cls.__struct_fields__:
            with pytest.raises(TypeError):
                cls(None)  # kw_only: no positional construction


def test_opaque_fields_are_exactly_time_stats_and_customized_info():
    fields = {name for names in schema.OPAQUE_FIELDS.values() for name in names}
    assert fields == {"time_stats", "customized_info"}
