"""Python exceptions -> Failures: the exception, the framework frame that raised it, domain facts.

Facts a fixer needs are pulled out of the message: the weight name of a KeyError, the
missing/unexpected key lists (torch's state_dict phrasing and vLLM/sglang's "not initialized
from checkpoint"), both shapes of a size mismatch (torch's, the weight_loader assertion's and
the "[a, b] vs [c, d]" form), the module of an import error, the dtype of a not-implemented op.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tools.diagnose import python_facts as F
from tools.diagnose.runtime import match_runtime
from tools.diagnose.signature import relativize
from tools.diagnose.traceback import Frame, PyException, PyTraceback
from tools.records import Failure

# Packages whose frames are never "the framework": the failure surfaces there but is caused above.
_LIBRARIES = {
    "torch",
    "triton",
    "transformers",
    "safetensors",
    "numpy",
    "huggingface_hub",
    "accelerate",
    "setuptools",
    "pip",
    "_distutils_hack",
    "pyproject_hooks",
    "importlib",
    "multiprocessing",
    "uvloop",
    "fastapi",
    "uvicorn",
    "starlette",
    "pydantic",
    "typer",
    "click",
    "packaging",
    "concurrent",
    "asyncio",
    "threading",
    "runpy",
    "subprocess",
    "json",
    "argparse",
    "tokenizers",
    "ray",
    "zmq",
}
_WRAPPER_EXCEPTIONS = re.compile(
    r"CalledProcessError: Command '\[?'?(?:ninja|make|cmake|\S*hipcc|\S*nvcc)|Error compiling objects for extension"
    r"|subprocess-exited-with-error|Failed building wheel|CompileError: command .* failed"
)


def _package_of(path: str) -> str | None:
    m = re.search(r"(?:site|dist)-packages/([\w]+)", path)
    if m:
        return m.group(1)
    m = re.search(r"/lib/python3\.\d+/([\w]+)", path)
    return m.group(1) if m else None


def _is_stdlib(path: str) -> bool:
    return bool(re.search(r"/lib/python3\.\d+/(?!site-packages|dist-packages)", path)) or path.startswith("<")


def framework_frame(frames: list[Frame], repo_root: str | Path | None = None) -> Frame | None:
    """The innermost frame in the framework itself: the repo, else code outside site-packages/stdlib,
    else an installed package that is not a general-purpose library."""
    if not frames:
        return None
    inner_first = list(reversed(frames))
    if repo_root is not None:
        for frame in inner_first:
            rel = relativize(frame.path, repo_root)
            if (
                rel
                and not rel.startswith("/")
                and not _is_stdlib(frame.path)
                and (Path(repo_root) / rel).is_file()
            ):
                return frame
    for frame in inner_first:
        if "-packages/" not in frame.path and not _is_stdlib(frame.path):
            return frame
    for frame in inner_first:
        pkg = _package_of(frame.path)
        if pkg and pkg not in _LIBRARIES and "-packages/" in frame.path:
            return frame
    return inner_first[0]


def is_wrapper(tb: PyTraceback) -> bool:
    """A traceback that only reports that a compiler under it failed (cpp_extension, pip)."""
    return all(_WRAPPER_EXCEPTIONS.search(f"{e.type}: {e.message}") for e in tb.chain)


def classify_exception(exc: PyException) -> tuple[str, str | None, dict[str, Any]]:
    """(kind, symbol, facts) for one exception."""
    text = f"{exc.type}: {exc.message}"
    code = exc.frames[-1].code if exc.frames else ""
    for probe in (F.weight_facts, F.shape_facts, F.import_facts):
        found = probe(exc, code)
        if found:
            return found
    if "HIPBLAS_STATUS_NOT_SUPPORTED" in text:
        # e4m3fn x e4m3fnuz mixes reach hipBLASLt as "not supported"; the fp8 call site says which
        context = text + " ".join(f"{f.path} {f.func} {f.code}" for f in exc.frames[-3:])
        if re.search(r"fp8|float8|e4m3|scaled_mm", context, re.IGNORECASE):
            return "fp8_layout", "HIPBLAS_STATUS_NOT_SUPPORTED", {}
    hit = match_runtime(text)
    if hit:
        facts = {"dtype": hit[1]} if hit[0] in ("unsupported_dtype", "fp8_layout") and hit[1] else {}
        return hit[0], hit[1], facts
    return "python_error", None, {}


def traceback_failures(tb: PyTraceback, repo_root: str | Path | None = None) -> list[Failure]:
    """The failures one traceback reports: the most specific exception of its chain
    (plus one per extra size mismatch in a state_dict error)."""
    classified = [(exc, *classify_exception(exc)) for exc in tb.chain]
    specific = [c for c in classified if c[1] != "python_error"]
    exc, kind, symbol, facts = specific[0] if specific else classified[-1]
    frame = framework_frame(exc.frames, repo_root)
    message_lines = exc.message.split("\n")
    first_line = message_lines[0]
    if (
        first_line.endswith(":") and len(message_lines) > 1
    ):  # "Error(s) in loading state_dict for X:" + detail
        first_line = f"{first_line} {message_lines[1].strip()}"
    facts = {"exception": exc.type, **facts} if exc.type else facts
    if frame is not None:
        facts["function"] = frame.func
    message = f"{exc.type}: {first_line}" if exc.type else first_line
    failure = Failure(
        kind=kind,
        message=message.strip()[:500],
        file=frame.path if frame else None,
        line=frame.line if frame else None,
        symbol=symbol,
        excerpt=_excerpt(exc, frame),
        source="python",
        facts=facts,
    )
    return [failure, *_extra_mismatches(exc, failure)]


def _extra_mismatches(exc: PyException, first: Failure) -> list[Failure]:
    """torch lists every mismatching parameter; each is its own quant-exclusion candidate."""
    extra = []
    start = 1 if first.kind == "quant_exclusion" else 0
    for name, param, loaded in F.all_size_mismatches(exc.message)[start:20]:
        facts = {k: v for k, v in first.facts.items() if k in ("exception", "function", "dtype")}
        facts["shapes"] = [param, loaded]
        extra.append(
            Failure(
                kind="quant_exclusion",
                message=f"size mismatch for {name}",
                file=first.file,
                line=first.line,
                symbol=name,
                excerpt=first.excerpt,
                source="python",
                facts=facts,
            )
        )
    return extra


def _excerpt(exc: PyException, frame: Frame | None) -> str:
    """The traceback header, the framework frame, the innermost frame, and the exception."""
    lines = ["Traceback (most recent call last):"]
    picked = sorted(
        {i for i, f in enumerate(exc.frames) if f is frame} | ({len(exc.frames) - 1} if exc.frames else set())
    )
    previous = -1
    for i in picked:
        fr = exc.frames[i]
        if i != previous + 1:
            lines.append("  ...")
        lines.append(f'  File "{fr.path}", line {fr.line}, in {fr.func}')
        if fr.code:
            lines.append(f"    {fr.code}")
        previous = i
    message = exc.message.split("\n")
    lines.append(f"{exc.type}: {message[0]}" if message[0] else exc.type)
    lines.extend(message[1:12])
    if len(message) > 12:
        lines.append(f"  ... ({len(message) - 12} more lines)")
    return "\n".join(lines)


_WARNING_LINE = re.compile(r"^(?P<path>\S+\.py):(?P<line>\d+): (?P<type>\w*Warning): (?P<msg>.+)$")


def warning_failure(line: str) -> Failure | None:
    """`pkg/mod.py:12: UserWarning: could not load ... libcudart.so.12: cannot open ...`, when its kind is known."""
    m = _WARNING_LINE.match(line.strip())
    if not m:
        return None
    kind, symbol, facts = classify_exception(PyException(m.group("type"), m.group("msg")))
    if kind == "python_error":
        return None
    return Failure(
        kind=kind,
        message=line.strip()[:500],
        file=m.group("path"),
        line=int(m.group("line")),
        symbol=symbol,
        excerpt=line.strip(),
        source="python",
        facts={"exception": m.group("type"), **facts},
    )


def bare_exception_failure(line: str) -> Failure | None:
    """A `Type: message` line logged without its traceback (e.g. by a logger), when its kind is known."""
    m = re.match(
        r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Resources|Version)): (?P<msg>.+)$", line.strip()
    )
    if not m:
        return None
    kind, symbol, facts = classify_exception(PyException(m.group("type"), m.group("msg")))
    if kind == "python_error":
        return None
    return Failure(
        kind=kind,
        message=line.strip()[:500],
        symbol=symbol,
        excerpt=line.strip(),
        source="python",
        facts={"exception": m.group("type"), **facts},
    )
