"""What the port loop uses; each module usable on its own.

`rocport scan` starts in ~0.1 s, and importing `typing` would add ~4 ms to each start (issue 15 holds
the whole process to 3x grep). So the modules a scan imports write `TYPE_CHECKING = False` and import
from `typing` under `if TYPE_CHECKING:` (mypy reads that name as true, as it does typing's own); a
named tuple is `collections.namedtuple` at run time, with its typed `NamedTuple` twin for mypy.
tests/agent/test_cli_scan_start.py checks the first (no `typing` at exit), tests/tools/test_typed_twins.py
the second.
"""

from tools.records import KINDS, CheckResult, Failure, PatchOutcome, Proposal

__all__ = ["KINDS", "CheckResult", "Failure", "PatchOutcome", "Proposal"]
