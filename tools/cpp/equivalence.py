"""Equal-valued spellings of warp-intrinsic arguments, for the CUDA identity proof.

A repo's own helper macro (vLLM's `VLLM_SHFL_XOR_SYNC_WIDTH(var, lane_mask, width)`, sglang's
`SGLANG_SHFL_XOR_SYNC(mask, var, lane_mask)`) expands on CUDA to the intrinsic the kernel called, but
spelled differently: `uint32_t(-1)` for `0xffffffff`, `(var)` for `var`, an explicit width 32 where the
call relied on the default (`warpSize`, 32 on every NVIDIA GPU). `normalize_warp_calls` rewrites the
arguments of the CUDA warp intrinsics in a token stream to one canonical spelling *only* where the value
is provably the same, so two preprocessor outputs that compare equal after it compile to the same calls.
Anything it cannot evaluate is left as written (the comparison then fails: conservative).
"""

from __future__ import annotations

import re

# C/C++ tokens, string and char literals whole, so spacing and line markers do not matter.
TOKEN = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|\w+|[^\s\w]')
FULL_MASK = "0xffffffff"
CUDA_WARP = "32"
# intrinsic -> index of its optional width argument (None: it has none)
MASKED = {
    "__shfl_sync": 3,
    "__shfl_xor_sync": 3,
    "__shfl_up_sync": 3,
    "__shfl_down_sync": 3,
    "__ballot_sync": None,
    "__any_sync": None,
    "__all_sync": None,
}
# Integer types of at least 32 bits: a cast to one keeps the low 32 bits, all a CUDA mask has.
_WIDE_TYPES = {
    ("unsigned",),
    ("unsigned", "int"),
    ("int",),
    ("uint32_t",),
    ("int32_t",),
    ("unsigned", "long"),
    ("long",),
    ("unsigned", "long", "long"),
    ("long", "long"),
    ("uint64_t",),
    ("int64_t",),
    ("size_t",),
}
_INT = re.compile(r"(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)([uU]?[lL]{0,2}|[lL]{1,2}[uU])")
_OPEN, _CLOSE = "([{", ")]}"


def tokens(text: str) -> list[str]:
    """The C token stream of `text` (whitespace dropped)."""
    return TOKEN.findall(text)


LINE_MARKER = re.compile(r"^\s*#\s*(?:line\s+)?\d+(?:\s.*)?$", re.MULTILINE)


def cuda_tokens(preprocessed: str) -> list[str]:
    """The token stream of preprocessor output, line markers and whitespace dropped (what the CUDA
    identity proof compares)."""
    return tokens(LINE_MARKER.sub("", preprocessed))


def split_args(toks: list[str], open_at: int) -> tuple[list[list[str]], int] | None:
    """Top-level arguments of the call whose '(' is toks[open_at], and the index after its ')'."""
    depth = 0
    args: list[list[str]] = []
    cur: list[str] = []
    for i in range(open_at, len(toks)):
        t = toks[i]
        if t in _OPEN:
            depth += 1
            if depth == 1:
                continue
        elif t in _CLOSE:
            depth -= 1
            if depth == 0:
                if cur or args:
                    args.append(cur)
                return args, i + 1
        elif t == "," and depth == 1:
            args.append(cur)
            cur = []
            continue
        cur.append(t)
    return None


def unparen(arg: list[str]) -> list[str]:
    """`( x )` -> `x` while the parentheses wrap the whole argument and hold no top-level comma."""
    while len(arg) >= 2 and arg[0] == "(":
        inner = split_args(arg, 0)
        if inner is None or inner[1] != len(arg) or len(inner[0]) != 1:
            break
        arg = inner[0][0]
    return arg


def _cast(toks: list[str], i: int) -> tuple[tuple[str, ...], int] | None:
    """A wide integer type name starting at toks[i], and the index after it."""
    for n in (3, 2, 1):
        if tuple(toks[i : i + n]) in _WIDE_TYPES:
            return tuple(toks[i : i + n]), i + n
    return None


def _value(toks: list[str], i: int) -> tuple[int, int] | None:
    """(value mod 2**32, next index) of the unary integer expression at toks[i]; None when not one."""
    if i >= len(toks):
        return None
    t = toks[i]
    if t in ("-", "~", "+"):
        inner = _value(toks, i + 1)
        if inner is None:
            return None
        v = {"-": -inner[0], "~": ~inner[0], "+": inner[0]}[t]
        return v & 0xFFFFFFFF, inner[1]
    if t == "static_cast" and toks[i + 1 : i + 2] == ["<"]:
        typ = _cast(toks, i + 2)
        if typ is None or toks[typ[1] : typ[1] + 2] != [">", "("]:
            return None
        return _paren_value(toks, typ[1] + 1)
    typ = _cast(toks, i)
    if typ is not None and toks[typ[1] : typ[1] + 1] == ["("]:  # functional cast: uint32_t(-1)
        return _paren_value(toks, typ[1])
    if t == "(":
        typ = _cast(toks, i + 1)
        if typ is not None and toks[typ[1] : typ[1] + 1] == [")"]:  # C cast: (unsigned)-1
            return _value(toks, typ[1] + 1)
        return _paren_value(toks, i)
    m = _INT.fullmatch(t)
    if m is None:
        return None
    return int(m.group(1), 0 if not re.fullmatch(r"0[0-7]+", m.group(1)) else 8) & 0xFFFFFFFF, i + 1


def _paren_value(toks: list[str], open_at: int) -> tuple[int, int] | None:
    inner = _value(toks, open_at + 1)
    if inner is None or toks[inner[1] : inner[1] + 1] != [")"]:
        return None
    return inner[0], inner[1] + 1


def constant(arg: list[str]) -> int | None:
    """The value (mod 2**32) of an integer constant expression made of literals, unary -, ~ and casts
    to wide integer types; None for anything else (names, arithmetic)."""
    arg = unparen(arg)
    got = _value(arg, 0)
    return got[0] if got is not None and got[1] == len(arg) else None


def is_full_mask(arg: list[str]) -> bool:
    """True when a mask argument is provably all 32 lanes (`0xffffffff`, `uint32_t(-1)`, `~0u`...)."""
    return constant(arg) == 0xFFFFFFFF


def is_cuda_warp_width(arg: list[str]) -> bool:
    """True for a width equal to CUDA's warp (32, or `warpSize`, 32 on every NVIDIA GPU)."""
    arg = unparen(arg)
    return arg == ["warpSize"] or constant(arg) == 32


def _canonical_args(name: str, args: list[list[str]]) -> list[list[str]]:
    args = [unparen(a) for a in args]
    if args and is_full_mask(args[0]):
        args[0] = [FULL_MASK]
    width_at = MASKED[name]
    if width_at is not None:
        if len(args) == width_at:  # the default width: warpSize
            args.append([CUDA_WARP])
        elif len(args) == width_at + 1 and is_cuda_warp_width(args[width_at]):
            args[width_at] = [CUDA_WARP]
    return args


def normalize_warp_calls(toks: list[str]) -> tuple[list[str], int]:
    """`toks` with every CUDA warp-intrinsic call's arguments in canonical spelling (see module doc),
    and how many calls were rewritten."""
    out: list[str] = []
    i, changed = 0, 0
    while i < len(toks):
        t = toks[i]
        call = split_args(toks, i + 1) if t in MASKED and toks[i + 1 : i + 2] == ["("] else None
        if call is None:
            out.append(t)
            i += 1
            continue
        args, end = call
        canon = _canonical_args(t, args)
        new = [t, "("] + [tok for n, a in enumerate(canon) for tok in ([","] if n else []) + a] + [")"]
        changed += new != toks[i:end]
        out += new
        i = end
    return out, changed
