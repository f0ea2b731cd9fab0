"""The rule playbook: deterministic fixers, one module per failure family (see base.py)."""
# isort: skip_file
from agent.rules.base import (Decline, Fixer, RuleResult, Workspace, all_fixers, file_diff, fixers_for,
                              make_proposal, propose_for, register)

# Fixer modules, one line each; importing one registers its fixer (order = proposal order).
from agent.rules import headers  # noqa: F401
from agent.rules import cub  # noqa: F401
from agent.rules import types  # noqa: F401
from agent.rules import warp  # noqa: F401
from agent.rules import warp_size  # noqa: F401
from agent.rules import python_imports  # noqa: F401
from agent.rules import ptx  # noqa: F401
from agent.rules import runtime_api  # noqa: F401
from agent.rules import coop_groups  # noqa: F401
from agent.rules import weight_names  # noqa: F401
from agent.rules import quant_exclusion  # noqa: F401

__all__ = ["Decline", "Fixer", "RuleResult", "Workspace", "all_fixers", "file_diff", "fixers_for",
           "make_proposal", "propose_for", "register"]
