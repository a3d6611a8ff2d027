"""The weightless model folder SGLang's front end loads: reproducible, and never written over a real one."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("tokenizers")

from conformance.engines.sglang.live_model import VOCAB_SIZE, write_model_folder  # noqa: E402


def _contents(path):
    return {name: open(os.path.join(path, name), "rb").read() for name in sorted(os.listdir(path))}


def test_model_folder_is_the_same_bytes_every_time(tmp_path):
    a = _contents(write_model_folder(str(tmp_path / "a")))
    b = _contents(write_model_folder(str(tmp_path / "b")))
    assert a == b
    assert b'"vocab_size": %d' % VOCAB_SIZE in a["config.json"]


def test_model_folder_refuses_a_folder_holding_other_files(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    with pytest.raises(FileExistsError, match="model.safetensors"):
        write_model_folder(str(tmp_path))
