"""Target domain types: what a parsed, normalized, allow-listed target is."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TargetSpec:
    """A validated target, frozen: everything the compiler needs, nothing taken from the client raw.

    ``flags`` are the exact ``iree-compile`` flags for this target (before option flags).
    ``module_attr`` is MLIR attribute text to set as the module's ``hal.device.targets`` when the
    compiler's flag table lacks the target (CUDA sm_90/sm_100); then ``flags`` carries no target flag.
    ``executable_format`` is the HAL executable format found in the artifact (structural checks).
    ``driver`` is the iree.runtime driver that runs it.
    """

    target: str
    kind: str
    arch: str
    flags: tuple[str, ...]
    driver: str
    executable_format: str
    module_attr: str | None = None
    has_f64: bool = False
    extra: tuple[tuple[str, str], ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "kind": self.kind,
            "arch": self.arch,
            "flags": list(self.flags),
            "driver": self.driver,
            "executable_format": self.executable_format,
            "module_attr": self.module_attr,
        }


@dataclass(frozen=True)
class KindInfo:
    """What ``GET /v1/targets`` and ``kiln targets`` show for one kind."""

    kind: str
    default: str
    archs: tuple[str, ...]
    aliases: dict[str, str]
    notes: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "default": self.default,
            "archs": list(self.archs),
            "aliases": dict(self.aliases),
            "notes": self.notes,
        }
