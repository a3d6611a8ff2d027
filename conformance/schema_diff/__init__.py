"""The wire between releases: schema snapshots of an engine, and a diff that says which way each change breaks.

* :mod:`.snapshot`: an engine's wire schema recorded as JSON from its runtime
  classes, in any release's own environment.
* :mod:`.compare`: two snapshots compared, each change with its direction
  (old sender to new receiver, new sender to old receiver) and what the
  receiver does (refuses, misreads).
* :mod:`.cli`: ``python -m conformance.schema_diff`` (see its docstring).
"""

from .cli import load_schema, main
from .compare import EFFECTS, MISREADS, MODES, OK, REFUSES, REFUSES_OR_MISREADS, Change, Comparison, compare, diff_schemas, diff_struct, summary_line, type_text
from .snapshot import SNAPSHOT_FORMAT, Snapshot, SnapshotError, discover_messages, dumps, engine_snapshot, load, module_snapshot, write

__all__ = [
    "Change",
    "Comparison",
    "EFFECTS",
    "MISREADS",
    "MODES",
    "OK",
    "REFUSES",
    "REFUSES_OR_MISREADS",
    "SNAPSHOT_FORMAT",
    "Snapshot",
    "SnapshotError",
    "compare",
    "diff_schemas",
    "diff_struct",
    "discover_messages",
    "dumps",
    "engine_snapshot",
    "load",
    "load_schema",
    "main",
    "module_snapshot",
    "summary_line",
    "type_text",
    "write",
]
