"""The weight check on real frameworks: sglang's and vLLM's own model classes and load_weights, no GPU.

Each task writes a header-only checkpoint with a real model's name layout (config facts from the public
config.json, evals/weights_real/models/: GLM-4.5, DeepSeek-V3, Qwen3-MoE), runs `rocport weights CKPT
--profile P --repo CLONE --json` against a git copy of the framework's source (the model class is built
from that copy), and for the GLM-style tasks writes the check's fix into the real model file (the name
remap with the MTP layer taken from the config, or the exclusion-list mapper) and checks again.

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

from agent.profiles import load_profile
from evals.weights_real.checkpoints import build_tensors, quantize_fp8, write_checkpoint
from tools import git as gitops
from tools.weights.exclusion_fix import exclusion_rules, find_hook, mapper_import, with_exclusion_mapper
from tools.weights.exclusions import ExclusionMiss
from tools.weights.loader_source import find_loader_sites
from tools.weights.name_fix import with_config_remap
from tools.weights.prefix_rules import PrefixRule

HERE = Path(__file__).parent / "weights_real"
ROOT = Path(__file__).resolve().parent.parent
MTP_SHARED = "model.layers.{layer}.shared_experts"  # the GLM-style layout: no `mlp.` under the MTP layer
MTP_MLP_SHARED = "model.layers.{mtp}.mlp.shared_experts"  # an exclusion entry in the checkpoint's own naming
TASKS = {
    # name: (framework, model, moved MTP shared experts, exclusion list or None, expect)
    # expect: ok (no finding) | resolve (finding, the fix patch on the real model file, the same check passes)
    # | predict (the finding, with exact names; no fix is written)
    "glm45-sglang-match": ("sglang", "glm45", None, None, "ok"),
    "qwen3moe-sglang-match": ("sglang", "qwen3moe", None, None, "ok"),
    "dsv3-sglang-match": ("sglang", "dsv3", None, None, "ok"),
    "dsv3-sglang-mtp-names": ("sglang", "dsv3", MTP_SHARED, None, "resolve"),
    "glm45-sglang-mtp-names": ("sglang", "glm45", MTP_SHARED, None, "resolve"),
    "glm45-sglang-mtp-quant": ("sglang", "glm45", None, [MTP_MLP_SHARED, "lm_head"], "resolve"),
    "glm45-vllm-match": ("vllm", "glm45", None, None, "ok"),
    "qwen3moe-vllm-match": ("vllm", "qwen3moe", None, None, "ok"),
    "dsv3-vllm-match": ("vllm", "dsv3", None, None, "ok"),
    "glm45-vllm-mtp-names": ("vllm", "glm45", MTP_SHARED, None, "resolve"),
    # vLLM cannot build DeepSeek-V3's block-FP8 layers on a CPU without AMX: the static fallback predicts
    "dsv3-vllm-mtp-names": ("vllm", "dsv3", MTP_SHARED, None, "predict"),
    # the same block-FP8 limit: GLM-4.5 with an exclusion list is predicted from the static tree
    "glm45-vllm-mtp-quant": ("vllm", "glm45", None, [MTP_MLP_SHARED, "lm_head"], "predict"),
}


def framework_clone(python: str, framework: str, work: Path) -> Path:
    """A git repository holding the installed framework's Python source in its upstream layout."""
    dest = work / f"{framework}-clone"
    if not (dest / ".git").is_dir():
        src = (
            subprocess.run(
                [python, "-c", f"import {framework}, os; print(os.path.dirname({framework}.__file__))"],
                capture_output=True,
                text=True,
                check=True,
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        pkg = dest / ("python" if framework == "sglang" else "") / framework
        shutil.copytree(src, pkg, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
        gitops.snapshot(dest, f"{framework} as installed")
    gitops.git(dest, "checkout", "-q", "--", ".")
    return dest


def make_checkpoint(work: Path, task: str, model: str, moved: str | None, keep: list[str] | None) -> Path:
    config = json.loads((HERE / "models" / model / "config.json").read_text())
    tensors = build_tensors(config, moved)
    if keep is not None:
        keep = [k.format(mtp=config["num_hidden_layers"]) for k in keep]
        config = {
            **config,
            "quantization_config": {
                "quant_method": "fp8",
                "activation_scheme": "dynamic",
                "weight_block_size": [128, 128],
                "modules_to_not_convert": keep,
            },
        }
    if "quantization_config" in config:  # block-FP8 weights, as the model's own checkpoint ships them
        tensors = quantize_fp8(tensors, config["quantization_config"].get("modules_to_not_convert") or [])
    return write_checkpoint(work / task, config, tensors)


def check(python: str, ckpt: Path, framework: str, clone: Path) -> tuple[dict, float]:
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent.cli",
            "weights",
            str(ckpt),
            "--profile",
            framework,
            "--repo",
            str(clone),
            "--framework-python",
            python,
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    try:
        return json.loads(proc.stdout), time.perf_counter() - start
    except json.JSONDecodeError:
        raise SystemExit(
            f"rocport weights failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}"
        ) from None


def apply_fix(clone: Path, result: dict, config: dict, framework: str) -> str:
    """Write the check's fixes into the real model file: the name remap at the top of the loop that
    holds it, the exclusion-list mapper in the class that builds the renamed modules; `git diff --stat`."""
    for m in result["models"]:
        if not m["fix"]:
            continue
        rules = [PrefixRule(a, b) for a, b in m["fix"]]
        path = clone / m["loop_file"]
        text = path.read_text()
        site = next(s for s in find_loader_sites(text, any_method=True) if s.class_name == m["loop_class"])
        layout = "the MTP head's shared experts are stored without the `mlp.` of the decoder layers"
        path.write_text(with_config_remap(text, site, rules, config, layout))
    misses = [ExclusionMiss(**x) for x in result["exclusion_misses"]]
    if misses:
        draft = result["models"][-1]  # the class that registers the renamed (MTP) modules
        path = clone / draft["file"]
        hook = find_hook(clone, load_profile(framework).quant_configs)
        imp = mapper_import(clone, path)
        if hook is None or imp is None:
            raise SystemExit(f"{framework}: no exclusion-list hook or WeightsMapper in the clone")
        path.write_text(
            with_exclusion_mapper(
                path.read_text(), draft["class"], exclusion_rules(misses), config, hook, imp
            )
        )
    return gitops.git(clone, "diff", "--stat")


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
    row = {
        "task": name,
        "source": result["source"],
        "blocked": (result["blocked"] or {}).get("error"),
        "seconds": round(secs, 1),
        "findings": _findings(result),
        "expect_finding": expect,
    }
    if result["ok"] or expect == "predict":
        row["resolved"] = result["ok"] == (expect == "ok")
        return row
    row["diff"] = apply_fix(clone, result, json.loads((ckpt / "config.json").read_text()), framework)
    after, secs2 = check(python, ckpt, framework, clone)
    row.update(
        after_seconds=round(secs2, 1),
        after_findings=_findings(after),
        resolved=expect == "resolve" and after["ok"],
    )
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
    print(
        f"resolved {sum(r['resolved'] for r in rows)}/{len(rows)}; "
        f"check seconds: {', '.join(str(r['seconds']) for r in rows)}"
    )
    return 0 if all(r["resolved"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
