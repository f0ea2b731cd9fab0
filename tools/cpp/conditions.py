"""Evaluate `#if` expressions under one build configuration, with 'unknown' as a third value.

A configuration says which macros are defined (and to what) in a ROCm build or a CUDA build.
Macros it does not know are unknown, not 0: `#ifdef ENABLE_BF16` may or may not be compiled,
so code under it is still scanned. Logic is Kleene's: `0 && unknown` is 0, `1 || unknown` is 1.
Values are ints or None (unknown); a malformed expression is unknown, never an exception.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

from tools.cpp.build_configs import BuildConfig, Macro
from tools.regex_memo import compile_pattern

UNKNOWN = None


_TOKEN = compile_pattern(
    r"\s*(?:(?P<num>0[xX][0-9a-fA-F]+|\d+)[uUlL]*"
    r"|(?P<id>[A-Za-z_]\w*)"
    r"|(?P<hdr><[\w./+-]+>|\"[^\"\n]*\")"
    r"|(?P<op>&&|\|\||==|!=|<=|>=|<<|>>|[-+*/%<>!~&|^?:(),]))"
)

# Binary operators by precedence, loosest first (C's table, minus assignment and comma).
_LEVELS = [
    ("||",),
    ("&&",),
    ("|",),
    ("^",),
    ("&",),
    ("==", "!="),
    ("<", ">", "<=", ">="),
    ("<<", ">>"),
    ("+", "-"),
    ("*", "/", "%"),
]
_LEVEL_OF = {op: level for level, ops in enumerate(_LEVELS) for op in ops}


_OCTAL = compile_pattern(r"0\d+")


class _Malformed(Exception):
    pass


def _tokens(expr: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    expr = expr.rstrip()
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        kind = m.lastgroup if m else None
        if not m or m.end() == pos or kind is None:
            raise _Malformed(expr)
        pos = m.end()
        out.append((kind, m.group(kind)))
    return out


_ARITHMETIC: dict[str, Callable[[int, int], int]] = {
    "|": operator.or_,
    "^": operator.xor,
    "&": operator.and_,
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
    "<": lambda a, b: int(a < b),
    ">": lambda a, b: int(a > b),
    "<=": lambda a, b: int(a <= b),
    ">=": lambda a, b: int(a >= b),
    "<<": lambda a, b: a << min(b, 64),
    ">>": lambda a, b: a >> min(b, 64),
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": lambda a, b: int(a / b),
    "%": operator.mod,
}


def _binary(op: str, a: int | None, b: int | None) -> int | None:
    if op == "&&":
        if a == 0 or b == 0:
            return 0
        return None if a is None or b is None else 1
    if op == "||":
        if (a is not None and a != 0) or (b is not None and b != 0):
            return 1
        return None if a is None or b is None else 0
    if a is None or b is None:
        return None
    if op in ("/", "%") and b == 0:
        return None
    return _ARITHMETIC[op](a, b)


class _Parser:
    """Precedence climbing over #if tokens, producing int | None."""

    def __init__(self, tokens: list[tuple[str, str]], config: BuildConfig):
        self.toks, self.i, self.config = tokens, 0, config

    def peek(self) -> str | None:
        return self.toks[self.i][1] if self.i < len(self.toks) else None

    def take(self) -> tuple[str, str]:
        if self.i >= len(self.toks):
            raise _Malformed("unexpected end")
        self.i += 1
        return self.toks[self.i - 1]

    def expect(self, text: str) -> None:
        if self.take()[1] != text:
            raise _Malformed(text)

    def ternary(self) -> int | None:
        cond = self.binary(0)
        if self.peek() != "?":
            return cond
        self.take()
        then = self.ternary()
        self.expect(":")
        other = self.ternary()
        if cond is None:
            return then if then == other else None
        return then if cond else other

    def binary(self, level: int) -> int | None:
        """Operators binding at `level` or tighter, left to right (precedence climbing: one call
        per operator, not one per level and operand)."""
        left = self.unary()
        while True:
            op = self.peek()
            if op is None or _LEVEL_OF.get(op, -1) < level:
                return left
            self.take()
            left = _binary(op, left, self.binary(_LEVEL_OF[op] + 1))

    def unary(self) -> int | None:
        kind, text = self.take()
        if text in ("!", "-", "+", "~"):
            v = self.unary()
            if v is None:
                return None
            return {"!": int(not v), "-": -v, "+": v, "~": ~v}[text]
        if text == "(":
            v = self.ternary()
            self.expect(")")
            return v
        if kind == "num":
            return int(text, 0) if not _OCTAL.fullmatch(text) else int(text, 8)
        if kind == "id":
            return self.identifier(text)
        raise _Malformed(text)

    def identifier(self, name: str) -> int | None:
        if name == "defined":
            paren = self.peek() == "("
            if paren:
                self.take()
            macro = self.config.lookup(self.take()[1])
            if paren:
                self.expect(")")
            return None if macro.defined is None else int(macro.defined)
        if self.peek() == "(":
            return self.call(name)
        if name in ("true", "false"):
            return int(name == "true")
        macro = self.config.lookup(name)
        if macro.defined is False:
            return 0
        return macro.value if macro.defined else None

    def call(self, name: str) -> int | None:
        """A function-like macro or `__has_include(...)`: only the latter is known."""
        self.take()
        depth, args = 1, []
        while depth:
            _, text = self.take()
            depth += {"(": 1, ")": -1}.get(text, 0)
            if depth:
                args.append(text)
        if name in ("__has_include", "__has_include_next") and args:
            header = args[0].strip('<>"')
            for prefix, found in self.config.header_exists.items():
                if header.startswith(prefix):
                    return int(found)
        return None


_NAMES = compile_pattern(r"[A-Za-z_]\w*")
_CACHE: dict[tuple[str, str, tuple[Macro | None, ...], tuple[tuple[str, bool], ...]], int | None] = {}
_CACHE_LIMIT = 50_000
_MISSING = object()


def evaluate(expr: str, config: BuildConfig) -> int | None:
    """The value of a `#if`/`#elif` expression under `config`; None when it cannot be known.
    Memoised on the expression and the states of the macros it names: the same guards
    (`defined(USE_ROCM)`, `__CUDA_ARCH__ >= 800`) recur in every file of a tree."""
    return evaluate_named(expr, _NAMES.findall(expr), config)


def evaluate_named(expr: str, names: list[str], config: BuildConfig) -> int | None:
    """evaluate() with the identifiers of `expr` already found (`[A-Za-z_]\\w*`, in order): a
    directive is evaluated for two builds, and its names are read once for both."""
    key = (
        expr,
        config.name,
        tuple(map(config.macros.get, names)),
        tuple(sorted(config.header_exists.items())) if "__has_include" in expr else (),
    )
    cached = _CACHE.get(key, _MISSING)  # one hash of the key (its macros hash in Python)
    if cached is not _MISSING:
        return cached  # type: ignore[return-value]
    value = _evaluate(expr, config)
    if len(_CACHE) < _CACHE_LIMIT:
        _CACHE[key] = value
    return value


def _evaluate(expr: str, config: BuildConfig) -> int | None:
    try:
        parser = _Parser(_tokens(expr), config)
        value = parser.ternary()
        if parser.i != len(parser.toks):
            return None
        return value
    except (_Malformed, ValueError, OverflowError, IndexError, KeyError, RecursionError):
        return None
