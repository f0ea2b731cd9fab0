"""The weight check on real frameworks: sglang's and vLLM's own model classes and load_weights, no GPU.

Each task writes a header-only checkpoint with a real model's name layout (config facts from the public
config.json, evals/weights_real/models/), runs `rocport weights CKPT --profile P --repo CLONE --json`
against a git copy of the framework's source, and for the GLM-style MTP task applies the weight-name
rule's own patch writer (agent.rules.weight_names.with_remap) to the real model file and checks again.

    python3 evals/bench_weights_real.py --framework-python VENV/bin/python [--tasks glm45-sglang-mtp]

VENV holds torch and sglang/vllm from PyPI (evals/weights_real/setup_venv.sh). Prints one line per
task (expected-name source, seconds, findings, fix) and a summary; nothing is downloaded here.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from agent.rules.weight_names import with_remap
from evals.weights_real.checkpoints import build_tensors, quantize_fp8, write_checkpoint
from tools.weights.loader_source import find_loader_sites
from tools.weights.remap import PrefixRule

HERE = Path(__file__).parent / "weights_real"
ROOT = Path(__file__).resolve().parent.parent
MTP_SHARED = "model.layers.{layer}.shared_experts"  # the GLM-style layout: no `mlp.` under the MTP layer
TASKS = {
    # name: (framework, model, moved MTP shared experts, exclusion list or None, expect)
    # expect: ok (no finding) | resolve (finding, the fix patch, the same check passes) | predict (finding only)
    # | blocked (the check names what stopped it)
    "glm45-sglang-match": ("sglang", "glm45", None, None, "ok"),
    "qwen3moe-sglang-match": ("sglang", "qwen3moe", None, None, "ok"),
    "glm45-sglang-mtp-names": ("sglang", "glm45", MTP_SHARED, None, "resolve"),
    "glm45-sglang-mtp-quant": ("sglang", "glm45", None, ["model.layers.92.mlp.shared_experts", "lm_head"], "predict"),
    # vLLM 0.34 on x86 CPU: construction needs triton-cpu and its loaders dispatch through AutoWeightsLoader:
    # the expected outcome is a check that says exactly that, not a silent pass
    "glm45-vllm-blocked": ("vllm", "glm45", None, None, "blocked"),
}


def framework_clone(python: str, framework: str, work: Path) -> Path:
    """A git repository holding the installed framework's Python source in its upstream layout."""
    dest = work / f"{framework}-clone"
    if not (dest / ".git").is_dir():
        src = subprocess.run([python, "-c", f"import {framework}, os; print(os.path.dirname({framework}.__file__))"],
                             capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        pkg = dest / ("python" if framework == "sglang" else "") / framework
        shutil.copytree(src, pkg, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
        for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.name=rocport", "-c", "user.email=rocport@localhost",
                                                    "commit", "-qm", f"{framework} as installed"]):
            subprocess.run(["git", *cmd], cwd=dest, check=True)
    subprocess.run(["git", "checkout", "-q", "--", "."], cwd=dest, check=True)
    return dest


def make_checkpoint(work: Path, task: str, model: str, moved: str | None, keep: list[str] | None) -> Path:
    config = json.loads((HERE / "models" / model / "config.json").read_text())
    tensors = build_tensors(config, moved)
    if keep is not None:
        config = {**config, "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic",
                                                    "weight_block_size": [128, 128], "modules_to_not_convert": keep}}
        tensors = quantize_fp8(tensors, keep)
    return write_checkpoint(work / task, config, tensors)


def check(python: str, ckpt: Path, framework: str, clone: Path) -> tuple[dict, float]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "agent.cli", "weights", str(ckpt), "--profile", framework,
                           "--repo", str(clone), "--framework-python", python, "--json"],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    try:
        return json.loads(proc.stdout), time.perf_counter() - start
    except json.JSONDecodeError:
        raise SystemExit(f"rocport weights failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")


def apply_fix(clone: Path, result: dict) -> str:
    """Write the fix rules into the file whose load_weights holds the loop; returns `git diff --stat`."""
    for m in result["models"]:
        if not m["fix"]:
            continue
        rules = [PrefixRule(a, b) for a, b in m["fix"]]
        path = clone / m["loop_file"]
        text = path.read_text()
        site = next(s for s in find_loader_sites(text) if s.class_name == m["loop_class"])
        layout = "the MTP head's shared experts are stored without the `mlp.` of the decoder layers"
        path.write_text(with_remap(text, site, rules, layout))
    return subprocess.run(["git", "diff", "--stat"], cwd=clone, capture_output=True, text=True, check=True).stdout.strip()


def _findings(result: dict) -> list[str]:
    out = [f"{p['status']} {p['name']} -> {p['target']}" for m in result["models"] for p in m["problems"]]
    out += [f"never loaded {n}" for m in result["models"] for n in m["never_loaded"]]
    out += [f"exclusion {x['entry']} misses {x['framework_prefix']}" for x in result["exclusion_misses"]]
    return out


def run_task(name: str, python: str, work: Path) -> dict:
    framework, model, moved, keep, expect = TASKS[name]
    clone = framework_clone(python, framework, work)
    ckpt = make_checkpoint(work, name, model, moved, keep)
    result, secs = check(python, ckpt, framework, clone)
    row = {"task": name, "source": result["source"], "blocked": (result["blocked"] or {}).get("error"),
           "seconds": round(secs, 1), "findings": _findings(result), "expect_finding": expect}
    if expect == "blocked":
        row["replay_errors"] = [m["error"] for m in result["models"] if m["error"]]
        row["resolved"] = bool(result["blocked"]) and bool(row["replay_errors"]) and not result["ok"]
        return row
    if result["ok"] or expect == "predict":
        row["resolved"] = result["ok"] == (expect == "ok")
        return row
    row["diff"] = apply_fix(clone, result)
    after, secs2 = check(python, ckpt, framework, clone)
    row.update(after_seconds=round(secs2, 1), after_findings=_findings(after), resolved=expect == "resolve" and after["ok"])
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework-python", required=True)
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache/rocport-evals/weights-real")
    parser.add_argument("--tasks", nargs="*", default=list(TASKS))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    rows = [run_task(t, args.framework_python, args.work) for t in args.tasks]
    for r in rows:
        print(json.dumps(r))
    print(f"resolved {sum(r['resolved'] for r in rows)}/{len(rows)}; "
          f"check seconds: {', '.join(str(r['seconds']) for r in rows)}")
    return 0 if all(r["resolved"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
