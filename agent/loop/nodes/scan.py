"""scan: the static, preprocessor-aware scan of the clone (engineer S's tools.scan), before any build.

Findings are recorded and reported (state.scan, the scanned event); patches come only from failures
the build, a unit compile, the load check or the launch actually showed.
"""

from __future__ import annotations

from pathlib import Path

from agent.loop.nodes.env import RunEnv
from agent.loop.state import PortState


def scan(state: PortState, env: RunEnv) -> dict:
    """Scan the checkout for CUDA-only constructs outside ROCm branches (reported, never fatal)."""
    try:
        from tools.scan import scan_repo
    except ImportError as exc:  # the scanner is optional to the loop: say so and go on
        env.observer.emit("note", message=f"static scan not run: {exc}")
        return {"scan": []}
    # The profile gives the hipify setting and, where it names one, the ROCm build's source list.
    result = scan_repo(Path(state.repo_dir), profile=env.profile)
    findings = getattr(result, "findings", result)
    env.observer.emit("scanned", count=len(findings), kinds=sorted({f.kind for f in findings}))
    return {"scan": list(findings)}
