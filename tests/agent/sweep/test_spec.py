"""Sweep YAML: validation errors name the key and line; expansion gives stable keys and build groups."""

import pytest

from agent.sweep.cells import expand
from agent.sweep.executor import build_groups
from agent.sweep.spec import SweepSpec
from agent.yamlconf import ConfigError, load_yaml_model

SWEEP = """\
name: nightly
frameworks:
  - name: tiny
    profile: tinyserve
    refs: [main@nightly, v1]
models:
  - {name: moe, path: /ckpt/moe}
  - {name: moe-mtp, path: /ckpt/moe-mtp}
targets:
  - {image: "rocport/rocm-build:6.4", arch: gfx942}
workloads:
  - {name: smoke, isl: 32, osl: 8}
"""


def test_expansion_gives_stable_keys_and_shares_builds(tmp_path):
    f = tmp_path / "sweep.yaml"
    f.write_text(SWEEP)
    cells = expand(load_yaml_model(f, SweepSpec))
    assert [c.key for c in cells] == [
        "tiny@main@nightly/moe/gfx942/smoke",
        "tiny@v1/moe/gfx942/smoke",
        "tiny@main@nightly/moe-mtp/gfx942/smoke",
        "tiny@v1/moe-mtp/gfx942/smoke",
    ]
    assert cells[0].git_ref == "main"
    assert [c.key for c in expand(load_yaml_model(f, SweepSpec))] == [c.key for c in cells]
    groups = build_groups(cells)
    assert sorted(len(g) for g in groups) == [2, 2]  # both models of one ref share its build


def test_unknown_key_names_key_and_line(tmp_path):
    f = tmp_path / "sweep.yaml"
    f.write_text(SWEEP.replace("    refs: [main@nightly, v1]", "    refz: [main]"))
    with pytest.raises(ConfigError) as info:
        load_yaml_model(f, SweepSpec)
    assert str(info.value) == f"{f}:5: frameworks.0.refz: unknown key: check the spelling"


def test_bad_value_and_malformed_yaml_are_one_line(tmp_path):
    f = tmp_path / "sweep.yaml"
    f.write_text(SWEEP.replace("isl: 32", "isl: -1"))
    with pytest.raises(ConfigError, match=r"sweep.yaml:12: workloads.0.isl: Input should be greater than"):
        load_yaml_model(f, SweepSpec)
    f.write_text("name: [unclosed\n")
    with pytest.raises(ConfigError, match="malformed YAML"):
        load_yaml_model(f, SweepSpec)
