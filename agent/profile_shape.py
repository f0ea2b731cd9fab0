"""What a scan reads of a framework profile, loaded without pydantic when the YAML plainly fits.

`agent.profiles.load_profile` validates a profile with pydantic; importing pydantic and building the
profile's models costs ~50 ms, most of a `rocport scan --profile vllm` start. `scan_view` accepts a
document only when every value has exactly the type the `Profile` model declares (no coercion, no
unknown key, every required key present): such a document is one the model accepts unchanged. For
anything else (a missing file, malformed YAML, a string where a number goes, a key the shape does not
know) it answers None and the caller loads the profile with pydantic, so every error keeps its wording.
tests/agent/test_profile_shape.py holds PROFILE_SHAPE to the pydantic models, field by field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

PROFILE_DIR = Path(__file__).parent / "profiles"
"""Where the bundled profiles live (agent.profiles.PROFILE_DIR, named here without importing it)."""

Shape = Any
"""A type name ("str", "bool", "int", "float", "scalar"), ("int>=", n), ("optional", shape),
("list", shape), ("dict", shape) (string keys), ("literal", values), or a model: {field: (shape, required)}."""

_ROCM_SOURCES = {
    "cmake": (("optional", "str"), False),
    "variables": (("dict", "str"), False),
    "cuda_variables": (("dict", "str"), False),
    "setup_py": (("optional", "str"), False),
}
_TUNE = {
    "gpus": (("int>=", 1), False),
    "parallel": (
        {
            "tp": (("list", "int"), True),
            "ep": (("literal", ("none", "tp", "world")), False),
            "ep_arg": (("optional", "str"), False),
        },
        True,
    ),
    "switches": (
        (
            "list",
            {
                "name": ("str", True),
                "values": (("list", "scalar"), True),
                "arg": (("optional", "str"), False),
                "env": (("dict", "str"), False),
                "doc": ("str", False),
            },
        ),
        False,
    ),
    "base_args": ("str", False),
    "moe_tuning": (
        (
            "optional",
            {
                "command": ("str", True),
                "config_dir": ("str", True),
                "config_dir_probe": (("optional", "str"), False),
                "output_glob": ("str", False),
                "dtype": ("str", False),
                "timeout_s": ("float", False),
                "doc": ("str", False),
            },
        ),
        False,
    ),
}
_OPT_STR = (("optional", "str"), False)
PROFILE_SHAPE: dict[str, tuple[Shape, bool]] = {
    "name": ("str", True),
    "description": ("str", False),
    "repo_url": _OPT_STR,
    "default_ref": ("str", False),
    "hipify_at_build": ("bool", False),
    "build": ({"rocm": ("str", True), "cuda": _OPT_STR, "timeout_s": ("float", False)}, True),
    "unit": (
        (
            "optional",
            {
                "hip": ("str", True),
                "cuda": _OPT_STR,
                "cuda_preprocess": _OPT_STR,
                "sources": (("list", "str"), False),
            },
        ),
        False,
    ),
    "launch": (
        {
            "command": ("str", True),
            "health_path": ("str", False),
            "models_path": ("str", False),
            "ready_timeout_s": ("float", False),
            "smoke_prompt": ("str", False),
        },
        True,
    ),
    "expected_params": _OPT_STR,
    "meta_params": _OPT_STR,
    "load_check": _OPT_STR,
    "serve_needs_gpu": ("bool", False),
    "model_loaders": (("list", "str"), False),
    "quant_configs": (("list", "str"), False),
    "images": (("list", "str"), False),
    "rocm_sources": (("optional", _ROCM_SOURCES), False),
    "install": _OPT_STR,
    "env": (("dict", "str"), False),
    "tune": (("optional", _TUNE), False),
}
"""The `Profile` model's fields: (shape, required)."""

_EXACT = {"str": (str,), "bool": (bool,), "int": (int,), "scalar": (str, int, float, bool)}
_FLOAT_EXACT_INT = 2**53
"""An int a float field takes as the same number (pydantic converts it; past 2**53 it may round)."""


def fits(value: Any, shape: Shape) -> bool:
    """Whether `value` has exactly `shape`'s type: the model would take it as it is."""
    if isinstance(shape, dict):
        return (
            type(value) is dict
            and all(type(k) is str and k in shape and fits(v, shape[k][0]) for k, v in value.items())
            and all(k in value for k, (_, required) in shape.items() if required)
        )
    if isinstance(shape, str):
        if shape == "float":
            return type(value) is float or (type(value) is int and abs(value) <= _FLOAT_EXACT_INT)
        return type(value) in _EXACT[shape]
    kind, inner = shape
    if kind == "optional":
        return value is None or fits(value, inner)
    if kind == "list":
        return type(value) is list and all(fits(v, inner) for v in value)
    if kind == "dict":
        return type(value) is dict and all(type(k) is str and fits(v, inner) for k, v in value.items())
    if kind == "literal":
        return type(value) is str and value in inner
    if kind == "int>=":
        return type(value) is int and value >= inner
    raise ValueError(f"unknown shape {shape!r}")


class RocmSourcesView:
    """A profile's `rocm_sources`, as tools.scan.rocm_build reads it (defaults as in RocmSources).
    A plain class: a dataclass costs ~0.4 ms to create, a noticeable part of a plain scan's start."""

    __slots__ = ("cmake", "cuda_variables", "setup_py", "variables")

    def __init__(
        self,
        cmake: str | None = None,
        variables: dict[str, str] | None = None,
        cuda_variables: dict[str, str] | None = None,
        setup_py: str | None = None,
    ):
        self.cmake = cmake
        self.variables = variables or {}
        self.cuda_variables = cuda_variables or {}
        self.setup_py = setup_py


class ScanView(NamedTuple):
    """The part of a profile a scan reads (tools.scan.ScanProfile)."""

    name: str
    hipify_at_build: bool
    rocm_sources: RocmSourcesView | None


def profile_path(name_or_path: str) -> Path:
    """The file `load_profile` reads for `name_or_path`: a bundled profile by name, else the path."""
    path = Path(name_or_path)
    return PROFILE_DIR / f"{name_or_path}.yaml" if not path.suffix else path


def scan_view(name_or_path: str) -> ScanView | None:
    """The scan's part of a profile whose YAML plainly fits the model; None: load it with pydantic."""
    from agent.yamlconf import read_yaml

    path = profile_path(name_or_path)
    if not path.is_file():
        return None
    try:
        data, _ = read_yaml(path)
    except ValueError:  # unreadable or malformed: load_profile says so, in its own words
        return None
    try:
        if not fits(data, PROFILE_SHAPE):
            return None
    except RecursionError:  # a YAML alias inside itself: pydantic names the cycle
        return None
    sources = data.get("rocm_sources")
    return ScanView(
        data["name"],
        data.get("hipify_at_build", False),
        RocmSourcesView(**sources) if sources is not None else None,
    )
