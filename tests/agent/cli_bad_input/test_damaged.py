"""Unparseable and damaged inputs: a binary log, a corrupt or forged checkpoint, a damaged run directory
or SQLite file under ROCPORT_HOME, a sweep results file that is not a database.
"""

from __future__ import annotations

import pytest

from tests.agent.cli_bad_input.cli import REPO_ROOT, one_line_error, rocport
from tests.agent.portfixture import HEADER_FAULTS, make_job


def test_binary_log_for_diagnose_and_fix(tmp_path, home, git_repo):
    (tmp_path / "bin.log").write_bytes(bytes(range(256)) * 16)
    one_line_error(rocport(home, "diagnose", "bin.log"), "bin.log", "binary")
    repo = git_repo(HEADER_FAULTS)
    one_line_error(rocport(home, "fix", str(repo), "--log", str(tmp_path / "bin.log")), "binary")


def test_weights_corrupt_checkpoint(tmp_path, home):
    trunc = tmp_path / "trunc"
    trunc.mkdir()
    (trunc / "model.safetensors").write_bytes((64).to_bytes(8, "little") + b'{"a":')
    one_line_error(rocport(home, "weights", "trunc"), "model.safetensors", "truncated", "re-download")
    huge = tmp_path / "huge"
    huge.mkdir()
    (huge / "model.safetensors").write_bytes((1 << 60).to_bytes(8, "little") + b"{}")
    one_line_error(rocport(home, "weights", "huge"), "model.safetensors")
    index = tmp_path / "index"
    index.mkdir()
    (index / "model.safetensors.index.json").write_text('{"weight_map": {')
    one_line_error(rocport(home, "weights", "index"), "index.json", "not valid JSON", "re-download")
    one_line_error(rocport(home, "weights", "absent"), "absent", "safetensors")


def test_port_corrupt_or_missing_checkpoint_stops_before_any_build(tmp_path, home, git_repo):
    repo = git_repo(HEADER_FAULTS)
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text("{}")
    (ckpt / "model-00001-of-00001.safetensors").write_bytes((120).to_bytes(8, "little") + b'{"w": {"dtype"')
    job = [a for s in make_job(tmp_path, repo, f"model.path={ckpt}") for a in ("-c", s)]
    one_line_error(
        rocport(home, "port", *job), "model-00001-of-00001.safetensors", "truncated", "re-download"
    )
    (ckpt / "model.safetensors.index.json").write_text('{"weight_map": ')
    one_line_error(rocport(home, "port", *job), "index.json", "re-download")
    job = [a for s in make_job(tmp_path, repo, f"model.path={tmp_path / 'absent'}") for a in ("-c", s)]
    one_line_error(rocport(home, "port", *job), "absent", "does not exist")
    assert not (home / "runs").is_dir() or not any((home / "runs").iterdir())  # nothing was started


def test_port_checkpoint_claiming_a_petabyte_stops_before_any_build(tmp_path, home, git_repo):
    """A header whose data_offsets point past the end of the file (a forged or cut shard) is caught from
    the header alone, in milliseconds, before anything is cloned or built."""
    import json

    repo = git_repo(HEADER_FAULTS)
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    header = json.dumps(
        {"w": {"dtype": "BF16", "shape": [1 << 25, 1 << 24], "data_offsets": [0, 10**15]}}
    ).encode()
    (ckpt / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 64)
    job = [a for s in make_job(tmp_path, repo, f"model.path={ckpt}") for a in ("-c", s)]
    one_line_error(rocport(home, "port", *job), "model.safetensors", "1000000000000000", "re-download")
    assert not (home / "runs").is_dir() or not any((home / "runs").iterdir())


def test_damaged_run_directory_for_report_and_pr(home):
    run = home / "runs" / "20261202-000000-x-0001"
    run.mkdir(parents=True)
    (run / "state.json").write_text("{")
    for args in (["report", run.name], ["pr", run.name]):
        one_line_error(rocport(home, *args), "state.json", "damaged", "rocport port -c")
    # A process killed mid-append leaves a torn last event: the report is still written.
    (run / "state.json").write_text("{}")
    (run / "events.jsonl").write_text('{"event": "run_started", "ts": 1.0}\n{"event": "pha')
    result = rocport(home, "report", run.name, "--html")
    assert result.returncode == 0, result.stderr
    assert (run / "report.md").is_file() and (run / "report.html").is_file()


@pytest.mark.parametrize("damaged", ["runs.sqlite", "checkpoints.sqlite"])
def test_damaged_sqlite_under_rocport_home(tmp_path, home, git_repo, damaged):
    (home / damaged).write_bytes(bytes(range(256)) * 20)
    job = [a for s in make_job(tmp_path, git_repo(HEADER_FAULTS)) for a in ("-c", s)]
    one_line_error(rocport(home, "port", *job), damaged, "not a readable SQLite database", "move it aside")
    if damaged == "runs.sqlite":
        one_line_error(rocport(home, "runs"), damaged, "move it aside")


def test_sweep_results_database_that_is_not_one(tmp_path, home):
    (tmp_path / "bad.sqlite").write_bytes(bytes(range(256)) * 20)
    example = str(REPO_ROOT / "agent/sweep/examples/tinyserve-nightly.yaml")
    for sub in ("run", "report"):
        one_line_error(rocport(home, "sweep", sub, example, "--db", "bad.sqlite"), "bad.sqlite", "--db")
