"""The framework's own ROCm source list: which translation units its ROCm build compiles.

Two readers, named by a profile's `rocm_sources`:
- `cmake`: a small CMake interpreter over one CMakeLists.txt. `if/elseif/else/endif` are evaluated
  with three-valued logic from the profile's variables (vLLM: `VLLM_GPU_LANG` = HIP), `set`,
  `list(APPEND|REMOVE_ITEM|FILTER)` and `file(GLOB)` track source lists, and every source named by
  a target command (`define_extension_target`, `add_library`, ...) in a branch the ROCm build may
  take is in the build. A branch whose condition cannot be known (an arch test) counts as taken:
  the list is what the ROCm build *may* compile.
- `setup_py`: every string literal naming a C++/CUDA/HIP source in a setup script (sgl-kernel's
  setup_rocm.py), resolved beside the script or from the repo root.
Paths come back repo-relative ('/'-separated).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

from tools.files import read_regular_text, stays_inside
from tools.regex_memo import compile_pattern
from tools.scan.cmake_conditions import Condition, Quoted, and3, not3, or3

SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c", ".hip")
TARGET_COMMANDS = ("define_extension_target", "add_library", "add_executable")
_TRACKED = frozenset(("set", "list", "file", *TARGET_COMMANDS))
"""What `command` reads; other commands (message, include, find_package, ...) are not expanded."""
_ARG = compile_pattern(r'"((?:[^"\\]|\\.)*)"|(\()|(\))|([^\s()"]+)')
_VAR = compile_pattern(r"\$\{(\w+)\}")
_COMMAND_NAME = compile_pattern(r"[A-Za-z_]\w*")
# Leading blanks are eaten by the match (the engine would otherwise try every alternative at each
# blank), the commonest token is tried first, and strings are an unrolled loop: the same tokens as
# `"(?:[^"\\]|\\.)*"|#\[(=*)\[[\s\S]*?\]\1\]|#[^\n]*|\(|\)|[^\s()"#]+` found one by one.
_TOKEN = compile_pattern(r'\s*([^\s()"#]+|\(|\)|"[^"\\]*(?:\\.[^"\\]*)*"|#\[(=*)\[[\s\S]*?\]\2\]|#[^\n]*)')


def _commands(text: str) -> Iterator[tuple[str, str]]:
    """(name, raw argument text) of each command, in order; comments (line and bracket) skipped."""
    name, depth = "", 0
    pieces: list[str] = []
    previous = None
    for token, _ in _TOKEN.findall(text):
        if token[0] == "#":
            continue
        if depth == 0:
            if token == "(" and previous is not None and _COMMAND_NAME.fullmatch(previous):
                name, depth, pieces = previous.lower(), 1, []
            previous = token
            continue
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
            if depth == 0:
                yield name, " ".join(pieces)
                previous = None
                continue
        pieces.append(token)


_Plan = list[tuple[list[str | None], str | None, str | None]]
"""Per argument token: the values it always gives (no `${`), else (quoted text, unquoted word)."""


def _plan(raw: str) -> _Plan:
    plan: _Plan = []
    for quoted_text, opening, closing, word_text in _ARG.findall(raw):
        if opening or closing:
            plan.append(([opening or closing], None, None))
            continue
        # Only a quoted argument can be empty (`""`): an unquoted word has a character.
        quoted, word = (None, word_text) if word_text else (quoted_text, None)
        text = word_text or quoted_text
        if "${" in text:
            plan.append(([], quoted, word))
        elif quoted is not None:
            plan.append(([Quoted(text)], None, None))
        else:
            plan.append(([part for part in text.split(";") if part], None, None))
    return plan


class _Interpreter:
    def __init__(self, root: str, variables: dict[str, str], plans: dict[str, _Plan] | None = None):
        """`plans`: argument tokenizations shared with other runs over the same file."""
        self.plans: dict[str, _Plan] = {} if plans is None else plans
        self.root = root
        self.vars: dict[str, list[str] | None] = {k: v.split(";") for k, v in variables.items()}
        self.pinned = set(variables)
        """The profile's variables hold for the whole build: the script's own `set`s do not move them."""
        self.sources: set[str] = set()

    def expand(self, raw: str) -> list[str | None]:
        """Arguments with ${VAR} expanded; an unquoted list variable splices; None: unknown value."""
        out: list[str | None] = []
        plan = self.plans.get(raw)
        if plan is None:
            plan = self.plans[raw] = _plan(raw)
        for values, quoted, word in plan:
            if values or (quoted is None and word is None):  # most arguments: no variable to expand
                out.extend(values)
                continue
            text = quoted if quoted is not None else word or ""
            whole = _VAR.fullmatch(text)
            if whole and quoted is None:
                value = self.vars.get(whole.group(1))
                out.extend([None] if value is None else [v for v in value if v])
                continue
            unknown = any(self.vars.get(v) is None for v in _VAR.findall(text))
            expanded = _VAR.sub(lambda v: ";".join(self.vars.get(v.group(1)) or []), text)
            if unknown:
                out.append(None)
            elif quoted is not None:
                out.append(Quoted(expanded))
            else:
                out.extend(part for part in expanded.split(";") if part)
        return out

    def truth(self, args: list[str | None]) -> bool | None:
        return Condition(args, self.vars).parse()

    def run(self, commands: Sequence[tuple[str, str]]) -> None:
        stack: list[tuple[bool | None, bool | None]] = []  # (parent live, some branch taken)
        live: bool | None = True
        skip_depth = 0
        for name, raw in commands:
            if name in ("function", "macro"):
                skip_depth += 1
            elif name in ("endfunction", "endmacro"):
                skip_depth = max(0, skip_depth - 1)
            if skip_depth:
                continue
            if name == "if":
                cond = self.truth(self.expand(raw)) if live is not False else False
                stack.append((live, cond))
                live = and3(live, cond)
            elif name in ("elseif", "else") and stack:
                parent, taken = stack[-1]
                cond = True if name == "else" else self.truth(self.expand(raw))
                live = and3(parent, and3(not3(taken), cond))
                stack[-1] = (parent, or3(taken, cond))
            elif name == "endif" and stack:
                live = stack.pop()[0]
            elif live is not False and (name in _TRACKED or name.endswith("_add_library")):
                self.command(name, self.expand(raw), certain=live is True)

    def command(self, name: str, args: list[str | None], certain: bool) -> None:
        if name == "set" and args and args[0]:
            values = [a for a in args[1:] if a not in ("CACHE", "PARENT_SCOPE")]
            if "CACHE" in args:
                values = args[1 : args.index("CACHE")]
            self._assign(args[0], values, certain)
        elif name == "list" and len(args) >= 2 and args[1]:
            self._list(args[0], args[1], args[2:])
        elif name == "file" and len(args) >= 3 and args[0] in ("GLOB", "GLOB_RECURSE") and args[1]:
            import glob  # with the contextlib it loads, ~0.5 ms of every scan start that reads no CMake

            found = [
                rel
                for pattern in args[2:]
                if pattern
                for p in glob.glob(os.path.join(self.root, pattern), recursive=args[0] == "GLOB_RECURSE")
                if stays_inside(rel := os.path.relpath(p, self.root))
            ]
            self._assign(args[1], sorted(found), certain)
        elif name in TARGET_COMMANDS or name.endswith("_add_library"):
            self.sources |= {
                part for a in args if a for part in a.split(";") if part.endswith(SOURCE_SUFFIXES)
            }

    def _assign(self, var: str, values: Sequence[str | None], certain: bool) -> None:
        if var in self.pinned:
            return
        if None in values and certain:
            self.vars[var] = None
            return
        known = [part for v in values if v is not None for part in v.split(";") if part]
        old = self.vars.get(var) or []
        already = set(old)
        self.vars[var] = known if certain else old + [v for v in known if v not in already]

    def _list(self, op: str | None, var: str, args: list[str | None]) -> None:
        current = self.vars.get(var) or []
        rest = [part for v in args if v for part in v.split(";") if part]
        if op == "APPEND":
            self.vars[var] = current + rest
        elif op == "REMOVE_ITEM":
            removed = set(rest)
            self.vars[var] = [v for v in current if v not in removed]
        elif op in ("FILTER", "TRANSFORM") and var not in self.pinned:
            self.vars[var] = None


def cmake_sources(repo: str | os.PathLike[str], cmake_file: str, variables: dict[str, str]) -> set[str]:
    """Repo-relative sources the CMake build compiles under `variables` (e.g. VLLM_GPU_LANG=HIP)."""
    return cmake_source_lists(repo, cmake_file, variables)[0]


def cmake_source_lists(
    repo: str | os.PathLike[str], cmake_file: str, *settings: dict[str, str]
) -> list[set[str]]:
    """cmake_sources under each set of variables, one set per argument (the ROCm and the CUDA
    build): the file is read and tokenized once."""
    path = os.path.join(repo, cmake_file)
    commands = list(_commands(read_regular_text(path)))
    base = os.path.relpath(os.path.dirname(path), repo)
    out = []
    plans: dict[str, _Plan] = {}
    for variables in settings:
        interpreter = _Interpreter(os.path.dirname(path), variables, plans)
        interpreter.run(commands)
        out.append(
            {
                os.path.normpath(s if base == "." else f"{base}/{s}").replace(os.sep, "/")
                for s in interpreter.sources
                if not os.path.isabs(s)
            }
        )
    return out


def setup_py_sources(repo: str | os.PathLike[str], setup_file: str) -> set[str]:
    """Repo-relative sources named by string literals in a setup script (beside it or from the root)."""
    import ast  # only a setup script is parsed (a CMake profile never is): ~2 ms of a scan's start

    path = os.path.join(repo, setup_file)
    real_repo = os.path.realpath(repo)
    tree = ast.parse(read_regular_text(path))
    out = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.endswith(SOURCE_SUFFIXES)
        ):
            for base in (os.path.dirname(path), repo):
                named = os.path.join(base, node.value)
                if os.path.isfile(named):
                    rel = os.path.relpath(os.path.realpath(named), real_repo)
                    if stays_inside(rel):  # a file outside the repo is no file the scan reads
                        out.add(rel)
                    break
    return out
