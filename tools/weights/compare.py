"""Checkpoint tensor names vs the framework's expected parameters: missing, unexpected, mismatched.

Raw names are compared (no framework name mapping applied); differences are grouped by submodule
with layer and expert indices collapsed (`model.layers.*.mlp.experts.*`), except a layer index at or
past `num_hidden_layers`, which is an MTP/nextn head and stays distinct (`model.layers.61.*`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sandboxes.base import Sandbox
from tools.weights.checkpoint import Checkpoint, CheckpointError

# safetensors dtype codes -> torch-style names, so "BF16" and "torch.bfloat16" compare equal.
_DTYPES = {
    "BF16": "bfloat16",
    "F16": "float16",
    "F32": "float32",
    "F64": "float64",
    "I8": "int8",
    "U8": "uint8",
    "I16": "int16",
    "I32": "int32",
    "I64": "int64",
    "BOOL": "bool",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
    "F8_E8M0": "float8_e8m0fnu",
}
EXAMPLES_PER_GROUP = 3


def normalize_dtype(dtype: str | None) -> str | None:
    """One spelling per dtype: safetensors codes and `torch.` prefixes map to torch names."""
    if not dtype:
        return None
    return _DTYPES.get(dtype, dtype.removeprefix("torch.").lower())


def parse_expected(data: object, where: str) -> dict[str, dict[str, Any]]:
    """Expected params from JSON data: {name: {"shape", "dtype"}} or a plain list of names."""
    if isinstance(data, list) and all(isinstance(n, str) for n in data):
        return {n: {} for n in data}
    if isinstance(data, dict) and all(isinstance(v, dict) for v in data.values()):
        return {n: dict(v) for n, v in data.items()}
    raise CheckpointError(
        f"{where}: expected parameters must be a JSON list of names or "
        f'{{name: {{"shape": [...], "dtype": "..."}}}}'
    )


def load_expected(path: str | Path) -> dict[str, dict[str, Any]]:
    """Read an expected-parameters JSON file (the output of a profile's expected_params hook)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read ({exc.strerror}); check the path") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(
            f"{path}: not valid JSON ({exc}); regenerate it with the profile's expected_params command"
        ) from exc
    return parse_expected(data, str(path))


def expected_from_hook(
    sandbox: Sandbox, command: str, model_path: str | Path, timeout: float = 600
) -> dict[str, dict[str, Any]]:
    """Run a profile's expected_params command ({model_path} filled in) in a sandbox; parse its JSON."""
    result = sandbox.run(command.format(model_path=model_path), timeout=timeout)
    if not result.ok:
        last = (result.output.strip().splitlines() or ["no output"])[-1]
        raise CheckpointError(
            f"the expected_params command failed (exit {result.returncode}): {last}; "
            f"run it by hand: {command.format(model_path=model_path)}"
        )
    try:
        return parse_expected(json.loads(result.stdout), "the expected_params command's output")
    except json.JSONDecodeError as exc:
        raise CheckpointError(
            f"the expected_params command printed no JSON ({exc}); it must print "
            f"{{name: {{shape, dtype}}}} on stdout"
        ) from exc


def submodule_group(name: str, mtp_from: int | None = None) -> str:
    """The submodule a tensor belongs to, indices collapsed: `model.layers.*.mlp.shared_experts`."""
    parts = name.split(".")
    out = []
    for i, part in enumerate(parts):
        after_layers = i > 0 and parts[i - 1] == "layers"
        if part.isdigit() and not (after_layers and mtp_from is not None and int(part) >= mtp_from):
            out.append("*")
        else:
            out.append(part)
    out = out[:-1] or out  # drop the parameter attribute (weight, bias, weight_scale_inv)
    if len(out) >= 4:  # and the leaf module (q_proj, down_proj) inside a deep submodule
        out = out[:-1]
    return ".".join(out)


@dataclass
class Mismatch:
    """A tensor present on both sides whose shape or dtype differs."""

    name: str
    checkpoint_shape: list[int] | None
    expected_shape: list[int] | None
    checkpoint_dtype: str | None
    expected_dtype: str | None


@dataclass
class GroupDiff:
    """The differences inside one submodule group."""

    group: str
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    mismatched: list[Mismatch] = field(default_factory=list)


@dataclass
class WeightReport:
    """Raw-name comparison of a checkpoint with the framework's expected parameters."""

    checkpoint: str
    num_checkpoint: int
    num_expected: int
    matched: int
    missing: list[str]
    unexpected: list[str]
    mismatched: list[Mismatch]
    groups: list[GroupDiff]
    shapes_checked: bool

    @property
    def ok(self) -> bool:
        return not (self.missing or self.unexpected or self.mismatched)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def _mismatch(name: str, ckpt: Checkpoint, spec: dict[str, Any]) -> Mismatch | None:
    info = ckpt.tensors[name]
    want_shape, want_dtype = spec.get("shape"), normalize_dtype(spec.get("dtype"))
    have_dtype = normalize_dtype(info.dtype)
    bad_shape = want_shape is not None and info.shape is not None and list(want_shape) != info.shape
    bad_dtype = want_dtype is not None and have_dtype is not None and want_dtype != have_dtype
    if not (bad_shape or bad_dtype):
        return None
    return Mismatch(
        name, info.shape, list(want_shape) if want_shape is not None else None, have_dtype, want_dtype
    )


def compare(ckpt: Checkpoint, expected: dict[str, dict[str, Any]]) -> WeightReport:
    """Missing / unexpected / shape-or-dtype mismatches, grouped by submodule."""
    have, want = set(ckpt.tensors), set(expected)
    missing, unexpected = sorted(want - have), sorted(have - want)
    mismatched = [m for n in sorted(have & want) if (m := _mismatch(n, ckpt, expected[n]))]
    mtp = ckpt.num_hidden_layers
    groups: dict[str, GroupDiff] = defaultdict(lambda: GroupDiff(""))
    for bucket, names in (("missing", missing), ("unexpected", unexpected)):
        for n in names:
            g = groups[submodule_group(n, mtp)]
            getattr(g, bucket).append(n)
    for m in mismatched:
        groups[submodule_group(m.name, mtp)].mismatched.append(m)
    for key, g in groups.items():
        g.group = key
    return WeightReport(
        str(ckpt.root),
        len(have),
        len(want),
        len(have & want),
        missing,
        unexpected,
        mismatched,
        [groups[k] for k in sorted(groups)],
        ckpt.has_shapes,
    )
