"""Peel what wraps a tool's own text in a pasted log line: prefixes, markdown, JSON, flattening.

What people paste is rarely the raw log: docker/CI timestamps, BuildKit step prefixes, logger
prefixes (vLLM, sglang, TGI, glog, journald, lemonade, milabench), `> ` quotes, markdown fences and
bold markers, inline-code backticks, JSON-lines wrappers, and vLLM logs whose newlines were lost
when copied from a web page. `expand_line` turns one raw line into the tool's own lines.
"""

from __future__ import annotations

import json
import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
_VLLM_LOGGER = (
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? "
    r"\[?[\w./-]+:\d+\](?: |$)"
)
_PREFIXES = [  # (the characters such a prefix starts with, the prefix)
    # docker logs -t / GitHub Actions: 2024-05-01T12:00:00.123456789Z
    ("0123456789", re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)? ")),
    # lemonade and other date-level loggers: "2026-05-08 11:47:02.257 [Error] (Process) "
    ("0123456789", re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)? \[[A-Za-z]+\] (?:\(\w+\) )?")),
    # BuildKit plain progress: "#12 34.56 ", and docker build without the step: "2.700 "
    ("#", re.compile(r"^#\d+ \d+\.\d+ ")),
    ("0123456789", re.compile(r"^\d+\.\d{3} (?=\S)")),
    # vLLM worker tag: "(EngineCore pid=29429) ", "(EngineCore_DP0 pid=43) ", "(VllmWorkerProcess pid=87359) "
    ("(", re.compile(r"^\([\w -]+ pid=\d+\) ")),
    # vLLM logger: "ERROR 06-07 12:15:23 [core.py:1165] " and older "ERROR 12-05 20:24:46 engine.py:366] "
    ("DIWEC", re.compile("^" + _VLLM_LOGGER)),
    # torch distributed: "[rank0]: "
    ("[", re.compile(r"^\[rank\d+\]: ?")),
    # sglang: "[2025-03-20 00:44:38 TP3] ", "[2025-03-20 00:44:38] "
    ("[", re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?(?: [A-Z]{2,4}\d+)*\] ")),
    # clock-and-stream loggers: "[16:10:33] stdout/INFO  "
    ("[", re.compile(r"^\[\d\d:\d\d:\d\d\] [\w-]+/[A-Z]+\s+")),
    # a project or step tag: "[hipDNN] ", "[composable_kernel] ", "[aiter] " (ninja's "[3/10]" has a slash)
    ("[", re.compile(r"^\[[A-Za-z][\w.+-]*\] ")),
    # journald / syslog: "Jul 28 15:11:48 host ollama[307422]: "
    ("ADFJMNOS", re.compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [\w.@-]+(?:\[\d+\])?: ")),
    # glog (XLA, jax): "E1028 18:10:24.124692 140650719580480 xla_bridge.py:487] "
    ("IWEF", re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w./-]+:\d+\] ")),
    # a harness naming the stream: "dqn.D1 [stderr] "
    ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", re.compile(r"^[\w.-]+ \[(?:stdout|stderr)\] ")),
    # spack's build-log echo: "  >> 1147    "; aiter's history arrows: "-->"
    (" >", re.compile(r"^\s*>> \d+ +")),
    ("-", re.compile(r"^-->")),
]
_FENCE = re.compile(r"^\s*(?:`{3,}|~{3,})[\w+-]*\s*$")
_QUOTE = re.compile(r"^(?:> ?)+(?=\S|$)")
_EDGE_TICKS = re.compile(r"^`{1,3}|`{1,3}$")
_BOLD = re.compile(r"\*\*_?|_?\*\*")
_MIDLINE_LOGGER = re.compile(r"(?<=\s)(?=" + _VLLM_LOGGER + ")")
_MIDLINE_SEEN = re.compile(r"\s(?=" + _VLLM_LOGGER + ")")
"""Where _MIDLINE_LOGGER would split, found ~5x faster: a leading `\\s` lets the search skip to whitespace."""
_JSON_DATA = re.compile(r'^\s*\{.*"(?:data|message|log)"\s*:\s*"')


_BY_FIRST: dict[str, tuple[re.Pattern[str], ...]] = {}
"""The prefixes a line starting with a character may carry, in _PREFIXES order: one dict lookup per line
instead of testing every entry (most lines of a big log start with none of these characters)."""
for _starts, _pattern in _PREFIXES:
    for _char in _starts:
        _BY_FIRST[_char] = (*_BY_FIRST.get(_char, ()), _pattern)


def _strip_prefixes(line: str) -> str:
    changed = True
    while changed and line:  # prefixes stack: timestamp, then worker tag, then logger
        changed = False
        for pattern in _BY_FIRST.get(line[0], ()):
            m = pattern.match(line)  # each is anchored at ^: a match and a slice, no re.sub
            if m is not None and m.end():
                line, changed = line[m.end() :], True
                break
    return line


def _strip_markdown(line: str) -> str:
    """`> ` quotes, fences, inline-code backticks at the edges, `**bold**` markers."""
    if line.startswith("> ") or line == ">":  # lld's ">>> referenced by" is not a quote
        line = _QUOTE.sub("", line, count=1)
    if "`" in line:
        if _FENCE.match(line):
            return ""
        line = _EDGE_TICKS.sub("", line.rstrip())
        line = _EDGE_TICKS.sub("", line)
    if "**" in line:
        line = _BOLD.sub("", line)
    return line


def clean_line(raw: str) -> str:
    """The tool's own text of one log line: no colours, redraws, prefixes or markdown."""
    line = raw.rstrip("\r\n")
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if "\r" in line:
        line = line.rstrip("\r").rsplit("\r", 1)[-1]
    line = _strip_prefixes(_strip_markdown(line))
    return _strip_prefixes(_strip_markdown(line)) if line[:1] in ">`*" else line


def _json_payload(raw: str) -> list[str] | None:
    """The lines inside a JSON-lines record ({"event": ..., "data": "...\\n"}), or None."""
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    text = next((record[k] for k in ("data", "message", "log") if isinstance(record.get(k), str)), None)
    return text.splitlines() if text is not None else None


def expand_line(raw: str) -> list[str]:
    """The cleaned lines one raw line holds (usually one)."""
    if raw.lstrip().startswith("{") and _JSON_DATA.match(raw):
        payload = _json_payload(raw.strip())
        if payload is not None:
            return [clean_line(p) for p in payload] or [""]
    if "] " in raw and _MIDLINE_SEEN.search(raw):  # a vLLM log pasted with its newlines lost
        return [clean_line(part) for part in _MIDLINE_LOGGER.split(raw)]
    return [clean_line(raw)]
