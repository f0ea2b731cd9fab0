"""`rocport tune RUN_ID`: tune MoE kernel configs, search the serving space, rerun the winner,
write runs/<id>/tune/ (tune.json, tune.md, tune.svg and every benchmark's raw JSON)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from agent.config import JobError, PortJob, load_job
from agent.loop.nodes.env import RunEnv
from agent.loop.observer import Observer
from agent.loop.rundir import RunDir
from agent.loop.store import RunStore
from agent.profiles import Profile, ProfileError, load_profile
from agent.tune import candidates, search, trial
from agent.tune.snippets import job_snippet, profile_snippet
from agent.tune.spec import MoeTuning, TuneJob, TuneSpace
from tools.bench import Workload, WorkloadError
from tools.tune.plot import plot
from tools.tune.records import Trial
from tools.tune.render import markdown
from tools.tune.results import TUNE_DIR, TuneOutcome, parse_reference


class TuneError(ValueError):
    """The tune cannot start; one line saying what to do."""


def load_run(run_id: str, home: Path | None = None) -> tuple[RunDir, PortJob, Profile, TuneSpace]:
    """The run's directory, job, profile and the profile's serving space; TuneError when any is missing."""
    try:
        rundir = RunDir(run_id, home)
    except ValueError as exc:
        raise TuneError(str(exc)) from None
    if not rundir.job_file.is_file():
        raise TuneError(f"no run {run_id!r} under {rundir.path.parent}: use an id `rocport runs` lists")
    try:
        job = load_job([str(rundir.job_file)])
        profile = load_profile(job.framework.profile)
    except (JobError, ProfileError) as exc:
        raise TuneError(str(exc)) from None
    if profile.tune is None:
        raise TuneError(
            f"profile {profile.name!r} declares no tune: section (the serving space to search); "
            "add one (see agent/profiles/tinyserve.yaml)"
        )
    if not job.model.path:
        raise TuneError(f"run {run_id} has no model.path: tuning needs a model to serve")
    row = RunStore(home).get(run_id)
    if row is not None and row.status != "green":
        raise TuneError(
            f"run {run_id} is {row.status}, not green: finish the port first "
            f"(`rocport port --resume {run_id}`)"
        )
    return rundir, job, profile, profile.tune


def scaled_workload(job: PortJob, tune: TuneJob) -> Workload:
    """The tune's preset or the job's bench workload, ISL/OSL scaled by tune.workload_scale."""
    spec = job.bench
    name = tune.preset or spec.preset
    try:
        base = spec.model_copy(update={"preset": name}).workload(
            vocab_size=Workload.vocab_size
        )  # clamped below
        scale = tune.workload_scale
        vocab = _vocab_size(_served_path(job)) or base.vocab_size
        return replace(
            base,
            isl=max(2, round(base.isl * scale)),
            osl=max(1, round(base.osl * scale)),
            num_prompts=tune.num_prompts or spec.num_prompts,
            vocab_size=min(vocab, base.vocab_size),
            prefix_groups=tune.prefix_groups or base.prefix_groups,
            seed=1234,
        ).validate()
    except WorkloadError as exc:
        raise TuneError(f"tune workload: {exc}") from None


def _served_path(job: PortJob) -> str:
    """The model the tune serves: job.model.path, which load_run refuses a run without."""
    if not job.model.path:
        raise TuneError("the job has no model.path: tuning needs a model to serve")
    return job.model.path


def _vocab_size(model_path: str) -> int | None:
    config = Path(model_path, "config.json")
    return json.loads(config.read_text()).get("vocab_size") if config.is_file() else None


def tune_run(
    run_id: str,
    tune: TuneJob,
    *,
    exhaustive: bool = False,
    home: Path | None = None,
    on_trial: Callable[[str, Trial], None] | None = None,
) -> TuneOutcome:
    """The whole tune of one run; `on_trial(strategy, trial)` sees each trial as it finishes."""
    rundir, job, profile, space = load_run(run_id, home)
    refs = [parse_reference(r) for r in tune.reference]
    gpus = tune.gpus or space.gpus
    if not candidates.splits(space, gpus):
        raise TuneError(
            f"no TP size in {profile.name}'s tune.parallel.tp {space.parallel.tp} divides {gpus} GPUs"
        )
    env = RunEnv(job=job, profile=profile, rundir=rundir, observer=Observer(rundir), proposers=[])
    if profile.serve_needs_gpu and not env.gpu:
        raise TuneError(f"{profile.name} serves only on a GPU and this machine has none (/dev/kfd)")
    out_dir = rundir.path / TUNE_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        moe = None
        if space.moe_tuning and tune.moe_configs:
            first = candidates.start(space, gpus).split
            moe = _moe(env, space.moe_tuning, _served_path(job), first.tp, first.ep)
        ctx = _context(env, space, job, tune, out_dir)

        def report(strategy: str) -> Callable:
            return lambda t: on_trial(strategy, t) if on_trial else None

        found = search.coordinate_search(
            space, gpus, _reporting(ctx, report("coordinate")), tune.wall_budget_s
        )
        grid = (
            search.exhaustive_search(space, gpus, _reporting(ctx, report("exhaustive"), probe=False))
            if exhaustive or tune.exhaustive
            else None
        )
        best = found.best_trial()
        verify = _verify(ctx, space, gpus, best, report("rerun")) if tune.verify and best else None
    finally:
        env.close()
    outcome = TuneOutcome(
        run_id=run_id,
        framework=profile.name,
        gpus=gpus,
        workload={**ctx.workload.to_dict(), "max_concurrency": ctx.max_concurrency, "repeats": ctx.repeats},
        search=found,
        exhaustive=grid,
        verify=verify,
        moe=moe,
        price_per_gpu_hour=tune.price_per_gpu_hour,
        references=refs,
        slo_ttft_ms=tune.slo_ttft_ms,
        slo_tpot_ms=tune.slo_tpot_ms,
    )
    if best:
        cand = _candidate_of(space, gpus, best.key)
        cmd, cand_env = trial.candidate_command(ctx, cand)
        outcome.chosen_command = candidates.shell_line(cmd, cand_env)
        outcome.job_snippet = job_snippet(cand, candidates.launch_args(space, cand))
        outcome.profile_snippet = profile_snippet(cand_env)
    write_outcome(outcome, out_dir)
    return outcome


def write_outcome(outcome: TuneOutcome, out_dir: Path) -> Path:
    """tune.json, tune.svg and tune.md in out_dir; returns the markdown path."""
    outcome.write(out_dir)
    (out_dir / "tune.svg").write_text(plot(outcome))
    path = out_dir / "tune.md"
    path.write_text(markdown(outcome, "tune.svg", heading="#"))
    return path


def _moe(env: RunEnv, spec: MoeTuning, model_path: str, tp: int, ep: int) -> dict:
    from agent.tune.moe import tune_moe_configs

    return tune_moe_configs(env.sandbox(), env.rundir, spec, model_path=model_path, tp=tp, ep=ep)


def _context(env: RunEnv, space: TuneSpace, job: PortJob, tune: TuneJob, out_dir: Path) -> trial.TrialContext:
    workload = scaled_workload(job, tune)
    concurrency = tune.max_concurrency or job.bench.max_concurrency
    return trial.TrialContext(
        sandbox=env.sandbox(),
        launch=env.profile.launch,
        space=space,
        base_env=env.profile_env(),
        model_path=_served_path(job),
        model_name=job.model.name or "",
        workload=workload,
        max_concurrency=concurrency,
        probe_prompts=tune.probe_prompts or concurrency,
        slack=tune.early_stop_slack,
        repeats=tune.repeats,
        out_dir=out_dir,
        slo_ttft_ms=tune.slo_ttft_ms,
        slo_tpot_ms=tune.slo_tpot_ms,
    )


def _reporting(ctx: trial.TrialContext, report: Callable, probe: bool = True) -> search.Evaluate:
    def evaluate(cand, incumbent):
        result = trial.evaluate(ctx, cand, incumbent, probe)
        report(result)
        return result

    return evaluate


def _candidate_of(space: TuneSpace, gpus: int, key: str) -> candidates.Candidate:
    return next(c for c in candidates.every_candidate(space, gpus) if c.key() == key)


def _verify(ctx: trial.TrialContext, space: TuneSpace, gpus: int, best, report: Callable):
    """Launch the chosen configuration again with the same load (no early stop)."""
    result = trial.evaluate(ctx, _candidate_of(space, gpus, best.key), None, probe=False)
    report(result)
    return result
