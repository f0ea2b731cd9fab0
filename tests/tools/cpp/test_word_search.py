"""The C word search and directive finder (tools/cpp/_lexmask.c) give exactly what their Python
twins give: the scanner's detectors and #if walk read these lists, so any difference would be a
different finding with and without the extension."""

from __future__ import annotations

import random

import pytest

from tests.conftest import require
from tools.cpp.preprocessor import _WALKED, directives_with_regex
from tools.cpp.source import (
    compiled_directives,
    compiled_mask_words,
    compiled_words,
    mask_words_with_regex,
    words_with_regex,
)
from tools.scan.catalog import WORD_PREFIXES

PREFIX_SETS = [
    WORD_PREFIXES,
    ("cu", "cuda", "cudaMalloc", "c"),  # prefixes that extend others
    ("ab", "abc", "b", "ba", "x"),
    ("\u00e9", "\U0001d7d8"),  # non-ASCII word characters (Latin-1 and a 4-byte digit)
    (),
    ("",),
]
ALPHABET = [*"_cudabx3250 .(#\n", "\u00e9", "\u00b2", "\u0663", "\u2014", "\U0001f600", "\U0001d7d8"]


@pytest.fixture
def c_words():
    require(compiled_words is not None, "the _lexmask C extension (pip install -e . with a C compiler)")
    return compiled_words


@pytest.fixture
def c_directives():
    require(compiled_directives is not None, "the _lexmask C extension (pip install -e . with a C compiler)")
    return compiled_directives


def test_words_names_every_word_with_a_prefix_at_its_starts(c_words):
    text = "int __shfl_sync(x); a__shfl cuda cudaFoo 32 32u x32 _32 32\u00e9 cub::Traits"
    found = c_words(text, ("__", "cu", "32"))
    assert found == {
        "__shfl_sync": [4],
        "cuda": [28],
        "cudaFoo": [33],
        "32": [41],
        "32u": [44],
        "32\u00e9": [56],
        "cub": [60],
    }
    assert found == words_with_regex(text, ("__", "cu", "32"))


@pytest.mark.parametrize("prefixes", PREFIX_SETS, ids=range(len(PREFIX_SETS)))
def test_c_words_match_the_regex_on_random_text(c_words, prefixes):
    rng = random.Random(15)
    for _ in range(4000):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 40)))
        assert c_words(text, prefixes) == words_with_regex(text, prefixes), repr(text)


def test_masking_and_word_search_in_one_pass_match_the_two_twins(c_words):
    """The scanner's own path: words are read outside lexemes, and a raw string's R (blanked by
    masking) ends the word before it (`u8R"(...)"` leaves the word `u8`)."""
    require(compiled_mask_words is not None, "the _lexmask C extension")
    assert compiled_mask_words('u8R"(cudaX)" cudaY/*cudaZ*/cudaW', ("cu", "u8")) == (
        "u8" + " " * 10 + " cudaY" + " " * 9 + "cudaW",
        {"u8": [0], "cudaY": [13], "cudaW": [27]},
    )
    alphabet = [*"/*\"'R()\\\n acdu8_x32", "\u00e9", "\u2014", "\U0001f600", "\U0001d7d8"]
    rng = random.Random(15)
    for prefixes in (WORD_PREFIXES, ("R", "a", "u8", "c", "x", "_"), ("\u00e9", "\U0001d7d8"), ()):
        for _ in range(4000):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
            assert compiled_mask_words(text, prefixes) == mask_words_with_regex(text, prefixes), repr(text)


def test_words_refuse_a_prefix_that_is_not_a_word_head(c_words):
    for search in (c_words, words_with_regex):
        with pytest.raises(ValueError, match="word characters"):
            search("a-b", ("a-",))


DIRECTIVE_CASES = [
    "#include <cuda.h>\n  #  if defined(USE_ROCM) \\\n && X\n#endif",
    "x = a # b;\n#define F(x) #x \\\r\n  more\n#pragma unroll\n#else\n#elifdef Y",
    "#if A \\",  # a backslash at the very end stays out of the directive
    "\u00a0\x0c#ifdef Z\n\u2014#endif\n#IF no\n##define no",
    "",
]


@pytest.mark.parametrize("text", DIRECTIVE_CASES)
def test_c_directives_match_the_regex(c_directives, text):
    assert c_directives(text, _WALKED) == directives_with_regex(text, _WALKED)


def test_c_directives_match_the_regex_on_random_text(c_directives):
    alphabet = [
        "#",
        "#",
        "i",
        "f",
        "d",
        "e",
        "n",
        "_",
        "X",
        " ",
        "\t",
        "\n",
        "\\",
        "\r",
        "\x0c",
        "\u00a0",
        "\u2014",
    ]
    rng = random.Random(15)
    for _ in range(6000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        for names in (_WALKED, frozenset({"if", "i", "f", "_"})):
            assert c_directives(text, names) == directives_with_regex(text, names), repr(text)


def test_the_block_search_agrees_on_long_mostly_ascii_text(c_words):
    """Texts past 16 characters take the 16-at-a-time search (1- and 2-byte strings alike): lexemes
    and words that cross a block edge, wide characters in some blocks, a prefix starting with R
    (a raw string's head), and more than 16 first characters (the per-character loop)."""
    require(compiled_mask_words is not None, "the _lexmask C extension")
    pieces = [
        *"/*\"'R()\\\n acdtnu8_x32;{}",
        "cuda",
        "__shfl_sync",
        "template",
        "//",
        "/*",
        "*/",
        'R"(',
        ')"',
    ]
    pieces += ["0xffffffff", "warpSize", "cg", " ", "  ", "\u00e9", "\u2014"]
    many_firsts = tuple("abcdefghijklmnopq")
    rng = random.Random(16)
    for prefixes in (WORD_PREFIXES, ("R", "a", "u8", "c", "x", "_"), many_firsts, ("\u00e9",)):
        for _ in range(3000):
            text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 60)))
            if rng.random() < 0.7:
                text = text.replace("\u2014", "-")  # mostly 1-byte strings, some 2-byte
            assert compiled_mask_words(text, prefixes) == mask_words_with_regex(text, prefixes), repr(text)


def test_prefix_tables_follow_the_tuple_each_call_names(c_words):
    """The C search keeps the tables of the last prefix tuple it was given: a call with another
    tuple (or an equal one rebuilt) must search for that call's prefixes."""
    require(compiled_mask_words is not None, "the _lexmask C extension")
    text = "cudaMalloc(x); __shfl_sync(m, v, 1); abc_def 32"
    for prefixes in [("cu",), ("__", "ab"), ("cu",), ("".join(["c", "u"]),), WORD_PREFIXES, ("cu",)]:
        assert c_words(text, prefixes) == words_with_regex(text, prefixes)
        assert compiled_mask_words(text, prefixes) == mask_words_with_regex(text, prefixes)
