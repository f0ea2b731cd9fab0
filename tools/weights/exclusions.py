"""A quantization config's exclusion list, read from config.json / hf_quant_config.json, matched the way
frameworks match it: against the module prefix they register, with fused layers checked per shard
(`gate_up_proj` as `gate_proj` and `up_proj`), as sglang's and vLLM's `is_layer_skipped` do.

Formats: Quark `exclude` (fnmatch globs), compressed-tensors `ignore` (exact names or `re:` patterns),
ModelOpt `exclude_modules` (fnmatch globs), FP8/GPTQ/AWQ `ignored_layers` / `modules_to_not_convert`
(sglang's Fp8Config keeps each entry with and without `model.` and matches on dotted-path boundaries).
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.weights.prefix_rules import PrefixRule, apply_rules


@dataclass
class Exclusions:
    """The exclusion entries and how the framework matches them."""

    method: str
    key: str
    entries: list[str]
    style: str
    """glob | exact_or_re | module_path"""

    def excludes(self, prefix: str) -> str | None:
        """The first entry that keeps `prefix` unquantized, or None."""
        for entry in self.entries:
            if self.style == "module_path" and _path_match(entry, prefix):
                return entry
            if self.style == "glob" and fnmatch.fnmatchcase(prefix, entry):
                return entry
            if self.style == "exact_or_re":
                if entry.startswith("re:") and re.match(entry[3:], prefix):
                    return entry
                if entry == prefix or prefix.endswith("." + entry):
                    return entry
        return None


_KEYS = (
    ("exclude", "glob"),
    ("ignore", "exact_or_re"),
    ("exclude_modules", "glob"),
    ("ignored_layers", "module_path"),
    ("modules_to_not_convert", "module_path"),
)


def _path_match(entry: str, prefix: str) -> bool:
    """Dotted-boundary match of an entry taken with and without its `model.` head (sglang Fp8Config)."""
    base = entry.rstrip(".").removeprefix("model.")
    dotted = "." + prefix.rstrip(".") + "."
    return any(f".{e}." in dotted for e in (base, "model." + base))


def read_exclusions(root: Path, config: dict[str, Any]) -> Exclusions | None:
    """The checkpoint's exclusion list, or None when it is not quantized or lists nothing."""
    sources = [config.get("quantization_config") or {}]
    hf_quant = Path(root) / "hf_quant_config.json"
    if hf_quant.is_file():
        sources.append(json.loads(hf_quant.read_text(encoding="utf-8")).get("quantization") or {})
    for qc in sources:
        for key, style in _KEYS:
            if isinstance(qc.get(key), list) and qc[key]:
                method = str(qc.get("quant_method") or qc.get("quant_algo") or "modelopt")
                return Exclusions(method, key, [str(e) for e in qc[key]], style)
    return None


@dataclass
class ExclusionMiss:
    """A module the checkpoint keeps unquantized that the framework will build quantized."""

    checkpoint_module: str
    entry: str
    framework_prefix: str
    """The prefix the framework matches against the list (fused layers: the shard's prefix)."""


def framework_prefix(checkpoint_tensor: str, target: str, mappings: list[tuple[str, str]]) -> str:
    """The module prefix the framework checks for a tensor the loader renamed to `target`."""
    ckpt_module, module = checkpoint_tensor.rsplit(".", 1)[0], target.rsplit(".", 1)[0]
    for param, shard in mappings:
        if ckpt_module.endswith("." + shard) and module.endswith("." + param):
            return module[: -len(param)] + shard
    return module


def exclusion_misses(
    excl: Exclusions, renamed: dict[str, str], mappings: list[tuple[str, str]]
) -> list[ExclusionMiss]:
    """Modules the list excludes under their checkpoint name but not under the name the framework checks."""
    misses, seen = [], set()
    for tensor, target in renamed.items():
        module = tensor.rsplit(".", 1)[0]
        if module in seen or ("experts." in module and ".shared_experts." not in module + "."):
            continue  # routed experts are excluded (or not) per layer by the MoE method
        seen.add(module)
        entry = excl.excludes(module)
        if entry is None:
            continue
        prefix = framework_prefix(tensor, target, mappings)
        if excl.excludes(prefix) is None:
            misses.append(ExclusionMiss(module, entry, prefix))
    return misses


EXCLUSION_KEYS = ("modules_to_not_convert", "ignored_layers", "exclude_modules")
"""The plain exclusion lists a rule can extend with the registered names (FP8/GPTQ/AWQ, ModelOpt)."""


def excluded_modules(config: dict[str, Any]) -> dict[str, list[str]]:
    """{key: names} of the plain (non-pattern) exclusion lists in config.json's quantization_config."""
    qc = config.get("quantization_config") or {}
    out = {}
    for key in EXCLUSION_KEYS:
        names = qc.get(key)
        if isinstance(names, list):
            out[key] = [n for n in names if isinstance(n, str) and "*" not in n and not n.startswith("re:")]
    return {k: v for k, v in out.items() if v}


def registered_modules(expected: dict[str, Any]) -> set[str]:
    """Every module prefix that owns an expected parameter (`a.b.c.weight` -> a, a.b, a.b.c)."""
    out: set[str] = set()
    for name in expected:
        parts = name.split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return out


def remap_module(module: str, rules: list[PrefixRule]) -> str:
    """A module name through the tensor-name rules (a module is a prefix of its tensors' names)."""
    return apply_rules(module + ".", rules)[:-1]
