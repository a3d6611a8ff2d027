"""One environment per published release of an engine: built once, cached, importable on a CPU machine.

A schema snapshot of an older release is taken in that release's own
environment, from its runtime classes. :func:`environment` builds it for an
:class:`~conformance.engines.profile.Engine` (its ``package``) and one of its
:class:`~conformance.engines.profile.Release` s, and returns the path of its
Python::

    python -m conformance.releases envs --engine NAME --check            # every release of the engine
    python -m conformance.releases envs --engine NAME --versions A,B      # some of them

and then, for example,
``run_in_environment(python, ["-m", "conformance.schema_diff", ...])``.

Layout
======

Under the cache directory (``~/.cache/ipc-conformance/releases``, or
``$IPC_CONFORMANCE_RELEASES_CACHE``)::

    wheels/                    every wheel, fetched once with ``pip download --no-deps``
    shared/suite-<hash>/       the suite's own dependencies (torch, numpy, msgspec, ...), installed once
    shared/<wheel name>/       a release requirement whose wheel is large, installed once
    <engine>-<version>/        a venv: the release's requirements, then its wheel, both ``--no-deps``
    projects/<hash>/           links to one checkout's packages (conformance, reference_codec, strategies)
    .locks/                    one lock file per environment and shared folder

How an environment is made
==========================

1. The suite's dependencies (:data:`SUITE_REQUIREMENTS`, the pins of
   ``constraints/ci.txt`` and what they need) are installed once with
   ``pip install --no-deps --target`` into ``shared/suite-<hash>``.
2. The release's requirements and the engine's wheel
   (``<package>==<version>``) are downloaded into ``wheels/`` (only those not
   there yet), wheels only.
3. A venv without pip is created (the suite's own pip installs into it,
   ``pip --python``). The release's requirements are installed into it
   ``--no-deps``, then the engine's wheel ``--no-deps``: the engine's declared
   dependencies (CUDA builds of torch, GPU kernels) are never installed. A
   requirement the suite folder already holds at a version the pin accepts is
   taken from there; one whose wheel is at least :data:`SHARED_WHEEL_BYTES`
   is installed once into its own ``shared/`` folder.
4. One ``.pth`` file in the venv's site-packages appends, in order: the
   folder of links to the building checkout's packages (so
   ``<env>/bin/python -m conformance.schema_diff`` runs), the large
   requirements' folders, the suite's folder. :func:`run_in_environment`
   puts the *calling* checkout's links first (``PYTHONPATH``), so a cache
   shared by two checkouts runs each one's own code. Entries of a ``.pth`` file come *after* the venv's own
   site-packages on ``sys.path``, so a release that pins another numpy or
   msgspec gets its own: the release's pins win over the suite's, and torch
   (the largest, about 800 MB) is on disk once for every environment.
5. The import check runs the venv's Python: it imports the engine's package
   and ``conformance``, checks the installed engine is the release, and
   records the versions of msgspec, numpy and torch the release sees (the
   marker keeps them).
6. The marker file ``ipc-conformance-release.json`` is written last, naming
   what was asked for and what was installed. An environment without it, or
   whose marker asks for other requirements (a pin changed), is removed and
   built again; so is a shared folder without its own marker.

Every pip and Python call goes through one function (``_run``), so the tests
replace pip with a fake one. A failing step raises
:class:`ReleaseEnvironmentError`, naming the release, the step
(:data:`STEPS`) and the end of the command's output. A ``PIP_CONSTRAINT``
in the caller's environment (tox sets one) is not passed on: the release's
pins are the ones that hold here.

Building everything
===================

Every release of every built-in engine, then the import check of each::

    python -m conformance.releases envs --engine sglang --check \
        --modules sglang.srt.managers.io_struct,sglang.srt.utils.msgpack_utils,sglang.srt.disaggregation.kv_events
    python -m conformance.releases envs --engine vllm --check \
        --modules vllm.v1.engine,vllm.v1.serial_utils,vllm.distributed.kv_events

From an empty cache (and ``PIP_NO_CACHE_DIR=1``) on a 2-core machine: 858 s
for the 9 SGLang and 12 vLLM environments (35 to 50 s each, 76 s for the
first, which installs the suite's folder), 23 GB on disk: 4.1 GB of wheels,
1.7 GB shared (the suite's folder 1.0 GB, triton 0.7 GB), 0.5 to 0.6 GB per
SGLang and 0.8 to 1.2 GB per vLLM environment (vLLM's own wheel unpacks to
about 560 MB). A built environment is reused in about 8 s (the check alone).

Torch comes from pip as configured (``pip.conf``, ``PIP_EXTRA_INDEX_URL``):
set ``PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu`` where
``torch==2.13.0`` would otherwise be the CUDA build.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import venv
from dataclasses import dataclass
from typing import Any, Callable, Collection, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from conformance.engines.profile import Engine, Release

__all__ = [
    "CACHE_ENV",
    "MARKER",
    "SHARED_WHEEL_BYTES",
    "STEPS",
    "SUITE_REQUIREMENTS",
    "ReleaseEnvironmentError",
    "cache_root",
    "environment",
    "environment_path",
    "installed",
    "project_links",
    "python_in",
    "run_in_environment",
    "select_releases",
    "with_pins",
]

#: Overrides the cache directory.
CACHE_ENV = "IPC_CONFORMANCE_RELEASES_CACHE"
#: Written last into a complete environment (and, as ``.ipc-conformance-layer.json``, into a shared folder).
MARKER = "ipc-conformance-release.json"
LAYER_MARKER = ".ipc-conformance-layer.json"
#: The ``.pth`` file that puts the project and the shared folders on the venv's path.
PTH_FILE = "ipc_conformance_release.pth"
#: Folder of the cache holding, per checkout, links to this project's packages.
PROJECT_LINKS = "projects"
#: Bump when the layout changes: every environment is rebuilt.
FORMAT = 1
#: A release requirement whose wheel is at least this large is installed once, shared by every environment that pins it.
SHARED_WHEEL_BYTES = 48 * 2**20
#: The project's top-level packages, linked into every environment.
PROJECT_PACKAGES = ("conformance", "reference_codec", "strategies")

STEP_DOWNLOAD = "download"
STEP_INSTALL = "install"
STEP_IMPORT = "import check"
STEP_RUN = "run"
#: The steps a :class:`ReleaseEnvironmentError` names.
STEPS = (STEP_DOWNLOAD, STEP_INSTALL, STEP_IMPORT, STEP_RUN)

#: The suite's own dependencies, as ``constraints/ci.txt`` pins them, with what they need
#: (installed ``--no-deps``, so the list is closed): torch, numpy, msgspec, pyzmq, hypothesis, pytest.
SUITE_REQUIREMENTS: Tuple[str, ...] = (
    # constraints/ci.txt
    "torch==2.13.0",
    "msgspec==0.23.0",
    "numpy==2.4.6",
    "pyzmq==27.3.0",
    "hypothesis==6.170.17",
    # what torch needs
    "filelock==4.3.2",
    "fsspec==2026.9.0",
    "Jinja2==3.1.6",
    "MarkupSafe==3.0.4",
    "mpmath==1.3.0",
    "networkx==3.6.1",
    "setuptools==84.2.1",
    "sympy==1.14.0",
    "typing_extensions==4.16.0",
    # what hypothesis needs
    "sortedcontainers==2.4.0",
    # pytest and its plug-ins (the project's dependencies)
    "pytest==9.2.0",
    "iniconfig==2.3.1",
    "packaging==26.4",
    "pluggy==1.7.0",
    "Pygments==2.21.0",
    "pytest-xdist==3.8.0",
    "execnet==2.1.2",
    "pytest-benchmark==5.3.1",
    "py-cpuinfo==9.0.0",
)

#: Default seconds for one pip command, and for the import check.
PIP_TIMEOUT = 3600.0
IMPORT_TIMEOUT = 900.0
TAIL_CHARS = 3000

Log = Callable[[str], None]


class ReleaseEnvironmentError(RuntimeError):
    """A release's environment could not be built or a command in it failed.

    ``release`` names it (``"NAME VERSION"``), ``step`` is one of :data:`STEPS`,
    ``output`` the end of the failing command's output.
    """

    def __init__(self, release: str, step: str, message: str, output: str = "") -> None:
        self.release = release
        self.step = step
        self.message = message
        self.output = _tail(output)
        text = f"{release}: {step} failed: {message}"
        if self.output:
            text += "\n--- end of output ---\n" + self.output
        super().__init__(text)


@dataclass(frozen=True)
class Completed:
    """What :func:`_run` returns: the exit status and stdout with stderr."""

    returncode: int
    output: str
    timed_out: bool = False


def _tail(text: str, limit: int = TAIL_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def _run(argv: Sequence[str], *, timeout: float, env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None) -> Completed:
    """Run ``argv``; the one place a subprocess starts (the tests replace it)."""
    try:
        proc = subprocess.run(
            list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            timeout=timeout, env=dict(env) if env is not None else None, cwd=cwd, text=True, errors="replace",
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return Completed(returncode=-9, output=out, timed_out=True)
    return Completed(returncode=proc.returncode, output=proc.stdout or "")


def _child_env(extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PIP_CONSTRAINT", "PIP_REQUIRE_VIRTUALENV")}
    env["PYTHONNOUSERSITE"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(extra or {})
    return env


def _call(release: str, step: str, argv: Sequence[str], *, timeout: float, what: str, cwd: Optional[str] = None) -> str:
    done = _run(argv, timeout=timeout, env=_child_env(), cwd=cwd)
    if done.timed_out:
        raise ReleaseEnvironmentError(release, step, f"{what}: no result after {timeout:.0f} s", done.output)
    if done.returncode != 0:
        raise ReleaseEnvironmentError(release, step, f"{what}: exit status {done.returncode}", done.output)
    return done.output


def _pip(*args: str) -> List[str]:
    return [sys.executable, "-m", "pip", *args]


def with_pins(base: Sequence[str], *pins: str) -> Tuple[str, ...]:
    """``base`` (``NAME==VERSION`` pins) with ``pins`` added or replacing the pin of the same package, sorted by name.

    For release lists: a range of releases that needs other versions of a few
    packages than its neighbour says only those.
    """
    merged: Dict[str, str] = {}
    for pin in (*base, *pins):
        name = pin.split(";")[0].split("==")[0].split("[")[0].strip()
        merged[re.sub(r"[-_.]+", "-", name).lower()] = pin
    return tuple(merged[name] for name in sorted(merged))


# --- where things are ---------------------------------------------------------------------------


def cache_root(cache: Optional[str] = None) -> str:
    """The cache directory: ``cache``, else ``$IPC_CONFORMANCE_RELEASES_CACHE``, else ``~/.cache/ipc-conformance/releases``."""
    root = cache or os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "ipc-conformance", "releases")
    return os.path.abspath(root)


def environment_path(engine: Engine, release: Release, cache: Optional[str] = None) -> str:
    """The environment's folder, ``<cache>/<engine>-<version>`` (built or not)."""
    return os.path.join(cache_root(cache), f"{engine.name}-{release.version}")


def python_in(env_dir: str) -> str:
    """The Python of the venv at ``env_dir``."""
    if os.name == "nt":
        return os.path.join(env_dir, "Scripts", "python.exe")
    return os.path.join(env_dir, "bin", "python")


def _site_packages(env_dir: str) -> str:
    return sysconfig.get_path("purelib", vars={"base": env_dir, "platbase": env_dir})


def _label(engine: Engine, release: Release) -> str:
    return f"{engine.name} {release.version}"


@contextlib.contextmanager
def _locked(root: str, name: str) -> Iterator[None]:
    """Hold ``<root>/.locks/<name>.lock``: two builds of one environment wait for each other."""
    folder = os.path.join(root, ".locks")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{name}.lock"), "a+") as fh:
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock
            yield
            return
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _read_json(path: str) -> Optional[Dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_json(path: str, data: Mapping[str, Any]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, path)


def _remove(path: str) -> None:
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


# --- wheels ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Wheel:
    path: str
    name: str  # canonical
    version: str

    @property
    def filename(self) -> str:
        return os.path.basename(self.path)


def _cached_wheels(folder: str) -> List[_Wheel]:
    from packaging.tags import sys_tags
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    rank = {tag: i for i, tag in enumerate(sys_tags())}
    found = []
    for filename in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
        if not filename.endswith(".whl"):
            continue
        try:
            name, version, build, tags = parse_wheel_filename(filename)
        except InvalidWheelFilename:
            continue
        best = min((rank[t] for t in tags if t in rank), default=None)
        if best is None:
            continue  # not for this interpreter
        found.append((best, _Wheel(os.path.join(folder, filename), str(name), str(version)), version, build))
    # Highest version first, then the build tag, then the most specific tag.
    found.sort(key=lambda item: (item[2], item[3], -item[0]), reverse=True)
    return [wheel for _, wheel, _, _ in found]


def _applies(requirement: str) -> bool:
    from packaging.requirements import Requirement

    marker = Requirement(requirement).marker
    return marker is None or marker.evaluate()


def _matching(requirement: str, wheels: Sequence[_Wheel]) -> Optional[_Wheel]:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    req = Requirement(requirement)
    name = canonicalize_name(req.name)
    for wheel in wheels:
        if wheel.name == name and req.specifier.contains(wheel.version, prereleases=True):
            return wheel
    return None


def _wheels_for(release: str, requirements: Sequence[str], folder: str, log: Optional[Log]) -> Dict[str, _Wheel]:
    """requirement -> its wheel in ``folder``, downloading (``pip download --no-deps``) the ones not there."""
    wanted = [r for r in requirements if _applies(r)]
    cached = _cached_wheels(folder)
    missing = [r for r in wanted if _matching(r, cached) is None]
    if missing:
        os.makedirs(folder, exist_ok=True)
        if log:
            log(f"{release}: downloading {len(missing)} wheel(s): {' '.join(missing[:6])}{' ...' if len(missing) > 6 else ''}")
        _call(release, STEP_DOWNLOAD, _pip("download", "--no-deps", "--only-binary=:all:", "--dest", folder, *missing),
              timeout=PIP_TIMEOUT, what="pip download " + " ".join(missing))
        cached = _cached_wheels(folder)
    found: Dict[str, _Wheel] = {}
    for requirement in wanted:
        wheel = _matching(requirement, cached)
        if wheel is None:
            raise ReleaseEnvironmentError(release, STEP_DOWNLOAD, f"no wheel for {requirement!r} for this Python in {folder} after pip download")
        found[requirement] = wheel
    return found


# --- shared folders -------------------------------------------------------------------------------


def _shared_folder(root: str, release: str, name: str, wheels: Sequence[_Wheel]) -> str:
    """``<root>/shared/<name>``: ``wheels`` installed there once (``--target``), with a marker written last."""
    folder = os.path.join(root, "shared", name)
    want = sorted(w.filename for w in wheels)
    with _locked(root, f"shared-{name}"):
        marker = _read_json(os.path.join(folder, LAYER_MARKER))
        if marker is not None and marker.get("wheels") == want:
            return folder
        _remove(folder)
        os.makedirs(os.path.dirname(folder), exist_ok=True)
        _call(release, STEP_INSTALL,
              _pip("install", "--no-deps", "--no-index", "--no-warn-script-location", "--target", folder, *[w.path for w in wheels]),
              timeout=PIP_TIMEOUT, what=f"pip install --target {folder}")
        _write_json(os.path.join(folder, LAYER_MARKER), {"format": FORMAT, "wheels": want})
    return folder


def _suite_folder_name(requirements: Sequence[str]) -> str:
    digest = hashlib.sha256("\n".join(requirements).encode()).hexdigest()[:12]
    return f"suite-{digest}"


# --- the project on the environment's path -------------------------------------------------------


def _project_package_dirs() -> Dict[str, str]:
    found = {}
    for name in PROJECT_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        found[name] = os.path.abspath(list(spec.submodule_search_locations)[0])
    return found


def project_links(cache: Optional[str] = None) -> str:
    """``<cache>/projects/<hash>``: a link to each of the calling checkout's packages (or the installed copy's).

    One folder per checkout, named by where its packages are, so two
    checkouts sharing one cache never see each other's code. An
    environment's ``.pth`` file names the folder of the checkout that built
    it (plain ``<env>/bin/python -m conformance...`` runs that code);
    :func:`run_in_environment` puts the caller's own folder first through
    ``PYTHONPATH``.
    """
    packages = _project_package_dirs()
    digest = hashlib.sha256("\n".join(f"{k}={v}" for k, v in sorted(packages.items())).encode()).hexdigest()[:12]
    links = os.path.join(cache_root(cache), PROJECT_LINKS, digest)
    os.makedirs(links, exist_ok=True)
    for name, target in packages.items():
        link = os.path.join(links, name)
        if os.path.islink(link) and os.readlink(link) == target:
            continue
        tmp = f"{link}.{os.getpid()}.tmp"
        _remove(tmp)
        os.symlink(target, tmp, target_is_directory=True)
        os.replace(tmp, link)  # atomic: a concurrent reader sees the old link or the new one
    return links


def _write_pth(env_dir: str, folders: Sequence[str]) -> None:
    site = _site_packages(env_dir)
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(site, PTH_FILE), "w", encoding="utf-8") as fh:
        fh.write("".join(f"{folder}\n" for folder in folders))


# --- the environment ------------------------------------------------------------------------------

_IMPORT_CHECK = """
import importlib, importlib.metadata as md, json, sys
package, version = sys.argv[1], sys.argv[2]
importlib.import_module(package)
import conformance, msgspec
found = md.version(package)
if found != version:
    raise SystemExit(f"{package} {found} is installed, not {version}")
out = {"python": sys.version.split()[0], package: found}
for dist in ("msgspec", "numpy", "torch"):
    try:
        out[dist] = md.version(dist)
    except md.PackageNotFoundError:
        out[dist] = None
out["msgspec_from"] = msgspec.__file__
print("IMPORT-CHECK " + json.dumps(out, sort_keys=True))
"""


def _plan(engine: Engine, release: Release) -> Dict[str, Any]:
    """What the marker must say for the environment to be reused: a change here rebuilds it."""
    return {
        "format": FORMAT,
        "engine": engine.name,
        "package": engine.package,
        "version": release.version,
        "requirements": list(release.requirements),
        "suite": list(SUITE_REQUIREMENTS),
        "python": "%d.%d" % sys.version_info[:2],
    }


def installed(engine: Engine, release: Release, cache: Optional[str] = None) -> Optional[Dict[str, Any]]:
    """The marker of the release's environment when it is complete and current, else ``None``."""
    env_dir = environment_path(engine, release, cache)
    marker = _read_json(os.path.join(env_dir, MARKER))
    if marker is None or marker.get("plan") != _plan(engine, release) or not os.path.exists(python_in(env_dir)):
        return None
    for folder in marker.get("path", ()):
        if not os.path.isdir(folder):
            return None
    return marker


def environment(engine: Engine, release: Release, *, cache: Optional[str] = None, log: Optional[Log] = None) -> str:
    """Build the release's environment once (or reuse it) and return the path of its Python.

    Raises :class:`ReleaseEnvironmentError` naming the release and the step
    that failed; a half-built environment is left without its marker and
    built anew by the next call.
    """
    label = _label(engine, release)
    if not engine.package:
        raise ReleaseEnvironmentError(label, STEP_DOWNLOAD, f"engine {engine.name!r} names no package (Engine.package)")
    root = cache_root(cache)
    env_dir = environment_path(engine, release, root)
    python = python_in(env_dir)
    os.makedirs(root, exist_ok=True)
    with _locked(root, os.path.basename(env_dir)):
        if installed(engine, release, root) is not None:
            return python
        started = time.monotonic()
        if log:
            log(f"{label}: building {env_dir}")
        _remove(env_dir)
        wheels_dir = os.path.join(root, "wheels")

        # The suite's dependencies: one shared folder.
        suite_wheels = _wheels_for(label, SUITE_REQUIREMENTS, wheels_dir, log)
        suite = _shared_folder(root, label, _suite_folder_name(SUITE_REQUIREMENTS), list(suite_wheels.values()))

        # The release's requirements and its wheel.
        engine_requirement = f"{engine.package}=={release.version}"
        wheels = _wheels_for(label, [*release.requirements, engine_requirement], wheels_dir, log)
        engine_wheel = wheels.pop(engine_requirement)
        from_suite, shared, own = [], [], []
        suite_list = list(suite_wheels.values())
        for requirement, wheel in wheels.items():
            if _matching(requirement, suite_list) is not None:
                from_suite.append(requirement)
            elif os.path.getsize(wheel.path) >= SHARED_WHEEL_BYTES:
                shared.append(_shared_folder(root, label, wheel.filename[: -len(".whl")], [wheel]))
            else:
                own.append(wheel)

        venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt", clear=True).create(env_dir)
        install = _pip("--python", python, "install", "--no-deps", "--no-index", "--no-warn-script-location")
        if own:
            _call(label, STEP_INSTALL, [*install, *[w.path for w in own]], timeout=PIP_TIMEOUT, what="pip install of the release's requirements")
        _call(label, STEP_INSTALL, [*install, engine_wheel.path], timeout=PIP_TIMEOUT, what=f"pip install {engine_wheel.filename}")
        path = [project_links(root), *shared, suite]
        _write_pth(env_dir, path)

        out = _call(label, STEP_IMPORT, [python, "-c", _IMPORT_CHECK, engine.package, release.version],
                    timeout=IMPORT_TIMEOUT, what=f"import {engine.package}")
        seen = [line for line in out.splitlines() if line.startswith("IMPORT-CHECK ")]
        if not seen:
            raise ReleaseEnvironmentError(label, STEP_IMPORT, "the import check printed no result", out)
        versions = json.loads(seen[-1].split(" ", 1)[1])
        _write_json(os.path.join(env_dir, MARKER), {
            "plan": _plan(engine, release),
            "engine_wheel": engine_wheel.filename,
            "installed": sorted(w.filename for w in own),
            "from_suite": sorted(from_suite),
            "path": path[1:],
            "versions": versions,
            "seconds": round(time.monotonic() - started, 1),
        })
        if log:
            log(f"{label}: built in {time.monotonic() - started:.0f} s (msgspec {versions.get('msgspec')})")
    return python


def run_in_environment(python: str, argv: Sequence[str], *, timeout: float = 600.0, cwd: Optional[str] = None,
                       env: Optional[Mapping[str, str]] = None, ok_codes: Collection[int] = (0,)) -> str:
    """Run ``python *argv`` (an environment's Python, from :func:`environment`) and return its output (stdout and stderr).

    ``PYTHONPATH`` is the calling checkout's :func:`project_links` (the
    caller's ``PYTHONPATH`` is not passed on); ``env`` adds variables. An exit status outside
    ``ok_codes`` (``(0, 1)`` for ``conformance.schema_diff``, whose 1 means
    "breaking change found") or a run longer than ``timeout`` seconds raises
    :class:`ReleaseEnvironmentError` (step ``run``) naming the environment.
    """
    env_dir = os.path.dirname(os.path.dirname(os.path.abspath(python)))
    name = os.path.basename(env_dir)
    variables = _child_env(env)
    variables["PYTHONPATH"] = project_links(os.path.dirname(env_dir))
    done = _run([python, *argv], timeout=timeout, env=variables, cwd=cwd)
    what = " ".join(argv[:3]) + (" ..." if len(argv) > 3 else "")
    if done.timed_out:
        raise ReleaseEnvironmentError(name, STEP_RUN, f"{what}: no result after {timeout:.0f} s", done.output)
    if done.returncode not in ok_codes:
        raise ReleaseEnvironmentError(name, STEP_RUN, f"{what}: exit status {done.returncode}", done.output)
    return done.output


def select_releases(engine: Engine, versions: Optional[str]) -> List[Release]:
    """The engine's releases named in ``versions`` (comma-separated), all of them when ``None``."""
    if not versions:
        return list(engine.releases)
    by_version = {r.version: r for r in engine.releases}
    wanted = [v.strip() for v in versions.split(",") if v.strip()]
    unknown = [v for v in wanted if v not in by_version]
    if unknown:
        raise SystemExit(f"{engine.name} lists no release {', '.join(unknown)} (it lists {', '.join(by_version) or 'none'})")
    return [by_version[v] for v in wanted]
