"""A family's roots are read off the engine's modules: the classes a module defines, and the types its code decodes with."""

from __future__ import annotations

import sys
import textwrap

import pytest

from conformance.engines.discovery import classes_defined_in, decoded_types


@pytest.fixture
def wire_modules(tmp_path, monkeypatch):
    package = tmp_path / "toywire"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "messages.py").write_text(textwrap.dedent("""
        import dataclasses
        from typing import NamedTuple
        import msgspec

        class Pull(msgspec.Struct):
            ids: list

        class Heartbeat(msgspec.Struct):
            ids: list = []

        @dataclasses.dataclass
        class Ready:
            size: int

        class Pair(NamedTuple):
            a: int
            b: int

        class NotAMessage:
            pass
    """))
    (package / "connector.py").write_text(textwrap.dedent("""
        import msgspec
        from toywire.messages import Heartbeat, NotAMessage

        _heartbeats = msgspec.msgpack.Decoder(Heartbeat)

        def handshake(buf, local_type):
            from .messages import Ready
            msgspec.msgpack.Decoder(local_type)      # a variable, not a class: skipped
            msgspec.msgpack.Decoder(NotAMessage)     # a class msgspec does not take field by field: skipped
            return msgspec.msgpack.decode(buf, type=Ready)

        def engine_decoder(buf):
            from toywire.messages import Pull
            return MsgpackDecoder(Pull).decode(buf)

        class MsgpackDecoder:
            def __init__(self, t):
                self.t = t
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "toywire"
    for name in [m for m in sys.modules if m == "toywire" or m.startswith("toywire.")]:
        del sys.modules[name]


def test_classes_defined_in_a_module_are_its_structs_dataclasses_and_namedtuples_not_its_imports(wire_modules):
    assert set(classes_defined_in(f"{wire_modules}.messages")) == {"Pull", "Heartbeat", "Ready", "Pair"}
    assert classes_defined_in(f"{wire_modules}.connector") == {}
    assert set(classes_defined_in(f"{wire_modules}.messages", exclude=["Pair"])) == {"Pull", "Heartbeat", "Ready"}


def test_decoded_types_are_what_the_module_decodes_with_plain_msgspec_including_function_level_imports(wire_modules):
    found = decoded_types([f"{wire_modules}.connector"])
    assert set(found) == {"Heartbeat", "Ready"}
    assert found["Ready"].__module__ == f"{wire_modules}.messages"


def test_decoded_types_with_the_engine_s_own_decoder_class(wire_modules):
    assert set(decoded_types([f"{wire_modules}.connector"], decoders=("MsgpackDecoder",))) == {"Pull"}


def test_a_module_that_does_not_import_raises_import_error():
    with pytest.raises(ImportError):
        decoded_types(["toywire_not_here.connector"])
