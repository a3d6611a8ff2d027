"""Which message classes the codec walks, and that a walk changes only what it must."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Set

import msgspec
import pytest

from reference_codec import schema as s
from reference_codec.samples import minimal
from reference_codec.schema_plan import walker_for


def _request(params: s.SamplingParams) -> s.TokenizedGenerateReqInput:
    request = minimal(s.TokenizedGenerateReqInput)
    request.sampling_params = params
    return request


def test_a_class_whose_only_watched_position_is_a_typed_set_is_walked_on_encode_only():
    assert walker_for(s.SamplingParams, sets=True) is not None
    assert walker_for(s.SamplingParams, sets=False) is None


def test_a_control_message_without_untyped_or_opaque_fields_is_never_walked():
    assert walker_for(s.FlushCacheReqInput, sets=True) is None
    assert walker_for(s.FlushCacheReqInput, sets=False) is None


def test_encode_walk_rebuilds_only_the_branch_whose_set_was_out_of_order():
    params = s.SamplingParams(stop_token_ids={8, 1})
    assert list(params.stop_token_ids) == [8, 1]  # iteration order, not ascending
    message = _request(params)
    walked = walker_for(type(message), sets=True)(message, _no_visit, ())
    assert walked is not message and walked.sampling_params is not params
    assert walked.sampling_params.stop_token_ids == [1, 8]
    assert message.sampling_params.stop_token_ids == {8, 1}  # the caller's message is not mutated


def test_encode_walk_returns_the_message_itself_when_every_set_is_already_in_order():
    message = _request(s.SamplingParams(stop_token_ids={2, 151645}))
    walk = walker_for(type(message), sets=True)
    assert walk(message, _no_visit, ()) is message


def _no_visit(kind, value, path):
    pytest.fail(f"visited {kind} at {path}: a typed set is put in order by the walk itself")


def test_walk_paths_name_the_fields_it_visits():
    seen = []
    message = _request(s.SamplingParams(stop_token_ids={1, 2}))
    message.positional_embed_overrides = s.PositionalEmbeds(embeds=[1.5], positions=[0])
    walker_for(type(message), sets=True)(message, lambda kind, value, path: seen.append((kind, path)) or value, ())
    assert seen == [("any", ("positional_embed_overrides", "embeds"))]


class _Inner(msgspec.Struct):
    first: Optional[Set[int]] = None
    second: Optional[Set[int]] = None


class _Outer(msgspec.Struct):
    inner: Optional[_Inner] = None


@pytest.mark.parametrize("inner", [_Inner(first={8, 1}), _Inner(second={8, 1}), _Inner(first={2}, second={8, 1})], ids=["first", "second", "both"])
def test_a_nested_struct_is_entered_whenever_any_of_its_watched_fields_is_set(inner):
    walked = walker_for(_Outer, sets=True)(_Outer(inner), _no_visit, ())
    for name in ("first", "second"):
        value = getattr(inner, name)
        assert getattr(walked.inner, name) == (None if value is None else [1, 8] if len(value) == 2 else value)


def test_a_nested_struct_whose_watched_fields_are_all_none_is_left_as_it_is():
    message = _Outer(_Inner())
    assert walker_for(_Outer, sets=True)(message, _no_visit, ()) is message


class _Untyped(msgspec.Struct):
    items: Optional[List[Any]] = None
    by_name: Optional[Dict[str, Any]] = None


def _must_not_visit(kind, value, path):
    pytest.fail(f"visited {kind} {value!r} at {path}: a plain leaf is passed over")


def test_a_typed_list_or_dict_of_plain_leaves_is_returned_as_it_is_without_a_visit():
    message = _Untyped(items=[None, True, "s", b"b", 1.5, -(2**63), 2**64 - 1], by_name={"a": 1, "b": None})
    assert walker_for(_Untyped, sets=True)(message, _must_not_visit, ()) is message
    assert walker_for(_Untyped, sets=False)(message, _must_not_visit, ()) is message


def test_a_typed_list_or_dict_of_untyped_values_visits_only_what_is_not_a_plain_leaf_and_copies_what_changed():
    seen = []

    def visit(kind, value, path):
        seen.append(path)
        return ("changed", value) if isinstance(value, tuple) else value

    message = _Untyped(items=["s", (1,), 2**64, [1], -(2**63) - 1, 7], by_name={"a": 1, "t": (2,), "n": None})
    walked = walker_for(_Untyped, sets=True)(message, visit, ())
    assert seen == [("items", 1), ("items", 2), ("items", 3), ("items", 4), ("by_name", "t")]
    assert walked.items == ["s", ("changed", (1,)), 2**64, [1], -(2**63) - 1, 7]
    assert list(walked.by_name.items()) == [("a", 1), ("t", ("changed", (2,))), ("n", None)]  # same keys, same order
    assert message.items[1] == (1,) and message.by_name["t"] == (2,)  # the caller's message is not mutated
