"""Every module imports on its own, in a fresh interpreter: no circular import hidden by test order.

One fresh interpreter imports the third-party libraries our code uses (never a module of ours), then
forks one child per module of ours; each child starts with none of our modules loaded, exactly like
`python -c "import NAME"`, without paying interpreter start and numpy/pydantic/langgraph imports each
time (that was 195 interpreters, half a minute of CPU)."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agent", "tools", "sandboxes")

# Runs in the fresh interpreter: argv[1] holds the third-party names, stdin the modules of ours, one a
# line. Prints "NAME\tLAST LINE OF THE ERROR" for each module that failed to import; nothing otherwise.
_FORKER = r"""
import os, sys, traceback
for lib in sys.argv[1].split():
    try:
        __import__(lib)
    except Exception:
        pass  # an optional library missing here: the module that needs it says so below
assert not [m for m in sys.modules if m.split(".")[0] in ("agent", "tools", "sandboxes")], "ours preloaded"
names, running, limit = sys.stdin.read().split(), {}, max(2, os.cpu_count() or 2)

def reap():
    pid, status = os.wait()
    name, rfd = running.pop(pid)
    with os.fdopen(rfd) as fh:
        err = fh.read().strip()
    if os.waitstatus_to_exitcode(status) != 0:
        print(f"{name}\t{err or 'exit status %d' % os.waitstatus_to_exitcode(status)}", flush=True)

for name in names:
    if len(running) >= limit:
        reap()
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        try:
            __import__(name)
            code = 0
        except BaseException:
            lines = traceback.format_exc().strip().splitlines()
            os.write(wfd, lines[-1].encode())
            code = 1
        os._exit(code)
    os.close(wfd)
    running[pid] = (name, rfd)
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


def test_every_module_imports_alone():
    modules = _modules()
    assert len(modules) > 100, modules
    proc = subprocess.run(
        [sys.executable, "-c", _FORKER, " ".join(_third_party())],
        input="\n".join(modules),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    broken = dict(line.split("\t", 1) for line in proc.stdout.splitlines() if "\t" in line)
    assert broken == {}
