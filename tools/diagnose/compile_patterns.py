"""The line shapes of compiler and build-tool output (clang/hip-clang, gcc, nvcc, ld, ninja, make).

Observed formats:
  clang/hipcc  `file:12:5: error: msg` + source line + caret (+ fix-it); `In file included from f:1:`;
               trailer `3 errors generated when compiling for gfx90a.`
  gcc          same header; source as `   12 | code` / `      |  ^~~`; `      from f.h:2,` chains;
               `f.cpp: In function 'void k()':` context; `compilation terminated.`
  nvcc (EDG)   `file.cu(12): error: msg` (optionally `error #20-D:`) + source + caret + blank;
               `detected during instantiation of ...`; trailer `1 error detected in the compilation of "f.cu".`
  ld/lld       `f.cpp:(.text+0x1a): undefined reference to `x'`, `ld.lld: error: undefined symbol: x`
  ninja        `[3/10] cmd`, `FAILED: out.o` + the command; `ninja: build stopped: subcommand failed.`
  make/CMake   `make[2]: *** [CMakeFiles/x.dir/build.make:91: x.cu.o] Error 1`
"""

from __future__ import annotations

import re

SOURCE_EXTS = (".cu", ".hip", ".cpp", ".cc", ".cxx", ".c", ".mm", ".cuh.cpp")
HEADER_EXTS = (".h", ".hpp", ".cuh", ".hh", ".inl", ".inc", ".hxx")

CLANG_HEADER = re.compile(
    r"^(?P<file>(?:[A-Za-z]:)?[^:\s(][^:]*?):(?P<line>\d+):(?:(?P<col>\d+):)?\s+"
    r"(?P<sev>fatal error|error|warning|note|remark):\s+(?P<msg>.*)$"
)
NVCC_HEADER = re.compile(
    r"^(?P<file>[^\s(][^(]*?)\((?P<line>\d+)\):\s+(?P<sev>catastrophic error|error|warning|remark|note)"
    r"(?:\s*#[\w-]+)?:\s+(?P<msg>.*)$"
)
DRIVER_ERROR = re.compile(
    r"^(?P<tool>(?:\S*/)?(?:clang(?:\+\+)?(?:-\d+)?|amdclang\+\+|hipcc(?:\.pl)?|nvcc|gcc(?:-\d+)?|g\+\+(?:-\d+)?"
    r"|c\+\+|cc1plus|cc1|ld(?:\.lld|\.gold|\.bfd)?|lld|ptxas|fatbinary|lld-link))(?:\.exe)?:\s+"
    r"(?:fatal\s+)?error:\s+(?P<msg>.*)$"
)
NVCC_FATAL = re.compile(r"^(?P<tool>nvcc|ptxas|nvlink) fatal\s*:\s+(?P<msg>.*)$")
LINK_REF = re.compile(  # anchored and lazy: an unanchored search here is quadratic on long lines
    r"^(?:(?P<file>[^\s:]+):\(\.[\w.$]+\+0x[0-9a-fA-F]+\):\s+)?.*?"
    r"(?P<msg>(?:undefined reference to|multiple definition of) [`'](?P<sym>[^'`]+)'.*)$"
)
LLD_SYMBOL = re.compile(
    r"^(?:\S*ld\.lld|lld|ld): error: (?P<msg>(?:undefined symbol|duplicate symbol): (?P<sym>.+))$"
)
GCC_REQUIRED = re.compile(r"^(?P<file>[^\s:]+):(?P<line>\d+):(?P<col>\d+):\s+(?:required|instantiated) from")
GCC_CONTEXT = re.compile(
    r"^[^\s:]+: (?:In (?:function|member function|static member function|instantiation|constructor|destructor"
    r"|lambda function|substitution)|At global scope).*:$"
)
INCLUDED_FROM = re.compile(r"^In file included from (?P<file>.+?):(?P<line>\d+)[:,]$")
INCLUDED_MORE = re.compile(r"^\s+from (?P<file>.+?):(?P<line>\d+)[:,]$")
CLANG_TRAILER = re.compile(
    r"^(?P<n>\d+) (?:errors?|warnings?(?: and \d+ errors?)?) generated"
    r"(?: when compiling for (?P<target>[\w:+-]+))?\.$"
)
NVCC_TRAILER = re.compile(r'^(?P<n>\d+) errors? detected in the compilation of "(?P<unit>[^"]+)"\.?$')
NVCC_DETECTED = re.compile(r"^\s*(?:detected during|instantiation of|\(\d+\): here|required from)")
NINJA_FAILED = re.compile(r"^FAILED: (?:\[code=\d+\] )?(?P<outputs>.+)$")
INLINE_DIAGNOSTIC = re.compile(r"\s((?:[A-Za-z]:)?[^\s:(]+:\d+:(?:\d+:)?\s+(?:fatal error|error):\s.*)$")
NINJA_PROGRESS = re.compile(r"^\[\d+/\d+\] ")
MAKE_PROGRESS = re.compile(r"^\[\s*\d+%\] ")
MAKE_ERROR = re.compile(
    r"^(?:g?make|mingw32-make)(?:\[\d+\])?: \*\*\* (?:\[(?P<target>[^\]]+)\] )?(?P<msg>.*)$"
)
COMPILER_CMD = re.compile(
    r"(?:^|\s|&&\s*|\]\s)(?:\S*/)?(?P<tool>hipcc|nvcc|amdclang\+\+|clang\+\+(?:-\d+)?|clang(?:-\d+)?"
    r"|g\+\+(?:-\d+)?|gcc(?:-\d+)?|c\+\+)\s"
)
CMAKE_FRAME = re.compile(r"^(?P<file>[^\s:]+):(?P<line>\d+) \((?P<cmd>\w+)\)$")
# A location-less error: LLVM backend (`error: local memory limit exceeded (N) in _Z...`), clang option errors.
# argparse's own `error: unrecognized arguments` stays with the run-time rules, anything else with the catch-all.
BARE_ERROR = re.compile(
    r"^(?:fatal )?error: (?P<msg>(?:local memory|static assertion|no viable conversion|no matching"
    r"|unknown (?:warning )?option|unsupported option|use of undeclared|unknown type name"
    r"|couldn't allocate|invalid (?:output |input )?constraint|ran out of registers"
    r"|insufficient registers|scratch).*)$"
)
# MSVC's linker: `nccl.obj : error LNK2001: unresolved external symbol ncclCommInitRank` (any language)
MSVC_LINK = re.compile(
    r"^(?P<file>\S+) : (?:fatal )?error LNK\d+: (?P<msg>.*?(?P<sym>[A-Za-z_?@$][\w?@$]*))"
    r"(?: \([^)]*\))?\s*$"
)
CMAKE_ERROR = re.compile(r"^CMake Error at (?P<file>[^:]+):(?P<line>\d+) \((?P<cmd>[\w]+)\):$")
LD_CONTEXT = re.compile(r"^(?:\S*/)?(?:ld|ld\.lld|ld\.gold): .*: in function [`'].*[`']:$|^>>> ")

# Lines a wrapper prints when something under it failed: they carry no diagnosis of their own,
# but when nothing else in the log is diagnosable they are what the user saw fail.
WRAPPER = re.compile(
    r"^(?:ninja: build stopped|collect2: error: ld returned"
    r"|(?:\S*/)?clang(?:\+\+)?(?:-\d+)?: error: (?:linker|clang frontend) command failed"
    r"|error: command '.*' failed with exit (?:code|status)|error: subprocess-exited-with-error"
    r"|ERROR: Failed building wheel|ERROR: Could not build wheels|Failed to build |make(?:\[\d+\])?: \*\*\* "
    r"|gmake(?:\[\d+\])?: \*\*\* |compilation terminated\.|error: legacy-install-failure"
    r"|RuntimeError: Error compiling objects for extension|CMake Error: |\S+ failed with exit code"
    r"|failed to execute:)"
)

GCC_SOURCE = re.compile(r"^\s*\d+\s+\||^\s+\|")  # two alternatives: `\s*\d*\s+` backtracks quadratically

# One cheap check that every line the parser could act on passes; the rest skip all patterns. Plain
# substring tests: as one regex alternation they cost about twice as much per line.
_RELEVANT_WORDS = (
    "error", "ERROR", "warning", "note", "remark", "fatal", "FAILED", "Failed", "failed", "generated", "detected",
    "***", "ninja:", "terminated", "Error", "undefined", "definition", "included from", "At global",
    "required from", "instantiat", "): here", ">>> ", " -c ",
)  # fmt: skip
_IN_WORD = re.compile(r"In \w")  # clang/gcc's "In function 'f':", "In instantiation of ..."


def relevant(text: str) -> bool:
    """Whether a (stripped) line may be compiler or build output the parser acts on."""
    if text.startswith("["):
        return True
    for word in _RELEVANT_WORDS:
        if word in text:
            return True
    return "In " in text and _IN_WORD.search(text) is not None
