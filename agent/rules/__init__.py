"""The rule playbook: deterministic fixers, one module per failure family (see base.py)."""
# Fixer modules, one line each; importing one registers its fixer.
from agent.rules import (
                              cub,  # noqa: F401
                              headers,  # noqa: F401
)
from agent.rules.base import (
                              Decline,
                              Fixer,
                              RuleResult,
                              Workspace,
                              all_fixers,
                              file_diff,
                              fixers_for,
                              make_proposal,
                              propose_for,
                              register,
)

__all__ = ["Decline", "Fixer", "RuleResult", "Workspace", "all_fixers", "file_diff", "fixers_for",
           "make_proposal", "propose_for", "register"]
