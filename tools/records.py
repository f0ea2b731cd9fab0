"""The records every stage exchanges: failures, proposals, patch outcomes, runs.

Dataclasses as far as `dataclasses` can tell, written out (tools/record_base.py says why),
JSON-serialisable through `to_dict`/`from_dict`, so graph state, the run directory and the sweep
database all store the same shapes. Each record's FIELDS are its `__init__` parameters, in order.
"""

from __future__ import annotations

from tools.record_base import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from typing import Any

# The taxonomy of FAILURE_CLASSES.md. Keep the names stable: sweeps cluster on them.
COMPILE_KINDS = (
    "cuda_header",
    "cub",
    "cuda_std",
    "warp_intrinsic",
    "warp_size",
    "inline_ptx",
    "bf16_type",
    "fp16_type",
    "fp8_type",
    "stream_api",
    "cublas",
    "launch_bounds_smem",
    "compiler_dialect",
    "toolchain",
    "cuda_api",
    "nccl_symbol",
    "build_config",
)
RUNTIME_KINDS = (
    "weight_name",
    "quant_exclusion",
    "fp8_layout",
    "cuda_only_dep",
    "hip_runtime",
    "unsupported_dtype",
    "python_version_parse",
    "triton_config",
    "resource",
    "serve_flag",
    "tokenizer",
    "arch_unsupported",
)
# Generic kinds for what the taxonomy does not name.
OTHER_KINDS = ("compile_error", "link_error", "python_error", "unknown")
KINDS = COMPILE_KINDS + RUNTIME_KINDS + OTHER_KINDS

# Failures that are the environment's fault: report them, never patch code for them.
ENVIRONMENT_KINDS = ("toolchain", "resource", "serve_flag", "tokenizer", "arch_unsupported", "hip_runtime")


class Failure(Record):
    """One diagnosed problem, from a log or from a static scan."""

    FIELDS = (
        "kind",
        "message",
        "file",
        "line",
        "column",
        "symbol",
        "excerpt",
        "signature",
        "source",
        "facts",
    )
    __slots__ = FIELDS

    kind: str
    """A name from KINDS."""
    message: str
    """The tool's own one-line message (compiler error text, exception line)."""
    file: str | None
    """Repo-relative path where the failure points, when known."""
    line: int | None
    column: int | None
    symbol: str | None
    """The identifier, header, weight name or module the failure is about."""
    excerpt: str
    """The few log lines that matter: the error plus its enclosing context."""
    signature: str
    """Stable across machines and runs: kind + repo-relative file + symbol/normalised message."""
    source: str
    """What produced it: hipcc, nvcc, clang, gcc, ninja, python, server, scan, ..."""
    facts: dict[str, Any]
    """Domain facts pulled out of the log: shapes, missing keys, dtype, module, translation unit."""

    def __init__(
        self,
        kind: str,
        message: str,
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
        symbol: str | None = None,
        excerpt: str = "",
        signature: str = "",
        source: str = "",
        facts: dict[str, Any] | None = None,
    ) -> None:
        self.kind = kind
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.symbol = symbol
        self.excerpt = excerpt
        self.signature = signature
        self.source = source
        self.facts = {} if facts is None else facts

    @property
    def key(self) -> str:
        """The failure's one identity: its signature, else the same formula diagnose signs with."""
        if self.signature:
            return self.signature
        from tools.diagnose.signature import make_signature  # diagnose imports this module

        return make_signature(self.kind, self.file, self.symbol, self.message)

    @property
    def target(self) -> tuple[str, str | None, str | None]:
        """What one patch addresses: kind, file, symbol (a log repeats one error once per build target)."""
        return (self.kind, self.file, self.symbol)

    def same_as(self, other: Failure) -> bool:
        """The same problem: one key, or one named target (a recompile or a reload may word the message
        differently, which a message-based signature would count as a new failure)."""
        return self.key == other.key or (self.symbol is not None and self.target == other.target)


class Proposal(Record):
    """A candidate patch as a unified diff against the repo's HEAD."""

    FIELDS = ("failure_signature", "proposer", "diff", "rationale", "files", "failure")
    __slots__ = FIELDS

    failure_signature: str
    proposer: str
    """`rule:<family>` or `llm:<model>`."""
    diff: str
    rationale: str
    files: list[str]
    """Repo-relative paths the diff touches (new files included)."""
    failure: Failure | None
    """The failure it addresses, when the caller keeps them together (the port loop's wave)."""

    def __init__(
        self,
        failure_signature: str,
        proposer: str,
        diff: str,
        rationale: str,
        files: list[str] | None = None,
        failure: Failure | None = None,
    ) -> None:
        self.failure_signature = failure_signature
        self.proposer = proposer
        self.diff = diff
        self.rationale = rationale
        self.files = [] if files is None else files
        self.failure = failure

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Proposal:
        failure = data.get("failure")
        kept = {k: v for k, v in data.items() if k in cls.FIELDS and k != "failure"}
        return cls(**kept, failure=Failure.coerce(failure) if failure is not None else None)


class CheckResult(Record):
    """One validation check on a proposal (a compile, a preprocessor diff, a name check)."""

    FIELDS = ("name", "ok", "detail", "cmd", "duration_s")
    __slots__ = FIELDS

    name: str
    ok: bool
    detail: str
    cmd: str
    duration_s: float

    def __init__(self, name: str, ok: bool, detail: str = "", cmd: str = "", duration_s: float = 0.0) -> None:
        self.name = name
        self.ok = ok
        self.detail = detail
        self.cmd = cmd
        self.duration_s = duration_s


class PatchOutcome(Record):
    """What validation did with a proposal."""

    FIELDS = ("proposal", "applied", "checks", "kept", "reason", "commit")
    __slots__ = FIELDS

    proposal: Proposal
    applied: bool
    checks: list[CheckResult]
    kept: bool
    reason: str
    commit: str | None

    def __init__(
        self,
        proposal: Proposal,
        applied: bool,
        checks: list[CheckResult] | None = None,
        kept: bool = False,
        reason: str = "",
        commit: str | None = None,
    ) -> None:
        self.proposal = proposal
        self.applied = applied
        self.checks = [] if checks is None else checks
        self.kept = kept
        self.reason = reason
        self.commit = commit

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PatchOutcome:
        data = dict(data)
        data["proposal"] = Proposal.coerce(data["proposal"])
        data["checks"] = [CheckResult.coerce(c) for c in data.get("checks", [])]
        return cls(**data)


def _failure(data: dict[str, Any]) -> Failure:
    return Failure.from_dict({"kind": "unknown", "message": "", **data})


def failure_key(failure: dict[str, Any]) -> str:
    """`Failure.key` of a failure stored as a dict (run state, journal, sweep results)."""
    return _failure(failure).key


def same_failure(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """`Failure.same_as` of two failures stored as dicts."""
    return _failure(a).same_as(_failure(b))
