"""Which lines of a C/C++/CUDA file a ROCm build compiles: a walk over its preprocessor directives.

Every `#if/#ifdef/#ifndef/#elif/#else/#endif` is evaluated twice, under the ROCm configuration and
the CUDA one (see conditions.py), giving each stretch of the file a pair of liveness values
(True, False or None for unknown). A construct matters for the ROCm port when its ROCm liveness is
not False. So `#ifdef USE_ROCM <hip> #else <cuda> #endif` is handled: the `#else` is a CUDA-only
region, correctly guarded, and yields no finding. Only directive lines are visited, so the cost is
proportional to the number of directives, not lines.
"""

from __future__ import annotations

import bisect
import re
from collections import namedtuple

from tools.cpp.build_configs import BuildConfig, Macro
from tools.cpp.conditions import evaluate_named
from tools.cpp.source import compiled_directives
from tools.regex_memo import compile_pattern

# Anchored on '#' (not '^') so the engine can skip to candidates; the line start is checked after.
# The rest of the line, continuations included, as an unrolled loop: several times faster than a
# per-character alternation on long #define bodies.
_DIRECTIVE = compile_pattern(r"#[ \t]*(?P<name>[a-z_]+)(?P<rest>[^\n\\]*(?:\\(?:\r?\n|.)[^\n\\]*)*)")
_WALKED = frozenset(
    ("include", "if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif", "define", "undef")
)
"""Directives the walk reads; the rest (#pragma, #error, ...) are skipped before any other work."""
_INCLUDE = compile_pattern(r'\s*([<"])([^>"\n]+)[>"]')
_DEFINE = compile_pattern(r"\s*([A-Za-z_]\w*)(\()?(.*)", re.DOTALL)
_COMMENT = compile_pattern(r"//[^\n]*|/\*.*?(?:\*/|\Z)", re.DOTALL)

Tri = bool | None


def _and(a: Tri, b: Tri) -> Tri:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or(a: Tri, b: Tri) -> Tri:
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def _not(a: Tri) -> Tri:
    return None if a is None else not a


def _truth(value: int | None) -> Tri:
    return None if value is None else value != 0


def region_name(rocm: Tri, cuda: Tri) -> str:
    """'cuda_only' (ROCm never compiles it), 'rocm_only', 'common', or 'dead' (#if 0)."""
    if rocm is False:
        return "dead" if cuda is False else "cuda_only"
    return "rocm_only" if cuda is False else "common"


TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at run time (tools/__init__.py)
if TYPE_CHECKING:
    from typing import NamedTuple

    class _IncludeFields(NamedTuple):
        header: str
        """The header as written between <> or quotes."""
        angled: bool
        offset: int
        """Offset of the header name in the file."""
        rocm: Tri
        cuda: Tri

else:
    _IncludeFields = namedtuple("Include", ("header", "angled", "offset", "rocm", "cuda"))  # noqa: PYI024


class Include(_IncludeFields):
    """One `#include` (a named tuple: a tree walk makes thousands, and a dataclass costs more to build)."""

    __slots__ = ()


class Regions:
    """Liveness per stretch of the file: starts[i] begins a stretch with liveness states[i]. (A plain
    class: `rocport scan` builds each record class it imports at start-up, ~0.35 ms per dataclass.)"""

    __slots__ = ("condition_names", "defines", "exports", "includes", "starts", "states")

    def __init__(
        self,
        starts: list[int] | None = None,
        states: list[tuple[Tri, Tri]] | None = None,
        includes: list[Include] | None = None,
        defines: list[tuple[str, int]] | None = None,
        exports: dict[str, tuple[Macro, Macro]] | None = None,
        condition_names: set[str] | None = None,
    ) -> None:
        self.starts: list[int] = [0] if starts is None else starts
        self.states: list[tuple[Tri, Tri]] = [(True, True)] if states is None else states
        self.includes: list[Include] = [] if includes is None else includes
        self.defines: list[tuple[str, int]] = [] if defines is None else defines
        """(macro name, offset) of every #define, for compat-alias detection."""
        self.exports: dict[str, tuple[Macro, Macro]] = {} if exports is None else exports
        """What each macro the file #defines or #undefs is at its end, (ROCm, CUDA): what a file that
        includes it sees. A macro defined only in branches a build skips is undefined in that build."""
        self.condition_names: set[str] = set() if condition_names is None else condition_names
        """Identifiers the file's #if/#elif/#ifdef conditions read: a seed only matters if it names one."""

    def with_stretches(self, starts: list[int], states: list[tuple[Tri, Tri]]) -> Regions:
        """The same file's regions with other stretches (includes, defines and macros shared)."""
        return Regions(starts, states, self.includes, self.defines, self.exports, self.condition_names)

    def at(self, offset: int) -> tuple[Tri, Tri]:
        """(ROCm liveness, CUDA liveness) at an offset."""
        return self.states[bisect.bisect_right(self.starts, offset) - 1]

    def rocm_compiles(self, offset: int) -> bool:
        """False only where the ROCm build certainly skips the code."""
        return self.at(offset)[0] is not False

    def shared_code(self, offset: int) -> bool:
        """True where both builds may compile the code: neither a CUDA-only branch (guarded) nor a
        ROCm-only one (the project's own ROCm code, never a finding)."""
        rocm, cuda = self.at(offset)
        return rocm is not False and cuda is not False

    def any_rocm_only(self) -> bool:
        return any(region_name(*s) == "rocm_only" for s in self.states)


class _Frame:
    """One open #if group: whether its enclosing region is live (for ROCm, for CUDA), and whether a branch
    of this group has been taken so far."""

    __slots__ = ("parent", "taken")

    def __init__(self, parent: tuple[Tri, Tri], taken: tuple[Tri, Tri]) -> None:
        self.parent = parent
        self.taken = taken


def _clean(rest: str) -> str:
    if "\\" in rest:
        rest = rest.replace("\\\r\n", " ").replace("\\\n", " ")
    if "/" in rest:
        rest = _COMMENT.sub(" ", rest)
    return rest.strip()


def _starts_line(masked: str, pos: int) -> bool:
    start = masked.rfind("\n", 0, pos) + 1
    return start == pos or masked[start:pos].isspace()


_UNDEFINED, _UNKNOWN, _DEFINED_NO_VALUE = Macro(False), Macro(None), Macro(True, None)
"""Shared (Macro is frozen): a walk records ~2,000 macro states per csrc scan."""
Seed = dict[str, tuple[Macro, Macro]]
"""Macros visible before the file's first line (from the headers it includes): name -> (ROCm, CUDA)."""
_WORD = compile_pattern(r"[A-Za-z_]\w*")


class _Walker:
    def __init__(self, rocm: BuildConfig, cuda: BuildConfig, seed: Seed | None = None):
        self.configs = (rocm.copy(), cuda.copy())
        for name, pair in (seed or {}).items():
            for config, macro in zip(self.configs, pair, strict=True):
                config.macros.setdefault(name, macro)
        self.live: tuple[Tri, Tri] = (True, True)
        self.stack: list[_Frame] = []
        self.regions = Regions()
        self.touched: set[str] = set()

    def cond(self, expr: str, names: list[str]) -> tuple[Tri, Tri]:
        rocm, cuda = self.configs
        return _truth(evaluate_named(expr, names, rocm)), _truth(evaluate_named(expr, names, cuda))

    def defined(self, name: str, negate: bool) -> tuple[Tri, Tri]:
        out = []
        for c in self.configs:
            d = c.lookup(name).defined
            out.append(_not(d) if negate else d)
        return out[0], out[1]

    def open(self, cond: tuple[Tri, Tri]) -> None:
        self.stack.append(_Frame(self.live, cond))
        self.live = (_and(self.live[0], cond[0]), _and(self.live[1], cond[1]))

    def branch(self, cond: tuple[Tri, Tri] | None) -> None:
        if not self.stack:
            return
        f = self.stack[-1]
        if cond is None:  # #else
            cond = (True, True)
        taking = tuple(_and(_not(f.taken[i]), cond[i]) for i in range(2))
        f.taken = (_or(f.taken[0], cond[0]), _or(f.taken[1], cond[1]))
        self.live = (_and(f.parent[0], taking[0]), _and(f.parent[1], taking[1]))

    def close(self) -> None:
        if self.stack:
            self.live = self.stack.pop().parent

    def define(self, rest: str, offset: int, undef: bool) -> None:
        m = _DEFINE.match(rest)
        if not m:
            return
        name, func, body = m.group(1), m.group(2), m.group(3).strip()
        if not undef:
            self.regions.defines.append((name, offset))
        self.touched.add(name)
        names: list[str] | None = None
        for config, live in zip(self.configs, self.live, strict=True):
            if live is False:
                # Defined only where this build does not go: undefined here, not unknown.
                config.macros.setdefault(name, _UNDEFINED)
                continue
            if live is None:
                config.macros[name] = _UNKNOWN
            elif undef:
                config.macros[name] = _UNDEFINED
            elif func or not body:
                config.macros[name] = _DEFINED_NO_VALUE
            else:
                names = _WORD.findall(body) if names is None else names
                config.macros[name] = Macro(True, evaluate_named(body, names, config))

    def exports(self) -> dict[str, tuple[Macro, Macro]]:
        return {n: (self.configs[0].lookup(n), self.configs[1].lookup(n)) for n in self.touched}


def directives_with_regex(masked: str, names: frozenset[str]) -> list[tuple[int, str, int, int]]:
    """(offset of `#`, name, offset of the text after the name, end) of every directive that
    starts its line and whose name is in `names`, continuation lines included."""
    return [
        (m.start(), m.group("name"), m.start("rest"), m.end())
        for m in _DIRECTIVE.finditer(masked)
        if m.group("name") in names and _starts_line(masked, m.start())
    ]


directive_lines = compiled_directives or directives_with_regex
"""The C twin (tools/cpp/_lexmask.c) when it is built: same list, without a Python step per `#`."""


def walk(masked: str, raw: str, rocm: BuildConfig, cuda: BuildConfig, seed: Seed | None = None) -> Regions:
    """Liveness regions, includes, defines and exported macros of one file (masked: comments and
    strings blanked); `seed` holds the macros its included headers define (see tools.cpp.tree)."""
    w = _Walker(rocm, cuda, seed)
    regions = w.regions
    includes, starts, states = regions.includes, regions.starts, regions.states
    stack = w.stack
    # The commonest directives (#include, #endif, #else) are handled inline: a csrc walk visits
    # ~5,000 directives, and a method call per one was a fifth of the walk.
    for start, name, rest_start, end in directive_lines(masked, _WALKED):
        if name == "include":
            inc = _INCLUDE.match(raw, rest_start)
            if inc:
                rocm_live, cuda_live = w.live
                includes.append(
                    Include(inc.group(2).strip(), inc.group(1) == "<", inc.start(2), rocm_live, cuda_live)
                )
            continue
        if name == "endif":  # the commonest after #include: nothing to read
            if stack:
                w.live = stack.pop().parent
        elif name == "else":
            w.branch(None)
        else:
            rest = _clean(raw[rest_start:end])
            if name == "define" or name == "undef":
                w.define(rest, start, undef=name == "undef")
                continue
            _condition(w, name, rest)
        if w.live != states[-1]:
            starts.append(end)
            states.append(w.live)
    regions.exports = w.exports()
    return regions


def _condition(w: _Walker, name: str, rest: str) -> None:
    """Open or continue a conditional block (#if, #ifdef, #ifndef, #elif, #elifdef, #elifndef)."""
    names = _WORD.findall(rest)
    w.regions.condition_names.update(names)
    if name == "if":
        w.open(w.cond(rest, names))
    elif name == "elif":
        w.branch(w.cond(rest, names))
    else:
        words = rest.split()
        defined = w.defined(words[0] if words else "", negate=name.endswith("ndef"))
        if name.startswith("el"):
            w.branch(defined)
        else:
            w.open(defined)
