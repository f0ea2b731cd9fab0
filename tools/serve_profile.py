"""What serving reads of a framework profile, as protocols: tools/ types against them, agent.profiles
provides them (tools never import the agent)."""

from __future__ import annotations

from typing import Any, Protocol


class LaunchOptions(Protocol):
    """What serving reads of a profile's launch spec (agent.profiles.LaunchSpec is one)."""

    @property
    def command(self) -> str: ...
    @property
    def health_path(self) -> str: ...
    @property
    def models_path(self) -> str: ...
    @property
    def ready_timeout_s(self) -> float: ...
    @property
    def smoke_prompt(self) -> str: ...


class ServeProfile(Protocol):
    """What serving reads of a framework profile (agent.profiles.Profile is one)."""

    @property
    def launch(self) -> LaunchOptions: ...
    @property
    def env(self) -> dict[str, str]: ...


def profile_options(
    profile: ServeProfile, arch: str = "gfx942", overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    """running_server keyword arguments from a Profile's launch spec and env, then `overrides`."""
    launch = profile.launch
    env = {k: v.replace("{arch}", arch) for k, v in profile.env.items()}
    options = {
        "health_path": launch.health_path,
        "models_path": launch.models_path,
        "ready_timeout": launch.ready_timeout_s,
        "smoke_prompt": launch.smoke_prompt,
        "env": env,
    }
    options.update(overrides or {})
    return options
