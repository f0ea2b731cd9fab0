"""The repo's own warp helpers, learned from its headers and reused before rocport writes new macros.

vLLM's `core/cuda_compat.h` defines `VLLM_SHFL_XOR_SYNC_WIDTH(var, lane_mask, width)` as
`__shfl_xor_sync(uint32_t(-1), var, lane_mask, width)` under `#ifndef USE_ROCM` and as
`__shfl_xor(var, lane_mask, width)` in the `#else`; sglang's `SGLANG_SHFL_XOR_SYNC(mask, var, lane_mask)`
passes the mask through. A helper is learned when the repo defines it for both builds and its two
bodies are the CUDA intrinsic and its HIP counterpart over the same parameters (so what the ROCm side
does is known, not guessed): the mask a parameter or all lanes, the width the same parameter on both
sides or absent on both (the hardware warp). A call site `__shfl_xor_sync(0xffffffff, v, m)` becomes
`VLLM_SHFL_XOR_SYNC(v, m)`; on CUDA that expands to the same call with equal-valued arguments, which the
identity proof checks after preprocessing (tools.cpp.equivalence).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.patch.units import HEADER_EXTS, source_files
from agent.proposers.rules.base import Workspace
from agent.proposers.rules.cpp import line_platforms
from tools.cpp.equivalence import is_full_mask, split_args, tokens, unparen

# CUDA intrinsic -> (HIP counterpart, CUDA argument slots in order). `mask` is dropped on HIP.
COUNTERPARTS = {
    "__shfl_sync": ("__shfl", ("mask", "var", "lane", "width")),
    "__shfl_xor_sync": ("__shfl_xor", ("mask", "var", "lane", "width")),
    "__shfl_up_sync": ("__shfl_up", ("mask", "var", "lane", "width")),
    "__shfl_down_sync": ("__shfl_down", ("mask", "var", "lane", "width")),
    "__ldg": ("*", ("ptr",)),
}
_DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)\(([^)]*)\)\s*(.*)$")


@dataclass(frozen=True)
class Helper:
    """A function-like macro of the repo wrapping one warp intrinsic on both builds."""

    name: str
    header: str
    intrinsic: str
    params: tuple[str, ...]
    slots: tuple[str, ...]
    """Per parameter, the intrinsic slot it fills ('var', 'lane', 'width', 'mask', 'ptr')."""
    full_mask: bool
    """True when the CUDA body passes all lanes itself (no mask parameter)."""

    def call(self, values: dict[str, str]) -> str:
        """`NAME(args)` filling each parameter from the call site's slot values."""
        return f"{self.name}({', '.join(values[s] for s in self.slots)})"


def _defines(text: str) -> list[tuple[int, str, list[str], str]]:
    """(line index, name, params, body) of the function-like #defines, continuation lines joined."""
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        start, joined = i, lines[i]
        while joined.endswith("\\") and i + 1 < len(lines):
            i += 1
            joined = joined[:-1] + " " + lines[i]
        m = _DEFINE.match(joined)
        if m:
            out.append((start, m.group(1), [p.strip() for p in m.group(2).split(",")], m.group(3).strip()))
        i += 1
    return out


def _call_of(body: str) -> tuple[str, list[list[str]]] | None:
    """(function, arguments) when a macro body is exactly one call (or `*(p)`), parentheses aside."""
    toks = unparen(tokens(body))
    if toks[:1] == ["*"]:
        return "*", [unparen(toks[1:])]
    got = split_args(toks, 1) if len(toks) > 2 and toks[1] == "(" else None
    if got is None or got[1] != len(toks):
        return None
    return toks[0], [unparen(a) for a in got[0]]


def _slots(params: list[str], args: list[list[str]], names: tuple[str, ...]) -> dict[str, str] | None:
    """Slot -> parameter (or 'FULL' for an all-lanes mask constant); None when an argument is neither."""
    out: dict[str, str] = {}
    for slot, arg in zip(names, args, strict=False):
        if len(arg) == 1 and arg[0] in params:
            out[slot] = arg[0]
        elif slot == "mask" and is_full_mask(arg):
            out[slot] = "FULL"
        else:
            return None
    return out


def _learn(name: str, header: str, params: list[str], cuda: str, rocm: str) -> Helper | None:
    cuda_call, rocm_call = _call_of(cuda), _call_of(rocm)
    if cuda_call is None or rocm_call is None or cuda_call[0] not in COUNTERPARTS:
        return None
    hip, names = COUNTERPARTS[cuda_call[0]]
    if rocm_call[0] not in (hip, cuda_call[0] if hip == "*" else hip):
        return None
    on_cuda = _slots(params, cuda_call[1], names)
    rocm_names = tuple(n for n in names if n != "mask")
    on_rocm = _slots(params, rocm_call[1], rocm_names)
    if on_cuda is None or on_rocm is None or len(cuda_call[1]) - ("mask" in names) != len(rocm_call[1]):
        return None
    if any(on_cuda.get(s) != p for s, p in on_rocm.items()):
        return None  # the ROCm body does something else with the arguments
    by_param = {p: s for s, p in on_cuda.items() if p != "FULL"}
    if set(by_param) != set(params):
        return None
    return Helper(
        name=name,
        header=header,
        intrinsic=cuda_call[0],
        params=tuple(params),
        slots=tuple(by_param[p] for p in params),
        full_mask=on_cuda.get("mask") == "FULL",
    )


def learn_helpers(ws: Workspace) -> list[Helper]:
    """Every warp helper the repo's headers define for both builds (see the module doc)."""
    found: list[Helper] = []
    for rel in source_files(ws.root):
        text = (ws.read(rel) or "") if rel.endswith(HEADER_EXTS) else ""
        if "#" not in text or not any(k in text for k in COUNTERPARTS):
            continue
        where = line_platforms(text.splitlines(keepends=True))
        bodies: dict[str, dict[str, tuple[list[str], str]]] = {}
        for line, name, params, body in _defines(text):
            if where[line] in ("cuda", "rocm"):
                bodies.setdefault(name, {})[where[line]] = (params, body)
        for name, sides in bodies.items():
            if set(sides) == {"cuda", "rocm"} and sides["cuda"][0] == sides["rocm"][0]:
                helper = _learn(name, rel, sides["cuda"][0], sides["cuda"][1], sides["rocm"][1])
                if helper is not None:
                    found.append(helper)
    return found


def helper_call(helpers: list[Helper], intrinsic: str, args: list[str], lanes32: bool) -> Helper | None:
    """The repo helper that does what `intrinsic(args)` does on CUDA and what the kernel needs on ROCm
    (width 32 for a kernel written for 32-lane warps, the call's own width, else the hardware warp)."""
    slots = COUNTERPARTS[intrinsic][1] if intrinsic in COUNTERPARTS else ()
    if len(args) not in (len(slots), len(slots) - 1) or (len(slots) == 1 and len(args) != 1):
        return None
    values = dict(zip(slots, args, strict=False))
    want_width = "width" in slots and ("width" in values or lanes32)
    for h in sorted((h for h in helpers if h.intrinsic == intrinsic), key=lambda h: len(h.params)):
        if h.full_mask and not is_full_mask(tokens(values.get("mask", ""))):
            continue
        if ("width" in h.slots) == want_width:
            return h
    return None


def _slot_values(intrinsic: str, args: list[str], lanes32: bool) -> dict[str, str]:
    """Slot -> argument text of a call, with width '32' added for a 32-lane kernel that relied on the default."""
    values = dict(zip(COUNTERPARTS[intrinsic][1], args, strict=False))
    if "width" in COUNTERPARTS[intrinsic][1] and "width" not in values and lanes32:
        values["width"] = "32"
    return values


def _source_args(text: str, open_paren: int) -> tuple[list[str], int] | None:
    """The argument texts of the call whose '(' is at `open_paren`, and the offset after its ')'."""
    depth, start = 0, open_paren + 1
    args: list[str] = []
    for i in range(open_paren, len(text)):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                last = text[start:i].strip()
                return ([*args, last] if last or args else args), i + 1
        elif ch == "," and depth == 1:
            args.append(text[start:i].strip())
            start = i + 1
    return None


def reuse_helpers(text: str, helpers: list[Helper], lanes32: bool) -> tuple[str, list[str], set[str]]:
    """Calls that both builds compile rewritten to the repo's helpers where one fits: the new text, the
    rewrites done ('__shfl_xor_sync -> VLLM_SHFL_XOR_SYNC') and the headers defining the helpers used."""
    if not helpers:
        return text, [], set()
    where = line_platforms(text.splitlines(keepends=True))
    call = re.compile(r"\b(" + "|".join(sorted({h.intrinsic for h in helpers})) + r")\s*\(")
    out, done, headers, last = [], [], set(), 0
    for m in call.finditer(text):
        if m.start() < last or where[text.count("\n", 0, m.start())] != "both":
            continue
        got = _source_args(text, m.end() - 1)
        helper = got and helper_call(helpers, m.group(1), got[0], lanes32)
        if not got or not helper:
            continue
        out += [text[last : m.start()], helper.call(_slot_values(m.group(1), got[0], lanes32))]
        last = got[1]
        done.append(f"{m.group(1)} -> {helper.name}")
        headers.add(helper.header)
    return "".join(out) + text[last:], done, headers
