"""The validate stages on an already built clone: load check, one server launch, the benchmark."""
from __future__ import annotations

import json
from pathlib import Path

from agent.sweep.cells import Cell


def validate_built(repo: Path, cell: Cell) -> tuple[dict, dict | None, list[dict]]:
    """(stages, bench JSON or None, failures) for the cell's model, run in the cell's image."""
    from agent.profiles import load_profile
    from sandboxes.docker import DockerSandbox
    from tools.diagnose import diagnose_text

    profile = load_profile(cell.framework.profile)
    model = str(Path(cell.model.path).expanduser().resolve())
    env = {k: v.replace("{arch}", cell.target.arch) for k, v in profile.env.items()}
    stages: dict = {}
    with DockerSandbox(cell.target.image, repo, env=env, mounts=[f"{model}:{model}:ro"]) as sb:
        if profile.load_check:
            result = sb.run(profile.load_check.replace("{model_path}", model), timeout=600)
            if not result.ok:
                failures = [f.to_dict() for f in diagnose_text(result.output, repo_root=str(repo))]
                stages["load"] = {"status": "failed", "detail": f"exit {result.returncode}"}
                return stages, None, failures
            stages["load"] = {"status": "passed"}
        served = _serve_and_bench(sb, profile, model, cell)
    stages.update(served[0])
    return stages, served[1], served[2]


def _vocab_size(model: str) -> int:
    """Token ids of the benchmark prompts must exist in the model's vocabulary."""
    config = Path(model, "config.json")
    return (json.loads(config.read_text()).get("vocab_size") if config.is_file() else None) or 32000


def _serve_and_bench(sb, profile, model: str, cell: Cell) -> tuple[dict, dict | None, list[dict]]:
    """One launch (tools.serve: health, smoke, clean stop, diagnosed log) with the benchmark inside it."""
    from tools.bench import BenchConfig, Workload, preset, run_bench
    from tools.serve import running_server

    launch, wl, bench = profile.launch, cell.workload, None
    with running_server(sb, launch.command, model_path=model, health_path=launch.health_path,
                        models_path=launch.models_path, ready_timeout=launch.ready_timeout_s,
                        smoke_prompt=launch.smoke_prompt) as served:
        if served.ok:
            workload = preset(wl.preset) if wl.preset else Workload(
                isl=wl.isl, osl=wl.osl, num_prompts=wl.num_prompts, prefix_hit=wl.cache_hit_rate or 0.0,
                vocab_size=_vocab_size(model)).validate()
            bench = run_bench(BenchConfig(base_url=served.base_url, model=served.model, workload=workload,
                                          max_concurrency=wl.max_concurrency)).to_json()
    if bench is None:
        return ({"serve": {"status": "failed", "detail": served.reason}}, None,
                [f.to_dict() for f in served.failures])
    return ({"serve": {"status": "passed", "detail": served.smoke_text[:200]},
             "bench": {"status": "passed" if bench.get("valid", True) else "failed",
                       "detail": "; ".join(bench.get("invalid_reasons", [])) or "valid"}}, bench, [])
