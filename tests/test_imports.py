"""Every module imports on its own, in a fresh interpreter: no circular import hidden by test order."""
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agent", "tools", "sandboxes")


def _modules() -> list[str]:
    names = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            if rel.name == "__main__":
                continue
            names.append(".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts))
    return names


def _import(name: str) -> tuple[str, str]:
    proc = subprocess.run([sys.executable, "-c", f"import {name}"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    return name, proc.stderr.strip().splitlines()[-1] if proc.returncode else ""


def test_every_module_imports_alone():
    with ThreadPoolExecutor(max_workers=4) as pool:
        broken = {name: err for name, err in pool.map(_import, _modules()) if err}
    assert broken == {}
