"""Every module imports on its own, in a fresh interpreter: no circular import hidden by test order.

One fresh interpreter imports the third-party libraries our code uses (never a module of ours), then
forks one child per module of ours; each child starts with none of our modules loaded, exactly like
`python -c "import NAME"`, without paying interpreter start and numpy/pydantic/langgraph imports each
time (that was 195 interpreters, half a minute of CPU).

Packages go first, shallowest first, and each child says which of our modules it loaded. Importing
`a.b.c` alone imports `a`, then `a.b`, then `a.b.c`, and stops as soon as `a.b.c` is in sys.modules
(importlib checks after importing each parent): so when importing the package `a.b` alone loaded
`a.b.c`, importing `a.b.c` alone runs exactly that same import and nothing more, and a child of its own
would repeat it (every agent.cli.* module is the whole CLI: half a second each). Such a module is
counted as proven by its package's child; every other module gets its own."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agent", "tools", "sandboxes")

# Runs in the fresh interpreter: argv[1] holds the third-party names, stdin the modules of ours, one a
# line, packages marked with a trailing "/". Prints "NAME\tLAST LINE OF THE ERROR" for each module that
# failed to import, and "NAME\tproven by PACKAGE" for each one a package's child loaded.
_FORKER = r"""
import os, sys, traceback
OURS = ("agent", "tools", "sandboxes")
for lib in sys.argv[1].split():
    try:
        __import__(lib)
    except Exception:
        pass  # an optional library missing here: the module that needs it says so below
assert not [m for m in sys.modules if m.split(".")[0] in OURS], "ours preloaded"
lines = sys.stdin.read().split()
packages = [n[:-1] for n in lines if n.endswith("/")]
names = [n.rstrip("/") for n in lines]
running, limit, loaded = {}, max(2, os.cpu_count() or 2), {}

def reap():
    pid, status = os.wait()
    name, rfd = running.pop(pid)
    with os.fdopen(rfd) as fh:
        out = fh.read()
    if os.waitstatus_to_exitcode(status) != 0:
        print(f"{name}\t{out.strip() or 'exit status %d' % os.waitstatus_to_exitcode(status)}", flush=True)
    else:
        loaded[name] = set(out.split())

def start(name):
    if len(running) >= limit:
        reap()
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        try:
            __import__(name)
            out, code = " ".join(m for m in sys.modules if m.split(".")[0] in OURS), 0
        except BaseException:
            out, code = traceback.format_exc().strip().splitlines()[-1], 1
        os.write(wfd, out.encode())
        os._exit(code)
    os.close(wfd)
    running[pid] = (name, rfd)

def proven_by(name):
    return next((p for p in loaded if name.startswith(p + ".") and name in loaded[p]), None)

for depth in sorted({p.count(".") for p in packages}):
    for name in packages:
        if name.count(".") == depth and not proven_by(name):
            start(name)
    while running:
        reap()
for name in names:
    if name in loaded or name in packages and not proven_by(name):
        continue  # a package with its own child, reaped above (a failed one was printed)
    package = proven_by(name)
    if package:
        print(f"{name}\tproven by {package}", flush=True)
    else:
        start(name)
while running:
    reap()
"""


def _modules() -> list[str]:
    names = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            if rel.name == "__main__":
                continue
            names.append(".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts))
    return names


def _third_party() -> list[str]:
    """Top-level names our packages import that are not ours (stdlib and libraries): safe to preload."""
    ours = {*PACKAGES, "evals", "tests"}
    found: set[str] = set()
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    found.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    found.add(node.module.split(".")[0])
    return sorted(found - ours - {"__future__"})


def _is_package(name: str) -> bool:
    return (ROOT / name.replace(".", "/") / "__init__.py").is_file()


def test_every_module_imports_alone():
    modules = _modules()
    assert len(modules) > 100, modules
    proc = subprocess.run(
        [sys.executable, "-c", _FORKER, " ".join(_third_party())],
        input="\n".join(f"{m}/" if _is_package(m) else m for m in modules),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    verdicts = dict(line.split("\t", 1) for line in proc.stdout.splitlines() if "\t" in line)
    broken = {name: why for name, why in verdicts.items() if not why.startswith("proven by ")}
    assert broken == {}
    # the shortcut is taken where it holds: the CLI's modules are the CLI package's import
    assert verdicts.get("agent.cli.port") == "proven by agent.cli", verdicts
