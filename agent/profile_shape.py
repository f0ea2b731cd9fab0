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

import marshal
import os
from collections import namedtuple

from tools.digests import sha256
from tools.files import path_suffix

PROFILE_DIR = os.path.join(os.path.dirname(__file__), "profiles")
"""Where the bundled profiles live (agent.profiles.PROFILE_DIR, named here without importing it or
pathlib: ~4 ms of a scan's start)."""

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from typing import Any, NamedTuple

    Shape = Any
    """A type name ("str", "bool", "int", "float", "scalar"), ("int>=", n), ("optional", shape),
    ("list", shape), ("dict", shape) (string keys), ("literal", values), or a model: {field: (shape,
    required)}."""

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


if TYPE_CHECKING:

    class _ScanViewFields(NamedTuple):
        name: str
        hipify_at_build: bool
        rocm_sources: RocmSourcesView | None

else:
    _ScanViewFields = namedtuple("ScanView", ("name", "hipify_at_build", "rocm_sources"))  # noqa: PYI024


class ScanView(_ScanViewFields):
    """The part of a profile a scan reads (tools.scan.ScanProfile)."""

    __slots__ = ()


def profile_path(name_or_path: str) -> str:
    """The file `load_profile` reads for `name_or_path`: a bundled profile by name, else the path."""
    if path_suffix(name_or_path):
        return name_or_path
    return os.path.join(PROFILE_DIR, f"{name_or_path}.yaml")


def scan_view(name_or_path: str) -> ScanView | None:
    """The scan's part of a profile whose YAML plainly fits the model; None: load it with pydantic."""
    path = profile_path(name_or_path)
    if not os.path.isfile(path):
        return None
    data = _document(path, memo=os.path.dirname(path) == PROFILE_DIR)
    if data is None:  # unreadable or malformed: load_profile says so, in its own words
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


def _document(path: str, *, memo: bool) -> Any:
    """The profile's YAML document, or None when it cannot be read or parsed. A bundled profile
    (`memo`) is read back from its parse memo when the file holds exactly the bytes the memo was
    parsed from: importing PyYAML and parsing cost ~9 ms of a ~120 ms `rocport scan --profile vllm`.
    Only bundled ones: a memo per path a user ever passed would pile up."""
    try:
        with open(path, "rb") as stream:
            raw = stream.read()
    except OSError:
        return None
    kept_at = _memo_path(path) if memo else None
    if kept_at is not None:
        try:
            # rocport's own memo in the user's private cache directory, written below, never downloaded
            with open(kept_at, "rb") as stream:
                kept_raw, kept = marshal.loads(stream.read())  # noqa: S302
            if kept_raw == raw:
                return kept
        except (OSError, EOFError, ValueError, TypeError):  # none yet, or not one of ours: parse
            pass
    from agent.yamlconf import read_yaml

    try:
        data, _ = read_yaml(path)
    except ValueError:
        return None
    if kept_at is not None:
        _remember(kept_at, raw, data)
    return data


def _memo_path(path: str) -> str:
    """Where the parse of a bundled profile is kept: beside the scan's result cache, per profile and
    installation (two checkouts may bundle different versions of it)."""
    from tools.scan.cache import default_cache_dir

    install = sha256(os.path.abspath(path).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    stem = os.path.basename(path).rpartition(".")[0]  # a bundled profile's name: `<name>.yaml`
    return os.path.join(os.path.dirname(default_cache_dir()), "profiles", f"{stem}-{install}.marshal")


def _remember(memo: str, raw: bytes, data: Any) -> None:
    """Keep (bytes, document) in the memo; a document marshal cannot hold (a YAML timestamp) or a
    memo that cannot be written is simply not kept: the next read parses again."""
    try:
        blob = marshal.dumps((raw, data))
    except ValueError:
        return
    try:
        os.makedirs(os.path.dirname(memo), exist_ok=True, mode=0o700)
        partial = f"{memo}.{os.getpid()}"
        with open(partial, "wb") as stream:
            stream.write(blob)
        os.replace(partial, memo)  # whole or not at all, whichever process writes last
    except OSError:
        return
