"""The pydantic-free profile reader of `rocport scan` vouches only for documents the Profile model
takes unchanged, and reads the same scan settings from them; anything else is left to pydantic."""

from __future__ import annotations

import copy
import marshal
import os
import subprocess
import sys
import types
import typing
from pathlib import Path

import annotated_types
import pytest
import yaml
from pydantic import BaseModel

from agent.profile_shape import PROFILE_DIR, PROFILE_SHAPE, fits, scan_view
from agent.profiles import PROFILE_DIR as BUNDLED
from agent.profiles import Profile, ProfileError, load_profile, profile_names


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch) -> Path:
    """Parse memos of bundled profiles go to a directory of the test's own, not the user's cache."""
    monkeypatch.setenv("ROCPORT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _shape(annotation, metadata=()) -> object:
    """The shape agent.profile_shape should declare for one pydantic field type."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        assert annotation.model_config.get("extra") == "forbid", annotation
        return {
            name: (_shape(f.annotation, f.metadata), f.is_required())
            for name, f in annotation.model_fields.items()
        }
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        if type(None) in args:
            (inner,) = [a for a in args if a is not type(None)]
            return ("optional", _shape(inner, metadata))
        assert set(args) == {str, int, float, bool}, annotation
        return "scalar"
    if origin is list:
        return ("list", _shape(args[0]))
    if origin is dict:
        assert args[0] is str, annotation
        return ("dict", _shape(args[1]))
    if origin is typing.Literal:
        return ("literal", args)
    bounds = [m for m in metadata if isinstance(m, annotated_types.Ge)]
    assert len(bounds) == len(metadata), (annotation, metadata)  # a new constraint: declare it
    if bounds:
        assert annotation is int
        return ("int>=", bounds[0].ge)
    assert annotation in (str, bool, int, float), annotation
    return annotation.__name__


def test_the_shape_is_the_profile_model_field_by_field():
    assert _shape(Profile) == PROFILE_SHAPE
    assert str(BUNDLED) == PROFILE_DIR


def _mutants(doc: dict) -> list[dict]:
    """The document with each value in turn replaced by values of other types, each key dropped,
    and an unknown key added at each level."""
    odd = [None, 0, 1, -3, 2**60, 1.5, True, "x", "", [], ["x"], [1], {}, {"k": "v"}, {"k": 1}]
    out: list[dict] = []

    def walk(node, path):
        if isinstance(node, dict):
            items = list(node.items())
            out.append(_set(doc, path, {**node, "unknown_key": "x"}))
            for key, value in items:
                out.append(_set(doc, path, {k: v for k, v in node.items() if k != key}))
                walk(value, (*path, key))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, (*path, i))
        out.extend(_set(doc, path, value) for value in odd)

    walk(doc, ())
    return out


def _set(doc, path, value):
    if not path:
        return value
    copied = copy.deepcopy(doc)
    node = copied
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return copied


def _scan_part(profile) -> tuple:
    sources = profile.rocm_sources
    if sources is not None:
        sources = (sources.cmake, sources.variables, sources.cuda_variables, sources.setup_py)
    return profile.name, profile.hipify_at_build, sources


@pytest.mark.parametrize("name", profile_names())
def test_whatever_the_shape_accepts_pydantic_accepts_unchanged(name, tmp_path):
    doc = yaml.safe_load((BUNDLED / f"{name}.yaml").read_text())
    accepted = 0
    for i, mutant in enumerate([doc, *_mutants(doc)]):
        if not isinstance(mutant, dict) or not fits(mutant, PROFILE_SHAPE):
            continue
        accepted += 1
        path = tmp_path / f"m{i}.yaml"
        path.write_text(yaml.safe_dump(mutant))
        view = scan_view(str(path))
        assert view is not None and _scan_part(view) == _scan_part(load_profile(str(path))), mutant
    assert accepted > 10  # optional keys dropped, nulls where allowed, ...


@pytest.mark.parametrize("name", profile_names())
def test_a_bundled_profile_is_read_without_pydantic_by_name(name):
    view = scan_view(name)
    assert view is not None and _scan_part(view) == _scan_part(load_profile(name))


@pytest.mark.parametrize(
    "text",
    [
        "name: x\nbuild: {rocm: make}\nlaunch: {command: serve}\nhipify_at_build: 'yes'\n",  # coerced
        "name: x\nbuild: {rocm: make}\n",  # launch missing
        "name: x\nbuild: {rocm: make}\nlaunch: {command: serve}\ncolour: red\n",
        "name: [unclosed\n",
        "- a list\n",
        "name: x\nbuild: {rocm: make}\nlaunch: {command: serve}\nimages: &a [*a]\n",  # a cycle
    ],
)
def test_what_does_not_plainly_fit_is_left_to_pydantic(tmp_path, text):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    assert scan_view(str(path)) is None
    assert scan_view(str(tmp_path / "absent.yaml")) is None


def test_an_error_is_pydantics_own(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("name: x\nbuild: {rocm: make}\nlaunch: {command: serve}\nserve_needs_gpu: maybe\n")
    with pytest.raises(ProfileError, match=r"p.yaml:4: serve_needs_gpu: "):
        load_profile(str(path))
    assert scan_view(str(path)) is None


_PROBE = (
    "import sys; from agent.profile_shape import scan_view; v = scan_view('vllm'); "
    "print(v.name, v.hipify_at_build, v.rocm_sources.cmake, 'yaml' in sys.modules)"
)


def test_a_bundled_profile_is_parsed_once_then_read_back_without_pyyaml(cache_dir):
    """Importing PyYAML is most of a profile read; a bundled profile's parse is remembered, so the
    next `rocport scan --profile vllm` reads the same settings without it."""
    env = {**os.environ, "ROCPORT_CACHE_DIR": str(cache_dir)}
    runs = [
        subprocess.run(
            [sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, check=True, timeout=60
        ).stdout.split()
        for _ in range(2)
    ]
    assert runs == [["vllm", "True", "CMakeLists.txt", "True"], ["vllm", "True", "CMakeLists.txt", "False"]]


def test_a_memo_of_other_bytes_or_of_nothing_readable_is_not_trusted(cache_dir):
    assert scan_view("vllm").name == "vllm"
    (memo,) = (cache_dir / "profiles").iterdir()
    impostor = {"name": "impostor", "build": {"rocm": "make"}, "launch": {"command": "serve"}}
    memo.write_bytes(marshal.dumps((b"name: impostor\n", impostor)))  # the file was edited since
    assert _scan_part(scan_view("vllm")) == _scan_part(load_profile("vllm"))
    memo.write_bytes(b"\x00 not marshal")
    assert _scan_part(scan_view("vllm")) == _scan_part(load_profile("vllm"))
    kept = marshal.loads(memo.read_bytes())  # noqa: S302 (the memo this test had written)
    assert kept[0] == (BUNDLED / "vllm.yaml").read_bytes()  # and kept again


def test_a_profile_named_by_path_is_parsed_every_time(tmp_path, cache_dir):
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\nbuild: {rocm: make}\nlaunch: {command: serve}\n")
    assert scan_view(str(path)).name == "mine"
    path.write_text("name: yours\nbuild: {rocm: make}\nlaunch: {command: serve}\n")
    assert scan_view(str(path)).name == "yours"
    assert not (cache_dir / "profiles").exists()  # no memo piles up per path a user passes
