"""``--variant-coverage``: which variants of the schema the messages of *this run* reached.

``python -m strategies.coverage`` measures what the strategies can generate at
a chosen example count; this measures what the suite actually drew at its own
budget (the profile's examples per test, every property, every message type),
which is the coverage a verdict rests on. Every message a property draws
(:func:`conformance.properties.draw_message`) reaches this plugin through
:mod:`conformance.draws` and is observed with :func:`strategies.coverage.observe`; xdist workers write their observations to
a directory the controller reads at the end. The summary says how many of the
schema's variants were reached and names the first ones that were not; the
JSON report carries the counts and every gap.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from typing import Any, Dict, Optional, Set, Tuple

import pytest

from .. import draws

__all__ = ["result_of", "VariantCoverage"]

_DIR_KEY = "conformance_variant_coverage"
Observation = Tuple[str, str, str]

class VariantCoverage:
    def __init__(self, config: pytest.Config):
        self.observed: Set[Observation] = set()
        self.stop_observing = draws.observe(self.record)
        workerinput = getattr(config, "workerinput", None)
        self.worker = workerinput is not None
        if workerinput is not None:
            self.directory, self.owns = workerinput[_DIR_KEY], False
        else:
            self.directory, self.owns = tempfile.mkdtemp(prefix="conformance-coverage-"), True
        self.result: Optional[Dict[str, Any]] = None

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        node.workerinput[_DIR_KEY] = self.directory

    def pytest_sessionfinish(self, session):
        path = os.path.join(self.directory, f"{os.getpid()}.json")
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(sorted(self.observed), fh)

    def gather(self) -> Dict[str, Any]:
        """Every process's observations against the schema's expected variants."""
        from conformance.engines import engine_from_environment
        from strategies.coverage import CoverageReport, expected_sites

        message_types = engine_from_environment().types

        observed: Set[Observation] = set(self.observed)
        for name in os.listdir(self.directory):
            with open(os.path.join(self.directory, name), encoding="utf-8") as fh:
                observed |= {tuple(o) for o in json.load(fh)}
        names = tuple(sorted(message_types))
        report = CoverageReport(expected_sites([message_types[n] for n in names]), observed, {}, names)
        gaps = [f"{site.owner}.{site.position} {sorted(missing)}" for site, missing in report.gaps]
        expected = report.expected_count
        missing = sum(len(m) for _, m in report.gaps)
        return {"variants": expected, "reached": expected - missing, "sites": len(report.sites), "gaps": gaps}

    @pytest.hookimpl(tryfirst=True)  # before the report writes its JSON
    def pytest_terminal_summary(self, terminalreporter):
        if self.worker:
            return
        from hypothesis import settings

        self.result = result = self.gather()
        line = (
            f"variant coverage: the messages this run drew reached {result['reached']}/{result['variants']} variants "
            f"at {result['sites']} sites ({settings.default.max_examples} examples per property and message type)"
        )
        terminalreporter.write_line(line)
        for gap in result["gaps"][:10]:
            terminalreporter.write_line(f"  never drawn: {gap}")
        if len(result["gaps"]) > 10:
            terminalreporter.write_line(f"  ... and {len(result['gaps']) - 10} more sites with gaps (see the JSON report)")

    def record(self, msg: Any) -> None:
        """Observe one drawn message."""
        from strategies.coverage import observe

        observe(msg, self.observed)

    def pytest_unconfigure(self, config):
        self.stop_observing()
        if self.owns:
            shutil.rmtree(self.directory, ignore_errors=True)


COVERAGE_RESULT = pytest.StashKey[VariantCoverage]()


def pytest_addoption(parser):
    parser.getgroup("conformance").addoption(
        "--variant-coverage",
        action="store_true",
        help="report which schema variants (None/value, empty/full, union arms) the messages of this run reached",
    )


def pytest_configure(config):
    if config.getoption("variant_coverage"):
        plugin = VariantCoverage(config)
        config.stash[COVERAGE_RESULT] = plugin
        config.pluginmanager.register(plugin, "conformance-variant-coverage")


def result_of(config: pytest.Config) -> Optional[Dict[str, Any]]:
    """The gathered coverage, once the summary has run (for the JSON report)."""
    plugin = config.stash.get(COVERAGE_RESULT, None)
    return plugin.result if plugin is not None else None
