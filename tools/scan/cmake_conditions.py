"""CMake `if()` conditions with three-valued logic: True, False or None when the build cannot be
known from the profile's variables (an arch test, a found package). Used by build_lists.py, whose
interpreter counts a branch as taken unless its condition is False.
"""

from __future__ import annotations

import re

_TRUE = {"1", "ON", "YES", "TRUE", "Y"}
_FALSE = {"0", "OFF", "NO", "FALSE", "N", "IGNORE", "NOTFOUND", ""}
_BINARY = (
    "STREQUAL",
    "MATCHES",
    "EQUAL",
    "LESS",
    "GREATER",
    "VERSION_LESS",
    "VERSION_GREATER",
    "VERSION_EQUAL",
    "VERSION_GREATER_EQUAL",
    "VERSION_LESS_EQUAL",
    "LESS_EQUAL",
    "GREATER_EQUAL",
    "IN_LIST",
    "STRLESS",
    "STRGREATER",
)


class Quoted(str):
    """A quoted argument: a string literal, never a variable name in a condition."""


class Condition:
    """CMake `if()` arguments, evaluated to True, False or None (unknown)."""

    def __init__(self, args: list[str | None], variables: dict[str, list[str] | None]):
        self.args, self.i, self.vars = args, 0, variables

    def peek(self) -> str | None:
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
            value = or3(value, self.conjunction())
        return value

    def conjunction(self) -> bool | None:
        value = self.negation()
        while self.peek() == "AND":
            self.i += 1
            value = and3(value, self.negation())
        return value

    def negation(self) -> bool | None:
        if self.peek() == "NOT":
            self.i += 1
            return not3(self.negation())
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
            return (
                (name in self.vars and self.vars[name] is not None) if token == "DEFINED" and name else None
            )
        if self.peek() in _BINARY:
            op, right = self.args[self.i], self.args[self.i + 1]
            self.i += 2
            return _compare(op or "", self.value(token), self.value(right))
        text = self.value(token)
        if text is None:
            return None
        return None if text.upper() not in _TRUE | _FALSE else text.upper() in _TRUE

    def value(self, token: str | None) -> str | None:
        if token is None:
            return None
        if isinstance(token, Quoted):
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


def and3(a: bool | None, b: bool | None) -> bool | None:
    """Kleene AND: False wins, then unknown."""
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def or3(a: bool | None, b: bool | None) -> bool | None:
    """Kleene OR: True wins, then unknown."""
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def not3(a: bool | None) -> bool | None:
    """Kleene NOT: unknown stays unknown."""
    return None if a is None else not a
