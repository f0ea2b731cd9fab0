"""Function templates a ROCm build never instantiates: their bodies are not compiled for ROCm.

A function template's body is only compiled where it is instantiated. In a translation unit (a
`.cu`/`.cpp` file, which nothing includes), a template whose name is used only inside branches the
ROCm build skips (`#ifndef USE_ROCM`) is never instantiated there, so what its body holds
(`__ballot_sync(0xffffffff, ...)`) never reaches hipcc. vLLM's `warp_expert_search` is one: its
only caller is a kernel whose body is `#ifndef USE_ROCM`.

Conservative: a name used nowhere else in the file, or anywhere the ROCm build may compile (a
call, an explicit instantiation, a macro body naming it), keeps the body; headers are left alone
(their includers may instantiate the template).
"""

from __future__ import annotations

from collections.abc import Iterator

from tools.cpp.preprocessor import Regions, Tri
from tools.cpp.source import SourceText, words_with_prefixes
from tools.regex_memo import compile_pattern
from tools.scan.catalog import WORD_PREFIXES

TRANSLATION_UNITS = (".cu", ".cpp", ".cc", ".cxx", ".c")
_TEMPLATE = compile_pattern(r"template[ \t\n]*<")
_ATTRIBUTES = frozenset(("__launch_bounds__", "__attribute__", "__declspec", "alignas", "__cluster_dims__"))
"""Parenthesised specifiers that come before a function's name."""
_NAME_BEFORE_PAREN = compile_pattern(r"([A-Za-z_]\w*)[ \t\n]*$")


_BRACKETS = {
    "<": compile_pattern(r"[<>;{}]"),
    "(": compile_pattern(r"[();{}]"),
    "{": compile_pattern(r"[{}]"),
}


def _closing(text: str, start: int, opening: str, closing: str) -> int:
    """Offset just past the bracket that closes the one at `start`, or -1 (unbalanced, or a
    statement or block boundary reached first inside <> or ())."""
    depth = 0
    for m in _BRACKETS[opening].finditer(text, start):
        c = m.group(0)
        if c == opening:
            depth += 1
        elif c == closing:
            depth -= 1
            if depth == 0:
                return m.end()
        else:
            return -1
    return -1


def _function_name(masked: str, head: int) -> tuple[str, int, int] | None:
    """(name, its offset, offset of its `(`) of the function template whose `template <` is at
    `head`, or None for a class or variable template or anything this reading cannot follow."""
    params_end = _closing(masked, masked.index("<", head), "<", ">")
    if params_end < 0:
        return None
    after = params_end
    while True:
        paren = masked.find("(", after)
        brace = masked.find("{", after)
        semicolon = masked.find(";", after)
        if paren < 0 or (0 <= brace < paren) or (0 <= semicolon < paren):
            return None  # a class/struct template or a variable template
        name = name_before(masked, after, paren)
        if name is None or name[0] not in _ATTRIBUTES:
            break
        after = _closing(masked, paren, "(", ")")  # `__launch_bounds__(256)`: the name comes later
        if after < 0:
            return None
    if name is None or name[0] in ("operator", "decltype", "sizeof", "alignof", "noexcept"):
        return None
    return name[0], name[1], paren


def name_before(masked: str, start: int, end: int) -> tuple[str, int] | None:
    """(name, offset) of what `_NAME_BEFORE_PAREN.search(masked, start, end)` matches: the word
    that ends masked[start:end] but for blanks, from its first letter or '_' (a match's word must
    end where the trailing blanks start, so only that word is looked at, not every position)."""
    stop = end
    while stop > start and masked[stop - 1] in " \t\n":
        stop -= 1
    first = stop
    while first > start and (masked[first - 1].isalnum() or masked[first - 1] == "_"):
        first -= 1
    for k in range(first, stop):
        c = masked[k]
        if c == "_" or "a" <= c <= "z" or "A" <= c <= "Z":
            return masked[k:stop], k
    return None


def _body(masked: str, paren: int) -> tuple[int, int] | None:
    """(start, end) of the body after the parameter list opened at `paren`; None for a declaration."""
    args_end = _closing(masked, paren, "(", ")")
    if args_end < 0:
        return None
    brace = masked.find("{", args_end)
    semicolon = masked.find(";", args_end)
    if brace < 0 or 0 <= semicolon < brace:
        return None
    body_end = _closing(masked, brace, "{", "}")
    return (brace, body_end) if body_end > 0 else None


def _template_heads(masked: str, starts: list[int]) -> Iterator[int]:
    """Offsets of `template <` where the word `template` starts (`starts`, from the file's word
    search; the match holds no other word start, so no match hides another)."""
    for start in starts:
        if _TEMPLATE.match(masked, start):
            yield start


def uninstantiated_bodies(src: SourceText, regions: Regions) -> list[tuple[int, int]]:
    """(start, end) offsets of function-template bodies the ROCm build never instantiates."""
    if (
        not src.path.endswith(TRANSLATION_UNITS)
        or all(rocm is not False for rocm, _ in regions.states)  # no use can be ROCm-skipped
        or "template" not in src.words(WORD_PREFIXES)
    ):
        return []
    masked = src.masked
    # The text the ROCm build skips, stretches joined by a newline (no name spans one): one
    # substring test per template instead of a search per stretch.
    skipped = "\n".join(masked[a:b] for a, b in _rocm_skipped_stretches(regions, len(masked)))
    spans = []
    templates = []
    for head in _template_heads(masked, src.words(WORD_PREFIXES)["template"]):
        found = _function_name(masked, head)
        if found is None:
            continue
        name, at, paren = found
        if name in skipped:
            templates.append((head, name, at, paren))
        # else not even the text of the name where the ROCm build skips code
    if not templates:
        return []
    # Every use of every name in one word search (a name is a word: its uses are the words equal to it).
    uses_of = words_with_prefixes(masked, tuple({name for _, name, _, _ in templates}))
    for head, name, at, paren in templates:
        uses = uses_of.get(name, [])
        if all(regions.rocm_compiles(u) for u in uses if u != at):
            continue  # no use the ROCm build skips: the body matters (or nothing says otherwise)
        body = _body(masked, paren)
        if body is None:
            continue
        outside = [u for u in uses if not head <= u < body[1]]
        if outside and not any(regions.rocm_compiles(u) for u in outside):
            spans.append(body)
    return spans


def _rocm_skipped_stretches(regions: Regions, size: int) -> list[tuple[int, int]]:
    ends = [*regions.starts[1:], size]
    return [
        (a, b) for a, b, (rocm, _) in zip(regions.starts, ends, regions.states, strict=True) if rocm is False
    ]


def skip_spans(regions: Regions, spans: list[tuple[int, int]]) -> Regions:
    """The regions with the ROCm build skipping `spans` (its CUDA liveness unchanged)."""
    if not spans:
        return regions
    cuts = sorted({*regions.starts, *(a for a, _ in spans), *(b for _, b in spans)})
    starts: list[int] = []
    states: list[tuple[Tri, Tri]] = []
    for cut in cuts:
        rocm, cuda = regions.at(cut)
        if any(a <= cut < b for a, b in spans):
            rocm = False
        if not states or states[-1] != (rocm, cuda):
            starts.append(cut)
            states.append((rocm, cuda))
    return regions.with_stretches(starts, states)
