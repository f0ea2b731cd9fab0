"""Host paths out of text meant for others (PR descriptions, commit messages, reports).

Compiler messages, check commands and stage details carry absolute paths of this machine: the
clone under the run dir, temp folders, the model checkpoint, the user's home. A maintainer reading
the PR needs repo-relative paths, and nobody needs `/root/...`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tools.run_view import RunView

_TEMP = re.compile(r"(?<![\w.$/~-])/(?:tmp|var/tmp|dev/shm)/[^\s'\"`|)\]]*")


def strip_host_paths(
    text: str, *, repo: str | Path | None = None, run_dir: str | Path | None = None, model: str | None = None
) -> str:
    """`text` with the clone's paths made repo-relative, the run dir as $RUN, the model as $MODEL_PATH,
    temp files as $TMPDIR/<name> and the home directory as ~."""
    pairs: list[tuple[str, str]] = []
    for root, name in ((repo, ""), (run_dir, "$RUN/"), (model, "$MODEL_PATH/")):
        if root:
            for form in {str(root), str(Path(root).resolve())}:
                pairs += [(form.rstrip("/") + "/", name), (form.rstrip("/"), name.rstrip("/") or ".")]
    for old, new in sorted(pairs, key=lambda p: -len(p[0])):
        text = text.replace(old, new)
    text = _TEMP.sub(lambda m: "$TMPDIR/" + Path(m.group(0)).name, text)
    home = str(Path.home())
    if home not in ("/", ""):
        text = re.sub(rf"(?<![\w.$/~-]){re.escape(home)}(?=/|\b)", "~", text)
    return text


def public_text(text: str, view: RunView) -> str:
    """strip_host_paths for one run (a tools.report.RunView): its clone, run dir and model."""
    repo = view.state.get("repo_dir") or view.path / "repo"
    model = (view.job.get("model") or {}).get("path")
    return strip_host_paths(text, repo=repo, run_dir=view.path, model=str(model) if model else None)
