"""The per-release environments (``conformance.releases``), without network and without building anything big.

pip is replaced by a fake (``environments._run``) that writes empty wheels and
dist-info folders and answers the import check; the venv itself is real (no
pip in it, so it takes milliseconds). The release lists of the built-in
engines are checked against the range the release history covers and against
the pins of ``constraints/``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Dict, List, Optional, Sequence

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from conformance.engines import Engine, FamilyNotInRelease, MessageFamily, Release
from conformance.releases import __main__ as cli
from conformance.releases import environments as envs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _engine(name: str = "demo", package: Optional[str] = "demopkg", releases=(), families=()) -> Engine:
    return Engine(
        name=name, description="a test engine", message_types=lambda: {}, message_strategy=lambda cls: None,
        codecs={}, pickle_baseline=lambda: None, package=package, releases=releases, families=families,
    )


DEMO_RELEASES = (Release("1.0", requirements=("helper==2.0", "shared-dep==1.5")), Release("1.1", requirements=("helper==2.1",)))
#: Named as ``MODULE:ATTR`` by the command-line tests.
DEMO_ENGINE = _engine(releases=DEMO_RELEASES)
SUITE = ("shared-dep==1.5", "msgspec==0.23.0")


def _wheel_name(requirement: str) -> str:
    req = Requirement(requirement)
    (spec,) = req.specifier
    return f"{canonicalize_name(req.name).replace('-', '_')}-{spec.version}-py3-none-any.whl"


class FakePip:
    """Stands in for every subprocess ``environments`` starts; records the calls."""

    def __init__(self) -> None:
        self.calls: List[List[str]] = []
        self.envs: List[Dict[str, str]] = []  # the environment variables of each call
        self.fail: Dict[str, str] = {}  # step kind ("download", "install", "import", "run") -> output of a failing call
        self.sizes: Dict[str, int] = {}  # requirement -> size of the wheel written for it
        self.timeout = False
        self.probe: List[dict] = []

    def kind(self, argv: Sequence[str]) -> str:
        if argv[1:3] == ["-m", "pip"]:
            return "download" if "download" in argv else "install"
        if argv[1] == "-c":
            return "import"
        return "run"

    def __call__(self, argv, *, timeout, env=None, cwd=None):
        argv = list(argv)
        self.calls.append(argv)
        self.envs.append(dict(env or {}))
        kind = self.kind(argv)
        assert env is not None and "PIP_CONSTRAINT" not in env, "the caller's PIP_CONSTRAINT reached pip"
        if self.timeout:
            return envs.Completed(returncode=-9, output="still working", timed_out=True)
        if kind in self.fail:
            return envs.Completed(returncode=1, output=self.fail[kind])
        if kind == "download":
            dest = argv[argv.index("--dest") + 1]
            for requirement in argv[argv.index("--dest") + 2:]:
                with open(os.path.join(dest, _wheel_name(requirement)), "wb") as fh:
                    fh.truncate(self.sizes.get(requirement, 10))
            return envs.Completed(0, "Successfully downloaded")
        if kind == "install":
            if "--target" in argv:
                target = argv[argv.index("--target") + 1]
            else:
                target = envs._site_packages(os.path.dirname(os.path.dirname(argv[argv.index("--python") + 1])))
            os.makedirs(target, exist_ok=True)
            for wheel in (a for a in argv if a.endswith(".whl")):
                name, version = os.path.basename(wheel).split("-")[:2]
                os.makedirs(os.path.join(target, f"{name}-{version}.dist-info"))
            return envs.Completed(0, "Successfully installed")
        if kind == "import":
            package, version = argv[3], argv[4]
            return envs.Completed(0, "IMPORT-CHECK " + json.dumps({package: version, "msgspec": "0.23.0"}))
        if argv[1:4] == ["-m", "conformance.releases", "probe"]:
            return envs.Completed(0, "noise\n" + cli.PROBE_PREFIX + json.dumps(self.probe))
        return envs.Completed(0, "ran " + " ".join(argv[1:]))

    def of(self, kind: str) -> List[List[str]]:
        return [c for c in self.calls if self.kind(c) == kind]


@pytest.fixture
def pip(monkeypatch, tmp_path):
    fake = FakePip()
    monkeypatch.setattr(envs, "_run", fake)
    monkeypatch.setattr(envs, "SUITE_REQUIREMENTS", SUITE)
    monkeypatch.setenv("PIP_CONSTRAINT", "/nowhere/constraints.txt")
    monkeypatch.setenv(envs.CACHE_ENV, str(tmp_path / "cache"))
    return fake


# --- layout ---------------------------------------------------------------------------------------


def test_cache_root_is_argument_then_variable_then_home(monkeypatch, tmp_path):
    monkeypatch.delenv(envs.CACHE_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert envs.cache_root() == str(tmp_path / "home" / ".cache" / "ipc-conformance" / "releases")
    monkeypatch.setenv(envs.CACHE_ENV, str(tmp_path / "var"))
    assert envs.cache_root() == str(tmp_path / "var")
    assert envs.cache_root(str(tmp_path / "arg")) == str(tmp_path / "arg")


def test_environment_is_engine_dash_version_under_the_cache(pip, tmp_path):
    cache = tmp_path / "cache"
    python = envs.environment(DEMO_ENGINE, DEMO_RELEASES[0])
    assert python == envs.python_in(str(cache / "demo-1.0")) == str(cache / "demo-1.0" / "bin" / "python")
    assert envs.environment_path(DEMO_ENGINE, DEMO_RELEASES[0]) == str(cache / "demo-1.0")
    assert os.path.exists(python)
    # Wheels go to the one shared wheel cache; the suite's dependencies to one shared folder.
    assert sorted(os.listdir(cache / "wheels")) == [
        "demopkg-1.0-py3-none-any.whl", "helper-2.0-py3-none-any.whl", "msgspec-0.23.0-py3-none-any.whl", "shared_dep-1.5-py3-none-any.whl"]
    (suite,) = os.listdir(cache / "shared")
    assert suite.startswith("suite-")


def test_build_downloads_no_deps_installs_requirements_then_engine_wheel(pip, tmp_path):
    envs.environment(DEMO_ENGINE, DEMO_RELEASES[0])
    for call in pip.of("download"):
        assert "--no-deps" in call and "download" in call
    suite_download, release_download = pip.of("download")
    assert suite_download[-2:] == list(SUITE)
    # shared-dep==1.5 is in the wheel cache already (the suite's): not downloaded again.
    assert release_download[release_download.index("--dest") + 2:] == ["helper==2.0", "demopkg==1.0"]
    suite_install, requirements_install, engine_install = pip.of("install")
    assert "--target" in suite_install
    for call in (requirements_install, engine_install):
        assert "--no-deps" in call and call[call.index("--python") + 1] == str(tmp_path / "cache" / "demo-1.0" / "bin" / "python")
    # shared-dep==1.5 is in the suite's folder already: not installed again.
    assert [os.path.basename(a) for a in requirements_install if a.endswith(".whl")] == ["helper-2.0-py3-none-any.whl"]
    assert [os.path.basename(a) for a in engine_install if a.endswith(".whl")] == ["demopkg-1.0-py3-none-any.whl"]


def test_pth_puts_project_then_shared_folders_after_the_venv(pip, tmp_path):
    python = envs.environment(DEMO_ENGINE, DEMO_RELEASES[0])
    env_dir = os.path.dirname(os.path.dirname(python))
    with open(os.path.join(envs._site_packages(env_dir), envs.PTH_FILE)) as fh:
        lines = fh.read().split()
    links, suite = lines
    assert links == envs.project_links() and os.path.dirname(links) == str(tmp_path / "cache" / "projects")
    for package in envs.PROJECT_PACKAGES:
        assert os.path.realpath(os.path.join(links, package)) == os.path.join(ROOT, package)
    assert os.path.dirname(suite) == str(tmp_path / "cache" / "shared")


def test_each_checkout_runs_its_own_code(pip, monkeypatch, tmp_path):
    python = envs.environment(DEMO_ENGINE, DEMO_RELEASES[0])
    mine = envs.project_links()
    other = tmp_path / "other-checkout"
    for package in envs.PROJECT_PACKAGES:
        (other / package).mkdir(parents=True)
    monkeypatch.setattr(envs, "_project_package_dirs", lambda: {p: str(other / p) for p in envs.PROJECT_PACKAGES})
    # The other checkout reuses the environment without touching the links the .pth names...
    assert envs.environment(DEMO_ENGINE, DEMO_RELEASES[0]) == python
    assert os.path.realpath(os.path.join(mine, "conformance")) == os.path.join(ROOT, "conformance")
    # ...and runs in it with its own packages first.
    envs.run_in_environment(python, ["-m", "conformance.schema_diff"])
    theirs = pip.envs[-1]["PYTHONPATH"]
    assert theirs != mine and os.path.realpath(os.path.join(theirs, "conformance")) == str(other / "conformance")


def test_large_requirement_is_installed_once_into_a_shared_folder(pip, monkeypatch, tmp_path):
    monkeypatch.setattr(envs, "SHARED_WHEEL_BYTES", 1000)
    pip.sizes["helper==2.0"] = 5000
    python = envs.environment(DEMO_ENGINE, DEMO_RELEASES[0])
    shared = tmp_path / "cache" / "shared" / "helper-2.0-py3-none-any"
    assert (shared / "helper-2.0.dist-info").is_dir()
    with open(os.path.join(envs._site_packages(os.path.dirname(os.path.dirname(python))), envs.PTH_FILE)) as fh:
        lines = fh.read().split()
    assert lines[1] == str(shared) and lines[2].startswith(str(tmp_path / "cache" / "shared" / "suite-"))  # before the suite's
    # Not in the venv itself.
    assert not any(a.endswith("helper-2.0-py3-none-any.whl") for c in pip.of("install") if "--python" in c for a in c)


def test_second_call_reuses_the_environment_and_the_wheels(pip):
    first = envs.environment(DEMO_ENGINE, DEMO_RELEASES[0])
    before = len(pip.calls)
    assert envs.environment(DEMO_ENGINE, DEMO_RELEASES[0]) == first
    assert len(pip.calls) == before, "a complete environment was built again"
    # Another release downloads only what the cache lacks.
    envs.environment(DEMO_ENGINE, DEMO_RELEASES[1])
    assert pip.of("download")[-1][-2:] == ["helper==2.1", "demopkg==1.1"]
    assert sum("--target" in c for c in pip.of("install")) == 1, "the suite's folder was installed twice"


def test_marker_records_what_was_installed(pip):
    envs.environment(DEMO_ENGINE, DEMO_RELEASES[0])
    marker = envs.installed(DEMO_ENGINE, DEMO_RELEASES[0])
    assert marker is not None
    assert marker["plan"]["requirements"] == ["helper==2.0", "shared-dep==1.5"]
    assert marker["engine_wheel"] == "demopkg-1.0-py3-none-any.whl"
    assert marker["installed"] == ["helper-2.0-py3-none-any.whl"]
    assert marker["from_suite"] == ["shared-dep==1.5"]
    assert marker["versions"] == {"demopkg": "1.0", "msgspec": "0.23.0"}


# --- the marker: a half-built or outdated environment is rebuilt -----------------------------------


def test_half_built_environment_is_rebuilt(pip, tmp_path):
    pip.fail["import"] = "Traceback ...\nModuleNotFoundError: No module named 'helper2'"
    with pytest.raises(envs.ReleaseEnvironmentError):
        envs.environment(DEMO_ENGINE, DEMO_RELEASES[0])
    env_dir = tmp_path / "cache" / "demo-1.0"
    assert (env_dir / "bin" / "python").exists() and not (env_dir / envs.MARKER).exists()
    assert envs.installed(DEMO_ENGINE, DEMO_RELEASES[0]) is None
    (env_dir / "leftover").write_text("from the failed build")
    del pip.fail["import"]
    installs = len(pip.of("install"))
    envs.environment(DEMO_ENGINE, DEMO_RELEASES[0])
    assert len(pip.of("install")) == installs + 2, "the half-built environment was not installed again"
    assert not (env_dir / "leftover").exists(), "the half-built environment was reused, not rebuilt"
    assert (env_dir / envs.MARKER).exists()


def test_removed_marker_rebuilds(pip, tmp_path):
    envs.environment(DEMO_ENGINE, DEMO_RELEASES[0])
    os.unlink(tmp_path / "cache" / "demo-1.0" / envs.MARKER)
    installs = len(pip.of("install"))
    envs.environment(DEMO_ENGINE, DEMO_RELEASES[0])
    assert len(pip.of("install")) == installs + 2


def test_changed_pins_rebuild(pip):
    envs.environment(DEMO_ENGINE, DEMO_RELEASES[0])
    moved = Release("1.0", requirements=("helper==2.1", "shared-dep==1.5"))
    assert envs.installed(DEMO_ENGINE, moved) is None
    envs.environment(DEMO_ENGINE, moved)
    assert any(a.endswith("helper-2.1-py3-none-any.whl") for a in pip.of("install")[-2])


def test_half_built_shared_folder_is_rebuilt(pip, tmp_path):
    envs.environment(DEMO_ENGINE, DEMO_RELEASES[0])
    (suite,) = (tmp_path / "cache" / "shared").iterdir()
    os.unlink(suite / envs.LAYER_MARKER)
    os.unlink(tmp_path / "cache" / "demo-1.0" / envs.MARKER)
    envs.environment(DEMO_ENGINE, DEMO_RELEASES[0])
    assert sum("--target" in c for c in pip.of("install")) == 2


# --- errors name the release and the step ------------------------------------------------------------


@pytest.mark.parametrize("kind, step", [("download", "download"), ("install", "install"), ("import", "import check")])
def test_failure_names_release_step_and_pip_output(pip, kind, step):
    pip.fail[kind] = "lots of progress\n" * 500 + f"ERROR: the {kind} went wrong"
    with pytest.raises(envs.ReleaseEnvironmentError) as info:
        envs.environment(DEMO_ENGINE, DEMO_RELEASES[0])
    err = info.value
    assert (err.release, err.step) == ("demo 1.0", step)
    assert str(err).startswith(f"demo 1.0: {step} failed")
    assert err.output.endswith(f"ERROR: the {kind} went wrong") and len(err.output) <= envs.TAIL_CHARS + 3
    assert f"ERROR: the {kind} went wrong" in str(err)


def test_download_that_brings_no_wheel_is_a_download_error(pip, monkeypatch):
    original = pip.__call__

    def no_files(argv, **kw):
        if pip.kind(list(argv)) == "download":
            pip.calls.append(list(argv))
            return envs.Completed(0, "Successfully downloaded nothing")
        return original(argv, **kw)

    monkeypatch.setattr(envs, "_run", no_files)
    with pytest.raises(envs.ReleaseEnvironmentError, match="no wheel for 'shared-dep==1.5'") as info:
        envs.environment(DEMO_ENGINE, DEMO_RELEASES[0])
    assert info.value.step == "download"


def test_import_check_refuses_another_installed_version(pip):
    pip.fail["import"] = "demopkg 0.9 is installed, not 1.0"
    with pytest.raises(envs.ReleaseEnvironmentError, match="demopkg 0.9 is installed"):
        envs.environment(DEMO_ENGINE, DEMO_RELEASES[0])


def test_engine_without_package_is_refused(pip):
    with pytest.raises(envs.ReleaseEnvironmentError, match="names no package"):
        envs.environment(_engine(package=None), DEMO_RELEASES[0])


def test_run_in_environment_returns_output_and_names_failures(pip):
    python = envs.environment(DEMO_ENGINE, DEMO_RELEASES[0])
    assert envs.run_in_environment(python, ["-m", "conformance.schema_diff", "a", "b"]) == "ran -m conformance.schema_diff a b"
    assert "PYTHONPATH" not in pip.calls[-1]
    pip.fail["run"] = "Traceback\nSystemExit: 1"
    with pytest.raises(envs.ReleaseEnvironmentError, match="demo-1.0: run failed") as info:
        envs.run_in_environment(python, ["-m", "x"])
    assert info.value.step == "run" and "SystemExit: 1" in info.value.output
    assert envs.run_in_environment(python, ["-m", "x"], ok_codes=(0, 1)).endswith("SystemExit: 1")
    del pip.fail["run"]
    pip.timeout = True
    with pytest.raises(envs.ReleaseEnvironmentError, match="no result after 5 s"):
        envs.run_in_environment(python, ["-m", "x"], timeout=5)


def test_the_real_runner_times_out_and_merges_output():
    # Both streams land in one output; their order depends on the child's buffering, so it is not compared.
    done = envs._run([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr)"], timeout=60)
    assert (done.returncode, sorted(done.output.split()), done.timed_out) == (0, ["err", "out"], False)
    slow = envs._run([sys.executable, "-c", "import time; print('started', flush=True); time.sleep(30)"], timeout=1)
    assert slow.timed_out and "started" in slow.output


# --- the command and the probe --------------------------------------------------------------------


def test_probe_tells_absent_from_broken():
    def absent():
        raise ModuleNotFoundError("No module named 'demopkg.kv'", name="demopkg.kv")

    def broken():
        raise ModuleNotFoundError("No module named 'cbor2'", name="cbor2")

    def declared_elsewhere():
        raise FamilyNotInRelease("shapes declared for 2.0")

    engine = _engine(package="demopkg", families=(
        MessageFamily("core", "d", roots=lambda: {"A": int}, ext_types=lambda: {1: "tensor"}),
        MessageFamily("kv", "d", roots=absent),
        MessageFamily("bad", "d", roots=broken),
        MessageFamily("declared", "d", roots=declared_elsewhere),
    ))
    records = {(r["kind"], r["name"]): r for r in cli.probe(engine, ["json"])}
    assert records[("package", "demopkg")]["status"] == "absent"
    assert records[("family", "core")] == {"kind": "family", "name": "core", "status": "ok", "detail": "1 types"}
    assert records[("ext", "core")]["detail"] == "ext 1=tensor"
    assert records[("family", "kv")]["status"] == "absent"
    assert records[("family", "bad")]["status"] == "failed" and "cbor2" in records[("family", "bad")]["detail"]
    assert records[("family", "declared")] == {"kind": "family", "name": "declared", "status": "absent", "detail": "shapes declared for 2.0"}
    assert records[("module", "json")]["status"] == "ok"
    assert cli._summary(list(records.values())).startswith("FAILED import check: bad: ModuleNotFoundError")
    assert cli._summary([records[("family", "core")], records[("family", "kv")]]) == "ok: core ok (1 types), kv absent (no module demopkg.kv)"


def test_envs_command_builds_checks_and_says_one_line_per_release(pip, capsys):
    pip.probe = [{"kind": "module", "name": "demopkg.core", "status": "ok"}]
    spec = f"{__name__}:DEMO_ENGINE"
    assert cli.main(["envs", "--engine", spec, "--check", "--modules", "demopkg.core"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("demo 1.0: ok: demopkg.core ok") and out[1].startswith("demo 1.1: ok")
    assert out[-1].startswith("2/2 demo environments ok")
    probe = pip.of("run")[-1]
    assert probe[1:] == ["-m", "conformance.releases", "probe", "--engine", spec, "--modules", "demopkg.core"]
    pip.probe = [{"kind": "module", "name": "demopkg.core", "status": "failed", "detail": "ImportError: x"}]
    assert cli.main(["envs", "--engine", spec, "--versions", "1.1", "--check"]) == 1
    assert capsys.readouterr().out.splitlines()[0].startswith("demo 1.1: FAILED import check: demopkg.core: ImportError: x")


def test_envs_command_reports_a_failed_build_and_goes_on(pip, capsys):
    pip.fail["install"] = "ERROR: broken wheel"
    assert cli.main(["envs", "--engine", f"{__name__}:DEMO_ENGINE"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3, "not one line per release"
    assert out[0].startswith("demo 1.0: FAILED install: pip install --target ") and "ERROR: broken wheel" in out[0]
    assert out[1].startswith("demo 1.1: FAILED install: ")
    with pytest.raises(SystemExit, match="lists no release 9.9"):
        cli.main(["envs", "--engine", f"{__name__}:DEMO_ENGINE", "--versions", "9.9"])


# --- the release lists of the built-in engines ------------------------------------------------------

EXPECTED = {
    "sglang": [f"0.5.{n}" for n in range(15, 24)],
    "vllm": [f"0.{n}.0" for n in range(23, 35)],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_release_list_is_sorted_unique_and_covers_the_range(name):
    engine = cli.engine_without_setup(name)
    versions = [r.version for r in engine.releases]
    assert engine.package == name
    assert versions == sorted(versions, key=Version), "releases are not oldest first"
    assert len(set(versions)) == len(versions), "a release is listed twice"
    plain = [Version(v).base_version for v in versions]
    assert sorted(set(plain), key=Version) == EXPECTED[name], "the list does not cover the release range"
    assert len(plain) == len(set(plain)), "a .postN is listed beside its release"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_release_requirements_are_pinned_once_each(name):
    for release in cli.engine_without_setup(name).releases:
        names = []
        for requirement in release.requirements:
            req = Requirement(requirement)
            assert [s.operator for s in req.specifier] == ["=="], f"{name} {release.version}: {requirement!r} is not pinned"
            names.append(canonicalize_name(req.name))
        assert len(names) == len(set(names)), f"{name} {release.version}: a package is pinned twice"
        assert canonicalize_name(name) not in names, "the engine's own wheel is installed by the builder, not listed"
        assert "msgspec" in names, f"{name} {release.version}: msgspec is not pinned (the wire depends on its version)"


def _constraint_pins(*files: str) -> Dict[str, str]:
    pins = {}
    for file in files:
        with open(os.path.join(ROOT, "constraints", file)) as fh:
            for line in fh:
                line = line.split("#", 1)[0].strip()
                if line:
                    req = Requirement(line)
                    pins[canonicalize_name(req.name)] = str(req.specifier)
    return pins


def _release_pins(release: Release) -> Dict[str, str]:
    return {canonicalize_name(Requirement(r).name): str(Requirement(r).specifier) for r in release.requirements}


def test_newest_sglang_pins_are_the_constraints():
    newest = cli.engine_without_setup("sglang").releases[-1]
    assert newest.version == "0.5.23"
    assert _release_pins(newest) == _constraint_pins("sglang-requirements.txt", "sglang-nodeps.txt")


def test_newest_vllm_pins_include_the_constraints():
    newest = cli.engine_without_setup("vllm").releases[-1]
    assert newest.version == "0.34.0"
    ours = _release_pins(newest)
    suite_tooling = {"hypothesis", "pytest", "pytest-xdist"}  # the suite's, not vLLM's: in the shared suite folder
    theirs = {k: v for k, v in _constraint_pins("vllm-requirements.txt").items() if k not in suite_tooling}
    assert {k: ours.get(k) for k in theirs} == theirs


def test_suite_requirements_are_ci_pins():
    ours = {canonicalize_name(Requirement(r).name): str(Requirement(r).specifier) for r in envs.SUITE_REQUIREMENTS}
    ci = _constraint_pins("ci.txt")
    assert {k: ours.get(k) for k in ci} == ci



def test_with_pins_adds_and_replaces_by_package_name():
    base = ("b==1", "Typing_Extensions==4.0", "a==1")
    assert envs.with_pins(base, "typing-extensions==4.16.0", "c==2") == ("a==1", "b==1", "c==2", "typing-extensions==4.16.0")
    assert envs.with_pins(base) == ("a==1", "b==1", "Typing_Extensions==4.0")
