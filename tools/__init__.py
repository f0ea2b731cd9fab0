"""What the port loop uses; each module usable on its own."""

from tools.records import KINDS, CheckResult, Failure, PatchOutcome, Proposal

__all__ = ["KINDS", "CheckResult", "Failure", "PatchOutcome", "Proposal"]
