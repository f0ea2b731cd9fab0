"""The records every stage exchanges: failures, proposals, patch outcomes, runs.

Plain dataclasses, JSON-serialisable through `to_dict`/`from_dict`, so graph state,
the run directory and the sweep database all store the same shapes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from typing import Any, Self

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


class _Record:
    """JSON round-trip for the dataclasses below."""

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON types (nested records become dicts)."""
        data: dict[str, Any] = asdict(self)  # type: ignore[call-overload]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """The record from its dict; keys it does not know are ignored."""
        names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in data.items() if k in names})

    @classmethod
    def coerce(cls, value: Self | dict[str, Any]) -> Self:
        """The record itself, or one read from its dict (run state saved before the state was typed)."""
        return cls.from_dict(value) if isinstance(value, dict) else value


@dataclass
class Failure(_Record):
    """One diagnosed problem, from a log or from a static scan."""

    kind: str
    """A name from KINDS."""
    message: str
    """The tool's own one-line message (compiler error text, exception line)."""
    file: str | None = None
    """Repo-relative path where the failure points, when known."""
    line: int | None = None
    column: int | None = None
    symbol: str | None = None
    """The identifier, header, weight name or module the failure is about."""
    excerpt: str = ""
    """The few log lines that matter: the error plus its enclosing context."""
    signature: str = ""
    """Stable across machines and runs: kind + repo-relative file + symbol/normalised message."""
    source: str = ""
    """What produced it: hipcc, nvcc, clang, gcc, ninja, python, server, scan, ..."""
    facts: dict[str, Any] = field(default_factory=dict)
    """Domain facts pulled out of the log: shapes, missing keys, dtype, module, translation unit."""

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


@dataclass
class Proposal(_Record):
    """A candidate patch as a unified diff against the repo's HEAD."""

    failure_signature: str
    proposer: str
    """`rule:<family>` or `llm:<model>`."""
    diff: str
    rationale: str
    files: list[str] = field(default_factory=list)
    """Repo-relative paths the diff touches (new files included)."""
    failure: Failure | None = None
    """The failure it addresses, when the caller keeps them together (the port loop's wave)."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Proposal:
        failure = data.get("failure")
        names = {f.name for f in fields(cls)}
        kept = {k: v for k, v in data.items() if k in names and k != "failure"}
        return cls(**kept, failure=Failure.coerce(failure) if failure is not None else None)


@dataclass
class CheckResult(_Record):
    """One validation check on a proposal (a compile, a preprocessor diff, a name check)."""

    name: str
    ok: bool
    detail: str = ""
    cmd: str = ""
    duration_s: float = 0.0


@dataclass
class PatchOutcome(_Record):
    """What validation did with a proposal."""

    proposal: Proposal
    applied: bool
    checks: list[CheckResult] = field(default_factory=list)
    kept: bool = False
    reason: str = ""
    commit: str | None = None

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
