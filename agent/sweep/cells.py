"""Expanding a sweep into cells with stable keys."""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass

from agent.sweep.spec import CellOptions, FrameworkAxis, ModelAxis, SweepSpec, TargetAxis, WorkloadAxis

NIGHTLY_SUFFIX = "@nightly"


@dataclass(frozen=True)
class Cell:
    """One framework ref x model x target x workload; `key` is its identity across nights."""

    framework: FrameworkAxis
    ref: str
    model: ModelAxis
    target: TargetAxis
    workload: WorkloadAxis
    options: CellOptions

    @property
    def key(self) -> str:
        return f"{self.framework.name}@{self.ref}/{self.model.name}/{self.target.key}/{self.workload.name}"

    @property
    def git_ref(self) -> str:
        """The ref to check out: `main@nightly` is the tip of main at run time."""
        return self.ref.removesuffix(NIGHTLY_SUFFIX)

    @property
    def build_key(self) -> str:
        """Cells with the same build key share one build (same framework ref, image and arch)."""
        raw = f"{self.framework.name}|{self.framework.repo}|{self.ref}|{self.target.image}|{self.target.arch}"
        return hashlib.sha1(raw.encode(), usedforsecurity=False).hexdigest()[:12]

    def to_dict(self) -> dict:
        return {
            "key": self.key,
            "ref": self.ref,
            "framework": self.framework.model_dump(),
            "model": self.model.model_dump(),
            "target": self.target.model_dump(),
            "workload": self.workload.model_dump(),
            "options": self.options.model_dump(),
        }

    @classmethod
    def from_dict(cls, data: dict) -> Cell:
        return cls(
            framework=FrameworkAxis(**data["framework"]),
            ref=data["ref"],
            model=ModelAxis(**data["model"]),
            target=TargetAxis(**data["target"]),
            workload=WorkloadAxis(**data["workload"]),
            options=CellOptions(**data["options"]),
        )


def expand(spec: SweepSpec) -> list[Cell]:
    """Every combination, in a stable order; duplicate keys are an error naming the key."""
    cells: list[Cell] = []
    for fw, model, target, workload in itertools.product(
        spec.frameworks, spec.models, spec.targets, spec.workloads
    ):
        cells += [Cell(fw, ref, model, target, workload, spec.options) for ref in fw.refs]
    seen: set[str] = set()
    for cell in cells:
        if cell.key in seen:
            raise ValueError(f"two cells share the key {cell.key}: give the axes distinct names")
        seen.add(cell.key)
    return cells
