"""User YAML (profiles, jobs, sweeps): the data, the line an error names, and PyYAML's wording of a
syntax error, whichever parser reads the file."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict

from agent.yamlconf import ConfigError, load_yaml_model, read_yaml


class _Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rocm: str
    timeout_s: float = 1.0


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid")
    base: _Inner
    build: _Inner


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: b: c\n", "line 1: malformed YAML: mapping values are not allowed here"),
        ("a: [1\n", "line 2: malformed YAML: expected ',' or ']', but got '<stream end>'"),
    ],
)
def test_a_syntax_error_names_its_line_in_pyyaml_words(tmp_path, text, message):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match="malformed") as err:
        read_yaml(path)
    assert str(err.value) == f"{path}: {message}; fix the syntax"


def test_merged_mappings_are_read_and_an_error_names_the_line_as_written(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("base: &b\n  rocm: make\n  timeout_s: 1\nbuild:\n  <<: *b\n  timeout_s: soon\n")
    data, _ = read_yaml(path)
    assert data["build"] == {"rocm": "make", "timeout_s": "soon"}
    with pytest.raises(ConfigError) as err:
        load_yaml_model(path, _Doc)
    assert str(err.value).startswith(f"{path}:6: build.timeout_s: Input should be a valid number")
    path.write_text("base: &b\n  rocm: make\nbuild:\n  <<: *b\n  timeout_s: 5\n")
    assert load_yaml_model(path, _Doc).build == _Inner(rocm="make", timeout_s=5)
