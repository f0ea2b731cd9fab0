"""PortJob: YAML + key=value overrides, errors that name the key and where it came from."""

from __future__ import annotations

import pytest

from agent.config import JobError, job_to_yaml, load_job

JOB = """\
framework:
  profile: tinyserve
  repo: /src/tinyserve
model:
  path: /models/tiny
budgets:
  builds: 4
"""


def write(tmp_path, text, name="job.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_yaml_then_overrides_apply_left_to_right(tmp_path):
    job = load_job(
        [
            write(tmp_path, JOB),
            "budgets.builds=2",
            "target.arch=gfx950",
            "budgets.usd=0.5",
            "sandbox.backend=local",
            "bench.enabled=false",
        ]
    )
    assert job.framework.profile == "tinyserve"
    assert job.budgets.builds == 2
    assert job.target.arch == "gfx950"
    assert job.budgets.usd == 0.5 and job.sandbox.backend == "local" and job.bench.enabled is False


def test_unknown_yaml_key_is_named_with_its_line(tmp_path):
    path = write(tmp_path, JOB + "  biulds: 3\n")
    with pytest.raises(JobError) as err:
        load_job([path])
    assert "budgets.biulds" in str(err.value)
    assert "job.yaml line 8" in str(err.value)


def test_unknown_override_key_is_named(tmp_path):
    with pytest.raises(JobError, match=r"unknown key target\.gpu .*override 'target.gpu=mi300'"):
        load_job([write(tmp_path, JOB), "target.gpu=mi300"])


def test_malformed_yaml_is_one_line_with_the_line_number(tmp_path):
    path = write(tmp_path, "framework:\n  profile: [unclosed\n")
    with pytest.raises(JobError) as err:
        load_job([path])
    message = str(err.value)
    assert "malformed YAML" in message and "\n" not in message and "line" in message


def test_missing_framework_says_how_to_set_it(tmp_path):
    with pytest.raises(JobError, match=r"missing key framework.*-c framework="):
        load_job(["budgets.builds=1"])


def test_bad_value_names_the_key(tmp_path):
    with pytest.raises(JobError, match=r"budgets.builds"):
        load_job([write(tmp_path, JOB), "budgets.builds=0"])
    with pytest.raises(JobError, match=r"sandbox.backend"):
        load_job([write(tmp_path, JOB), "sandbox.backend=kubernetes"])


def test_missing_job_file_is_an_error(tmp_path):
    with pytest.raises(JobError, match="not found"):
        load_job([str(tmp_path / "nope.yaml")])


def test_api_key_is_never_part_of_the_job(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_LLM_KEY", "sk-secret-value")
    job = load_job([write(tmp_path, JOB), "llm.api_key_env=MY_LLM_KEY", "llm.base_url=http://127.0.0.1:9/v1"])
    text = job_to_yaml(job)
    assert "MY_LLM_KEY" in text and "sk-secret-value" not in text
    with pytest.raises(JobError, match=r"unknown key llm.api_key"):
        load_job([write(tmp_path, JOB), "llm.api_key=sk-secret-value"])
