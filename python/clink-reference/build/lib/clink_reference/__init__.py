"""clink-reference: the parts every independent reference for a clink audit shares.

DESIGN
  An audit judges a destination against an expectation computed outside the job, so that a
  job computing wrong rows cannot also supply the rows it is judged by. This package is what
  every such reference has in common, and nothing more:
    scope.py       read a scope document (`clink incident scope --json`) and its fingerprint
    kafka_range.py read the exact Kafka range [from, to) of every partition under
                   read_committed completely, and confirm the log is the one the scope names
    canonical.py   canonical cells: the comparison's own rules for each destination type
    artifact.py    write and read the artifact bound to one scope (header, rows, end line)
    windows.py     the one windowed shape's rules (a keyed TUMBLE of COUNT and SUM with
                   lateness), each record's fate decided by bounds on the watermark it met
  The transformation (what the job's SQL is meant to compute) stays the operator's own code.
  The package never imports, runs or loads clink, its SQL evaluator or its sink's conversions:
  tests/test_independence.py holds it to that.
"""

from .artifact import ArtifactError, read_artifact, write_artifact
from .canonical import CellError, canonical_cell, canonical_row
from .kafka_range import RangeResult, read_range
from .scope import Scope, ScopeError
from .windows import Checkpoint, Event, TumbleRules, WindowResult, evaluate, source_bounds

__all__ = [
    "ArtifactError", "CellError", "Checkpoint", "Event", "RangeResult", "Scope", "ScopeError",
    "TumbleRules", "WindowResult", "canonical_cell", "canonical_row", "evaluate",
    "read_artifact", "read_range", "source_bounds", "write_artifact",
]
__version__ = "0.1.0"
