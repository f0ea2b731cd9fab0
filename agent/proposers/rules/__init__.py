"""The rule playbook: deterministic fixers, one module per failure family (see base.py)."""

# isort: skip_file
from agent.proposers.rules.base import (
    Decline,
    Rule,
    RuleResult,
    Workspace,
    all_fixers,
    file_diff,
    fixers_for,
    make_proposal,
    propose_for,
    register,
)

# Rule modules, one line each; importing one registers its rule (order = proposal order).
from agent.proposers.rules import headers  # noqa: F401
from agent.proposers.rules import cub  # noqa: F401
from agent.proposers.rules import types  # noqa: F401
from agent.proposers.rules import warp  # noqa: F401
from agent.proposers.rules import warp_size  # noqa: F401
from agent.proposers.rules import python_imports  # noqa: F401
from agent.proposers.rules import ptx  # noqa: F401
from agent.proposers.rules import runtime_api  # noqa: F401
from agent.proposers.rules import coop_groups  # noqa: F401
from agent.proposers.rules import rounding  # noqa: F401
from agent.proposers.rules import cudacc  # noqa: F401
from agent.proposers.rules import vector_ops  # noqa: F401
from agent.proposers.rules import hip_clash  # noqa: F401
from agent.proposers.rules import clang_dialect  # noqa: F401
from agent.proposers.rules import device_builtins  # noqa: F401
from agent.proposers.rules import warp_reduce  # noqa: F401
from agent.proposers.rules import half_intrinsics  # noqa: F401
from agent.proposers.rules import atomics16  # noqa: F401
from agent.proposers.rules import thrust_backend  # noqa: F401
from agent.proposers.rules import launch_bounds  # noqa: F401
from agent.proposers.rules import launch_syntax  # noqa: F401
from agent.proposers.rules import exec_space  # noqa: F401
from agent.proposers.rules import weight_names  # noqa: F401
from agent.proposers.rules import quant_exclusion  # noqa: F401

__all__ = [
    "Decline",
    "Rule",
    "RuleResult",
    "Workspace",
    "all_fixers",
    "file_diff",
    "fixers_for",
    "make_proposal",
    "propose_for",
    "register",
]
