"""The message of a patch commit: what it fixes, the failure it removes, and the checks that prove it.

Text only; tools/git.py makes the commit. Kept apart so the wording reviewers read can change without
touching the code that runs git on an untrusted clone."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def evidence_lines(checks: Iterable[Any]) -> str:
    """The checks (CheckResult records or dicts) as commit-message lines: verdict, name, detail, command."""
    lines = []
    for c in checks:
        get = c.get if isinstance(c, dict) else lambda k, c=c: getattr(c, k, "")
        # a unit whose targeted error is gone but which still fails, or a module that cannot be imported
        # with or without the patch, is not proven: its verdict says so instead of [ok]
        detail = str(get("detail"))
        verdict = "FAIL" if not get("ok") else "still fails" if "unit still fails" in detail else "ok"
        verdict = "not proven" if get("ok") and detail.startswith("not proven") else verdict
        lines.append(f"- [{verdict}] {get('name')}: {get('detail')}")
        if get("cmd"):
            lines.append(f"    $ {get('cmd')}")
    return "\n".join(lines)


def patch_commit_message(subject: str, failure: dict[str, Any], rationale: str, checks: Iterable[Any]) -> str:
    """The commit of one kept patch: what it fixes, the failure it removes, and the checks that prove it."""
    body = [
        f"Fixes {failure.get('kind', 'a failure')}: {str(failure.get('message', ''))[:300]}",
        f"Signature: {failure.get('signature', '')}",
        "",
        rationale.strip(),
        "",
        "Evidence (rocport validation):",
        evidence_lines(checks) or "- no C/C++ unit touched; nothing compiled",
    ]
    return subject.strip() + "\n\n" + "\n".join(body) + "\n"
