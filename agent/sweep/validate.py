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
    from tools.serve import serve_profile

    profile = load_profile(cell.framework.profile)
    model = str(Path(cell.model.path).expanduser().resolve())
    env = {k: v.replace("{arch}", cell.target.arch) for k, v in profile.env.items()}
    stages: dict = {}
    with DockerSandbox(cell.target.image, repo, network=True, env=env, mounts=[f"{model}:{model}:ro"]) as sb:
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
    from tools.bench import BenchConfig, Workload, preset, run_bench
    from tools.serve import free_port, launch_command, smoke_completion
    from sandboxes.health import wait_ready

    port = free_port()
    cmd = launch_command(profile.launch.command, model_path=model, port=port)
    server = sb.start(cmd, name=f"server-{port}", port=None)
    try:
        problem = wait_ready(port, health_path=profile.launch.health_path, timeout=profile.launch.ready_timeout_s,
                             alive=server.alive)
        if problem:
            from tools.diagnose import diagnose_text
            failures = [f.to_dict() for f in diagnose_text(server.logs(), repo_root=sb.workdir)]
            return {"serve": {"status": "failed", "detail": problem}}, None, failures
        ok, text = smoke_completion("127.0.0.1", port, cell.model.name, profile.launch.smoke_prompt)
        stages = {"serve": {"status": "passed" if ok else "failed", "detail": text[:200]}}
        wl = cell.workload
        workload = preset(wl.preset) if wl.preset else Workload(
            isl=wl.isl, osl=wl.osl, num_prompts=wl.num_prompts, prefix_hit=wl.cache_hit_rate or 0.0,
            vocab_size=_vocab_size(model)).validate()
        bench = run_bench(BenchConfig(base_url=f"http://127.0.0.1:{port}", model=cell.model.name, workload=workload,
                                      max_concurrency=wl.max_concurrency)).to_json()
        stages["bench"] = {"status": "passed" if bench.get("valid", True) else "failed",
                           "detail": "; ".join(bench.get("invalid_reasons", [])) or "valid"}
        return stages, bench, []
    finally:
        server.stop()
