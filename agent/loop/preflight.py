"""Preflight: before the first (long) build, probe the image for what the framework profile needs.

One shell probe in the run's sandbox reports hipcc, python3, whether pip may install there (Debian's
system python is "externally managed" and refuses), torch and its HIP version, and the framework's
build tools. What is missing is named with the image that provides it and what can still run, so a
port on the wrong image stops in seconds with a table, instead of after a build diagnosed `unknown`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from agent.profiles import Profile

# Build tools each framework's ROCm build imports or runs (from their setup.py / pyproject build deps).
BUILD_TOOLS: dict[str, list[str]] = {
    "sglang": ["setuptools", "wheel", "ninja"],
    "vllm": ["setuptools", "setuptools_scm", "wheel", "cmake", "ninja", "jinja2"],
}

PROBE = r"""
have() { command -v "$1" >/dev/null 2>&1 && echo yes || echo no; }
echo "hipcc=$(have hipcc)"
version='import sys; print("%d.%d" % sys.version_info[:2])'
echo "python3=$(command -v python3 >/dev/null 2>&1 && python3 -c "$version" || echo no)"
command -v python3 >/dev/null 2>&1 || exit 0
python3 - <<'PY'
import importlib.util, os, sys, sysconfig
venv = sys.prefix != sys.base_prefix
managed = os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))
print("pip=" + ("no" if importlib.util.find_spec("pip") is None else "yes"))
print("pip_install=" + ("no" if managed and not venv else "yes"))
try:
    import torch
    print("torch=%s hip=%s" % (torch.__version__, torch.version.hip))
except Exception as exc:
    print("torch=no (%s)" % type(exc).__name__)
for mod in os.environ.get("ROCPORT_PREFLIGHT_MODULES", "").split():
    print("mod:%s=%s" % (mod, "yes" if importlib.util.find_spec(mod) else "no"))
PY
for tool in ${ROCPORT_PREFLIGHT_TOOLS}; do echo "tool:$tool=$(have "$tool")"; done
"""


@dataclass
class Check:
    """One requirement of the profile and what the image has."""

    need: str
    ok: bool
    found: str
    why: str
    """The stage that needs it."""


@dataclass
class Preflight:
    """The probe's verdict: ready to build, or what is missing and what still runs."""

    image: str
    checks: list[Check]
    provides: list[str] = field(default_factory=list)
    """Images that provide what this one lacks (the profile's images)."""
    can_run: list[str] = field(default_factory=list)

    @property
    def missing(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    @property
    def ready(self) -> bool:
        return not self.missing

    @property
    def units_ready(self) -> bool:
        """The unit compiles (`--until unit`) need nothing that is missing."""
        return not any("unit" in c.why for c in self.missing)

    def verdict(self) -> str:
        """One line: ready, or what is missing, where to get it and what still runs."""
        if self.ready:
            return f"{self.image} has what the build needs ({', '.join(c.need for c in self.checks)})"
        missing = ", ".join(f"{c.need} ({c.found})" for c in self.missing)
        line = f"{self.image} lacks {missing}"
        if self.provides:
            line += f"; use an image that provides it: -c target.image={self.provides[0]}"
            if len(self.provides) > 1:
                line += f" (or {', '.join(self.provides[1:])})"
        if self.can_run:
            line += f"; still possible here: {', '.join(self.can_run)}"
        return line

    def to_dict(self) -> dict:
        return {
            "image": self.image,
            "ready": self.ready,
            "verdict": self.verdict(),
            "checks": [asdict(c) for c in self.checks],
            "provides": self.provides,
            "can_run": self.can_run,
        }


def probe_command(profile: Profile) -> str:
    modules = " ".join(m for m in BUILD_TOOLS.get(profile.name, []) if m not in ("cmake", "ninja"))
    tools = " ".join(t for t in BUILD_TOOLS.get(profile.name, []) if t in ("cmake", "ninja"))
    return f"ROCPORT_PREFLIGHT_MODULES='{modules}' ROCPORT_PREFLIGHT_TOOLS='{tools}' sh -c {_quote(PROBE)}"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def parse_probe(output: str) -> dict[str, str]:
    facts = {}
    for line in output.splitlines():
        name, sep, value = line.partition("=")
        if sep and name and " " not in name:
            facts[name.strip()] = value.strip()
    return facts


def _commands(profile: Profile) -> str:
    return " ".join(
        filter(None, [profile.build.rocm, profile.install or "", profile.unit.hip if profile.unit else ""])
    )


def evaluate(profile: Profile, image: str, facts: dict[str, str]) -> Preflight:
    """What the profile needs, checked against the probe's facts."""
    cmds = _commands(profile)
    unit = profile.unit.hip if profile.unit else ""
    checks = [Check("hipcc", facts.get("hipcc") == "yes", facts.get("hipcc", "not probed"), "unit, build")]
    if "python" in cmds:
        py = facts.get("python3", "no")
        checks.append(Check("python3", py != "no", py if py != "no" else "not installed", "build"))
    installs = "pip install" in cmds or ("setup" in profile.build.rocm and "install" in profile.build.rocm)
    if installs and facts.get("python3", "no") != "no":
        ok = facts.get("pip") == "yes" and facts.get("pip_install") == "yes"
        found = (
            "no pip"
            if facts.get("pip") != "yes"
            else "externally-managed system python, no venv"
            if facts.get("pip_install") != "yes"
            else "yes"
        )
        checks.append(Check("pip install into the image's python", ok, found, "build"))
    if "torch" in cmds or profile.hipify_at_build:
        torch = facts.get("torch", "no")
        ok = torch != "no" and not torch.startswith("no") and "hip=None" not in torch
        found = torch if ok else ("CUDA/CPU build: " + torch if "hip=None" in torch else "not installed")
        checks.append(Check("ROCm PyTorch", ok, found, "unit, build" if "torch" in unit else "build"))
    for tool in BUILD_TOOLS.get(profile.name, []):
        value = facts.get(f"tool:{tool}", facts.get(f"mod:{tool}", "no"))
        checks.append(Check(tool, value == "yes", "yes" if value == "yes" else "not installed", "build"))
    pre = Preflight(image, checks, provides=[i for i in profile.images if i != image])
    pre.can_run = ["scan (`rocport scan`)"] + (
        ["unit compiles (`--until unit`) and rule fixes (`rocport fix CHECKOUT --from-scan`)"]
        if pre.units_ready
        else []
    )
    return pre
