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

import ast
import glob
import os
import re
from pathlib import Path

from tools.files import read_regular_text

SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c", ".hip")
TARGET_COMMANDS = ("define_extension_target", "add_library", "add_executable")
_ARG = re.compile(r'"((?:[^"\\]|\\.)*)"|(\()|(\))|([^\s()"]+)')
_VAR = re.compile(r"\$\{(\w+)\}")
_TRUE = {"1", "ON", "YES", "TRUE", "Y"}
_FALSE = {"0", "OFF", "NO", "FALSE", "N", "IGNORE", "NOTFOUND", ""}
_BINARY = ("STREQUAL", "MATCHES", "EQUAL", "LESS", "GREATER", "VERSION_LESS", "VERSION_GREATER",
           "VERSION_EQUAL", "VERSION_GREATER_EQUAL", "VERSION_LESS_EQUAL", "LESS_EQUAL", "GREATER_EQUAL",
           "IN_LIST", "STRLESS", "STRGREATER")


class _Quoted(str):
    """A quoted argument: a string literal, never a variable name in a condition."""


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|#\[(=*)\[[\s\S]*?\]\1\]|#[^\n]*|\(|\)|[^\s()"#]+')


def _commands(text: str):
    """(name, raw argument text) of each command, in order; comments (line and bracket) skipped."""
    name, depth, pieces = None, 0, []
    previous = None
    for m in _TOKEN.finditer(text):
        token = m.group(0)
        if token.startswith("#"):
            continue
        if depth == 0:
            if token == "(" and previous is not None and re.fullmatch(r"[A-Za-z_]\w*", previous):
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


class _Interpreter:
    def __init__(self, root: Path, variables: dict[str, str]):
        self.root = root
        self.vars: dict[str, list[str] | None] = {k: v.split(";") for k, v in variables.items()}
        self.pinned = set(variables)
        """The profile's variables hold for the whole build: the script's own `set`s do not move them."""
        self.sources: set[str] = set()

    def expand(self, raw: str) -> list[str | None]:
        """Arguments with ${VAR} expanded; an unquoted list variable splices; None: unknown value."""
        out: list[str | None] = []
        for m in _ARG.finditer(raw):
            quoted, word = m.group(1), m.group(4)
            if m.group(2) or m.group(3):
                out.append(m.group(2) or m.group(3))
                continue
            text = quoted if quoted is not None else word
            whole = _VAR.fullmatch(text)
            if whole and quoted is None:
                value = self.vars.get(whole.group(1))
                out.extend([None] if value is None else [v for v in value if v])
                continue
            unknown = any(self.vars.get(v) is None for v in _VAR.findall(text))
            value = _VAR.sub(lambda v: ";".join(self.vars.get(v.group(1)) or []), text)
            if unknown:
                out.append(None)
            elif quoted is not None:
                out.append(_Quoted(value))
            else:
                out.extend(part for part in value.split(";") if part)
        return out

    def truth(self, args: list[str | None]) -> bool | None:
        return _Condition(args, self.vars).parse()

    def run(self, text: str) -> None:
        stack: list[tuple[bool | None, bool | None]] = []  # (parent live, some branch taken)
        live: bool | None = True
        skip_depth = 0
        for name, raw in _commands(text):
            if name in ("function", "macro"):
                skip_depth += 1
            elif name in ("endfunction", "endmacro"):
                skip_depth = max(0, skip_depth - 1)
            if skip_depth:
                continue
            if name == "if":
                cond = self.truth(self.expand(raw)) if live is not False else False
                stack.append((live, cond))
                live = _and(live, cond)
            elif name in ("elseif", "else") and stack:
                parent, taken = stack[-1]
                cond = True if name == "else" else self.truth(self.expand(raw))
                live = _and(parent, _and(_not(taken), cond))
                stack[-1] = (parent, _or(taken, cond))
            elif name == "endif" and stack:
                live = stack.pop()[0]
            elif live is not False:
                self.command(name, self.expand(raw), certain=live is True)

    def command(self, name: str, args: list[str | None], certain: bool) -> None:
        if name == "set" and args and args[0]:
            values = [a for a in args[1:] if a not in ("CACHE", "PARENT_SCOPE")]
            if "CACHE" in args:
                values = args[1:args.index("CACHE")]
            self._assign(args[0], values, certain)
        elif name == "list" and len(args) >= 2 and args[1]:
            self._list(args[0], args[1], args[2:])
        elif name == "file" and len(args) >= 3 and args[0] in ("GLOB", "GLOB_RECURSE") and args[1]:
            found = [Path(p).relative_to(self.root).as_posix() for pattern in args[2:] if pattern
                     for p in glob.glob(str(self.root / pattern), recursive=args[0] == "GLOB_RECURSE")]
            self._assign(args[1], sorted(found), certain)
        elif name in TARGET_COMMANDS or name.endswith("_add_library"):
            self.sources |= {part for a in args if a for part in a.split(";") if part.endswith(SOURCE_SUFFIXES)}

    def _assign(self, var: str, values: list[str | None], certain: bool) -> None:
        if var in self.pinned:
            return
        if None in values and certain:
            self.vars[var] = None
            return
        known = [part for v in values if v is not None for part in v.split(";") if part]
        old = self.vars.get(var) or []
        self.vars[var] = known if certain else old + [v for v in known if v not in old]

    def _list(self, op: str, var: str, rest: list[str | None]) -> None:
        current = self.vars.get(var) or []
        rest = [part for v in rest if v for part in v.split(";") if part]
        if op == "APPEND":
            self.vars[var] = current + rest
        elif op == "REMOVE_ITEM":
            self.vars[var] = [v for v in current if v not in rest]
        elif op in ("FILTER", "TRANSFORM") and var not in self.pinned:
            self.vars[var] = None


class _Condition:
    """CMake `if()` arguments, evaluated to True, False or None (unknown)."""

    def __init__(self, args: list[str | None], variables: dict[str, list[str] | None]):
        self.args, self.i, self.vars = args, 0, variables

    def peek(self):
        return self.args[self.i] if self.i < len(self.args) else ")"

    def parse(self) -> bool | None:
        try:
            return self.disjunction()
        except (IndexError, re.error):
            return None

    def disjunction(self) -> bool | None:
        value = self.conjunction()
        while self.peek() == "OR":
            self.i += 1
            value = _or(value, self.conjunction())
        return value

    def conjunction(self) -> bool | None:
        value = self.negation()
        while self.peek() == "AND":
            self.i += 1
            value = _and(value, self.negation())
        return value

    def negation(self) -> bool | None:
        if self.peek() == "NOT":
            self.i += 1
            return _not(self.negation())
        return self.primary()

    def primary(self) -> bool | None:
        token = self.args[self.i]
        self.i += 1
        if token == "(":
            value = self.disjunction()
            self.i += 1
            return value
        if token in ("DEFINED", "EXISTS", "TARGET", "COMMAND", "IS_ABSOLUTE", "IS_DIRECTORY"):
            name = self.args[self.i]
            self.i += 1
            return (name in self.vars and self.vars[name] is not None) if token == "DEFINED" and name else None
        if self.peek() in _BINARY:
            op, right = self.args[self.i], self.args[self.i + 1]
            self.i += 2
            return _compare(op, self.value(token), self.value(right))
        value = self.value(token)
        if value is None:
            return None
        return None if value.upper() not in _TRUE | _FALSE else value.upper() in _TRUE

    def value(self, token: str | None) -> str | None:
        if token is None:
            return None
        if isinstance(token, _Quoted):
            return str(token)
        if token in self.vars:
            value = self.vars[token]
            return None if value is None else ";".join(value)
        if re.fullmatch(r"[A-Z_][A-Z0-9_]*", token) and token.upper() not in _TRUE | _FALSE:
            return None  # an unset variable the build may define (-D on the command line)
        return token


def _compare(op: str, left: str | None, right: str | None) -> bool | None:
    if left is None or right is None:
        return None
    if op == "STREQUAL":
        return left == right
    if op == "MATCHES":
        return re.search(right, left) is not None
    return None


def _and(a, b):
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or(a, b):
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def _not(a):
    return None if a is None else not a


def cmake_sources(repo: Path, cmake_file: str, variables: dict[str, str]) -> set[str]:
    """Repo-relative sources the CMake build compiles under `variables` (e.g. VLLM_GPU_LANG=HIP)."""
    path = repo / cmake_file
    interpreter = _Interpreter(path.parent, variables)
    interpreter.run(read_regular_text(path))
    base = path.parent.relative_to(repo).as_posix()
    return {os.path.normpath(s if base == "." else f"{base}/{s}").replace(os.sep, "/")
            for s in interpreter.sources if not os.path.isabs(s)}


def setup_py_sources(repo: Path, setup_file: str) -> set[str]:
    """Repo-relative sources named by string literals in a setup script (beside it or from the root)."""
    path = repo / setup_file
    tree = ast.parse(read_regular_text(path))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(SOURCE_SUFFIXES):
            for base in (path.parent, repo):
                if (base / node.value).is_file():
                    out.add((base / node.value).resolve().relative_to(repo.resolve()).as_posix())
                    break
    return out
