"""The words of a PR: commit messages, the title, and the description with its evidence."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from tools.host_paths import public_text
from tools.report import PERCENTILES, RunView, bench_rows

NATIVE_SUFFIXES = {".cu", ".cuh", ".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".hip", ".inl"}
# Python that a ROCm-only change hides behind: when an added line tests one of these, CUDA takes the else.
ROCM_GUARDS = ("is_hip", "torch.version.hip", "is_rocm", "USE_ROCM", "_is_hip")

_WHAT = {
    "cuda_header": "add a ROCm branch for the CUDA headers",
    "cub": "use hipCUB on ROCm",
    "cuda_std": "use host type traits on ROCm",
    "warp_intrinsic": "route warp intrinsics through the ROCm compat header",
    "warp_size": "derive warp-size literals from WARP_SIZE",
    "bf16_type": "map CUDA bf16 types to HIP types on ROCm",
    "fp16_type": "map CUDA fp16 types to HIP types on ROCm",
    "fp8_type": "map CUDA fp8 types to HIP fnuz/OCP types on ROCm",
    "inline_ptx": "replace inline PTX with portable code on ROCm",
    "weight_name": "remap checkpoint weight names in load_weights",
    "quant_exclusion": "apply the weight-name remap to the quantization exclusion list",
    "cuda_only_dep": "guard a CUDA-only import by platform",
    "compiler_dialect": "fix code clang rejects",
}
# What no check here can prove without an AMD GPU, per failure kind (FAILURE_CLASSES.md invariants).
_NEEDS_GPU = {
    "warp_intrinsic": "warp shuffles were compiled, not run: 32-lane semantics on wave64 are unproven",
    "warp_size": "warp-size changes were compiled, not run on wave64 hardware",
    "fp8_type": "fp8 type mapping was compiled, not run: fnuz vs OCP numerics are unproven",
    "inline_ptx": "the PTX replacement was compiled, not run",
}


def failure_for(view: RunView, signature: str) -> dict[str, Any]:
    """The diagnosed failure a patch targeted (state.known_failures), or what the signature says."""
    known: dict[str, dict[str, Any]] = view.state.get("known_failures", {})
    if signature in known:
        return known[signature]
    kind = signature.split(":", 1)[0]
    return {"kind": kind, "signature": signature, "message": signature}


def _subject(outcome: dict[str, Any], view: RunView) -> str:
    prop = outcome["proposal"]
    failure = failure_for(view, prop["failure_signature"])
    what = _WHAT.get(failure.get("kind", ""), f"fix {failure.get('kind', 'a ROCm failure')} on ROCm")
    files = prop.get("files", [])
    where = files[0] if len(files) == 1 else (f"{files[0]} and {len(files) - 1} more" if files else "build")
    return f"[ROCm] {where}: {what}"


def _checks(outcome: dict[str, Any]) -> list[str]:
    lines = []
    for ck in outcome.get("checks", []):
        mark = "ok" if ck["ok"] else "FAILED"
        cmd = f" — `{ck['cmd']}`" if ck.get("cmd") else ""
        detail = f" ({ck['detail'][:120]})" if ck.get("detail") else ""
        lines.append(f"- {ck['name']}: {mark}{detail}{cmd}")
    return lines


def commit_message(outcome: dict[str, Any], view: RunView) -> str:
    prop = outcome["proposal"]
    failure = failure_for(view, prop["failure_signature"])
    where = f" at {failure['file']}:{failure.get('line')}" if failure.get("file") else ""
    body = [
        _subject(outcome, view),
        "",
        f"This removes the ROCm {failure.get('kind')} failure{where}:",
        "",
        f"    {failure.get('message', '').strip()}",
        "",
        prop.get("rationale", "").strip(),
        "",
        "Evidence:",
        *_checks(outcome),
    ]
    return public_text("\n".join(body).rstrip() + "\n", view)


def subject_of_run(view: RunView) -> tuple[str, str]:
    """(model or framework, arch) the run ported, from its job."""
    job = view.job
    model = job.get("model") or {}
    name = model.get("name") or (PurePosixPath(str(model["path"])).name if model.get("path") else "")
    framework = (job.get("framework") or {}).get("profile", "")
    name = name or PurePosixPath(str(framework)).stem or "the framework"
    return name, (job.get("target") or {}).get("arch", "") or "ROCm"


def pr_title(view: RunView) -> str:
    """`[ROCm] <model> on <arch>: <what the fixes do>`, the way a maintainer scans a PR list."""
    kept = [o for o in view.state.get("outcomes", []) if o.get("kept")]
    kinds = list(
        dict.fromkeys(failure_for(view, o["proposal"]["failure_signature"]).get("kind", "") for o in kept)
    )
    whats = [_WHAT.get(k, f"fix {k}") for k in kinds]
    what = "; ".join(whats[:2]) + (f" (+{len(whats) - 2} more)" if len(whats) > 2 else "")
    model, arch = subject_of_run(view)
    return f"[ROCm] {model} on {arch}: {what}"


def cuda_path(outcome: dict[str, Any]) -> str:
    """What this patch does to the CUDA build, said honestly: native code under a ROCm guard (proven by
    nvcc's preprocessor output) is not Python that CUDA runs too."""
    prop = outcome["proposal"]
    files = prop.get("files", [])
    checks = outcome.get("checks", [])
    native = [f for f in files if PurePosixPath(f).suffix in NATIVE_SUFFIXES]
    python = [f for f in files if f.endswith(".py")]
    said = []
    if native:
        same = [c for c in checks if c["name"].lower().startswith("cuda -e identi")]
        nvcc = [c for c in checks if c["name"].lower().startswith("nvcc")]
        if same and all(c["ok"] for c in same):
            said.append(
                f"{', '.join(native)}: CUDA path unchanged — the change is under a ROCm guard; nvcc's "
                f"preprocessor output is identical before and after"
            )
        elif nvcc and all(c["ok"] for c in nvcc):
            said.append(
                f"{', '.join(native)}: still compiles with nvcc, but the CUDA preprocessor output was "
                f"not compared, so the change may reach CUDA"
            )
        else:
            said.append(
                f"{', '.join(native)}: not checked against CUDA here (no nvcc on the machine that ran "
                f"rocport)"
            )
    if python:
        added = "\n".join(ln for ln in prop.get("diff", "").splitlines() if ln.startswith("+"))
        guard = next((g for g in ROCM_GUARDS if g in added), None)
        if guard:
            said.append(
                f"{', '.join(python)}: Python that CUDA runs too; the new lines are behind a `{guard}` "
                f"check, so CUDA takes the unchanged branch (validated on ROCm only)"
            )
        else:
            said.append(
                f"{', '.join(python)}: Python that CUDA runs too — this change also applies on CUDA "
                f"and was validated on ROCm only; review it for CUDA"
            )
    return "; ".join(said) or "no source file changed"


def _not_validated(view: RunView, kept: list[dict[str, Any]]) -> list[str]:
    s = view.state
    out = [
        f"- {k}: {v.get('status')}" + (f" — {v['detail']}" if v.get("detail") else "")
        for k, v in s.get("stages", {}).items()
        if str(v.get("status", "")).startswith("not run")
    ]
    kinds = {failure_for(view, o["proposal"]["failure_signature"]).get("kind") for o in kept}
    out += [f"- {_NEEDS_GPU[k]}" for k in sorted(k for k in kinds if k in _NEEDS_GPU)]
    if not s.get("gpu"):
        out.append(
            "- no AMD GPU was available: kernels were compiled for the target but not executed; "
            "benchmark numbers come from the server as it ran on this machine"
        )
    return out or ["- nothing: every check ran"]


def pr_description(view: RunView, commits: list[str]) -> str:
    s = view.state
    kept = [o for o in s.get("outcomes", []) if o.get("kept") and o.get("commit")]
    model, arch = subject_of_run(view)
    native_only = all(not any(f.endswith(".py") for f in o["proposal"].get("files", [])) for o in kept)
    lines = [
        f"# {pr_title(view)}",
        "",
        "## Summary",
        "",
        f"{len(kept)} minimal patch{'es' if len(kept) != 1 else ''} that make {model} build and load on "
        f"{arch}, found and validated by rocport (run `{view.run_id}`). "
        + (
            "Each patch says below what it does to the CUDA path."
            if not native_only
            else "Each patch says below how the CUDA path was checked."
        ),
        "",
        "## Failures → fixes",
        "",
        "| # | failure | kind | fix | commit |",
        "|---|---|---|---|---|",
    ]
    for i, (o, sha) in enumerate(zip(kept, commits, strict=False), 1):
        f = failure_for(view, o["proposal"]["failure_signature"])
        lines.append(
            f"| {i} | `{f.get('message', '')[:80]}` | {f.get('kind')} | {_subject(o, view)} | {sha[:10]} |"
        )
    lines += ["", "## Evidence", ""]
    for i, o in enumerate(kept, 1):
        f = failure_for(view, o["proposal"]["failure_signature"])
        lines += [
            f"### {i}. {_subject(o, view)}",
            "",
            f"Proposed by `{o['proposal']['proposer']}`: {o['proposal'].get('rationale', '').strip()}",
            "",
            "**Before** (diagnosed):",
            "",
            "```",
            (f.get("excerpt") or f.get("message", "")).strip(),
            "```",
            "",
            "**After:**",
            "",
        ]
        lines += [*_checks(o), "", f"**CUDA path:** {cuda_path(o)}", ""]
    stages = s.get("stages", {})
    if stages:
        lines += ["## Load, serve and benchmark", ""]
        lines += [
            f"- {k}: {v.get('status')}" + (f" — {v['detail']}" if v.get("detail") else "")
            for k, v in stages.items()
        ]
        lines.append("")
    bench = s.get("bench")
    if bench:
        rows, thr = bench_rows(bench)
        lines += ["Benchmark after the fixes (raw JSON attached as `bench.json`):", ""]
        if bench.get("command"):
            lines += ["```", bench["command"], "```", ""]
        lines += ["| metric (ms) | " + " | ".join(PERCENTILES) + " |", "|---" * (len(PERCENTILES) + 1) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        lines += [""] + [f"- {k}: {v:.2f}" for k, v in thr] + [""]
        before = s.get("bench_before")
        lines.append(
            "Before the fixes: "
            + (
                "see `bench_before.json`."
                if before
                else "no baseline — the server could not load the model on ROCm."
            )
        )
        lines.append("")
    lines += _accuracy(s)
    lines += _tune_markdown(view.path)
    lines += ["## Not validated here", "", *_not_validated(view, kept)]
    return public_text("\n".join(lines) + "\n", view)


def _accuracy(state: dict[str, Any]) -> list[str]:
    """The accuracy check's result when the run had one (outputs compared against a reference)."""
    acc = state.get("accuracy") or state.get("stages", {}).get("accuracy")
    if not acc:
        return []
    lines = ["## Accuracy check", ""]
    if isinstance(acc, dict):
        lines += [f"- {k}: {v}" for k, v in acc.items() if k != "log"]
    else:
        lines.append(f"- {acc}")
    return [*lines, ""]


def _tune_markdown(run_dir: Path) -> list[str]:
    from tools.tune.sections import pr_markdown  # the serving-configuration section, when the run was tuned

    return pr_markdown(run_dir)
