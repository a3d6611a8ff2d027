"""The commit line of generated tables: marked for uncommitted code, not for the tables a run writes."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

from conformance import provenance

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(root: pathlib.Path, *args: str) -> str:
    cmd = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture()
def checkout(tmp_path: pathlib.Path) -> pathlib.Path:
    _git(tmp_path, "init", "-q")
    (tmp_path / provenance.GENERATED_DIR).mkdir()
    (tmp_path / provenance.GENERATED_DIR / "table.md").write_text("old\n")
    (tmp_path / "tool.py").write_text("x = 1\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "start")
    return tmp_path


def test_a_clean_checkout_is_its_short_commit(checkout: pathlib.Path) -> None:
    assert provenance.commit(str(checkout)) == _git(checkout, "rev-parse", "--short", "HEAD")


def test_a_table_rewritten_by_an_earlier_run_does_not_mark_the_commit(checkout: pathlib.Path) -> None:
    (checkout / provenance.GENERATED_DIR / "table.md").write_text("new\n")
    assert "uncommitted" not in provenance.commit(str(checkout))


def test_changed_code_marks_the_commit(checkout: pathlib.Path) -> None:
    (checkout / "tool.py").write_text("x = 2\n")
    assert provenance.commit(str(checkout)).endswith("(with uncommitted changes)")


def test_a_directory_that_is_no_checkout_says_so(tmp_path: pathlib.Path) -> None:
    assert provenance.commit(str(tmp_path)).startswith("unknown")
