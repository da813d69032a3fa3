"""The target registry: ``@register_target("cuda")`` classes that turn ``kind[:arch...]`` into specs.

Unknown kinds and archs raise ``UnsupportedTarget`` listing the valid values. Nothing a client sends
reaches the compiler unless a registered kind produced it from its allow-list.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Protocol, TypeVar

from kiln.errors import UnsupportedTarget
from kiln.targets.types import KindInfo, TargetSpec

__all__ = ["TargetKind", "describe_targets", "kinds", "parse_target", "register_target"]

# Target strings are short tokens: letters, digits, '_', '-', '.', '+', ',', ':'.
_TARGET_RE = re.compile(r"^[A-Za-z0-9_.+,:\-]{1,128}$")


class TargetKind(Protocol):
    kind: str

    def resolve(self, parts: list[str]) -> TargetSpec:
        """``parts`` is the target string split on ':' after the kind (lower-cased)."""
        ...

    def info(self) -> KindInfo: ...


_REGISTRY: dict[str, TargetKind] = {}
K = TypeVar("K")


def register_target(kind: str) -> Callable[[type[K]], type[K]]:
    def deco(cls: type[K]) -> type[K]:
        inst = cls()
        inst.kind = kind  # type: ignore[attr-defined]
        _REGISTRY[kind] = inst  # type: ignore[assignment]
        return cls

    return deco


_LOAD_LOCK = threading.Lock()
_loaded = False


def _load() -> None:
    # Import every kind once, under a lock: importing one kind module directly must not leave the
    # registry holding only that kind, and concurrent first calls (daemon threads) must not see a
    # half-filled registry.
    global _loaded
    if _loaded:
        return
    with _LOAD_LOCK:
        if not _loaded:
            from kiln.targets import cpu, cuda, metal, rocm, vulkan  # noqa: F401

            _loaded = True


def kinds() -> dict[str, TargetKind]:
    _load()
    return dict(_REGISTRY)


def valid_values() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for k, v in kinds().items():
        i = v.info()
        out[k] = sorted(set(i.archs) | set(i.aliases))
    return out


def parse_target(text: str) -> TargetSpec:
    """Parse and normalize a target string; raise ``UnsupportedTarget`` for anything unknown."""
    if not isinstance(text, str) or not _TARGET_RE.match(text.strip()):
        raise UnsupportedTarget(
            f"malformed target {str(text)[:80]!r}: expected kind[:arch], e.g. 'cuda:sm_80'",
            valid=valid_values(),
        )
    kind, *rest = text.strip().split(":")
    kind = kind.lower()
    reg = kinds()
    if kind not in reg:
        raise UnsupportedTarget(
            f"unknown target kind {kind!r}; valid kinds: {', '.join(sorted(reg))}",
            valid=valid_values(),
        )
    return reg[kind].resolve(rest)


def describe_targets() -> list[KindInfo]:
    return [k.info() for k in kinds().values()]


def pick_arch(
    kind: str,
    parts: list[str],
    *,
    archs: tuple[str, ...],
    aliases: dict[str, str],
    default: str,
    what: str = "arch",
) -> str:
    """The normalized arch of a one-part target (``kind[:arch]``), or ``UnsupportedTarget``."""
    if len(parts) > 1:
        raise unsupported(kind, "target", ":".join(parts), list(archs))
    arch = parts[0].lower() if parts and parts[0] else default
    arch = aliases.get(arch, arch)
    if arch not in archs:
        raise unsupported(kind, what, arch, list(archs) + sorted(aliases))
    return arch


def unsupported(kind: str, what: str, value: str, valid: list[str]) -> UnsupportedTarget:
    return UnsupportedTarget(
        f"unsupported {kind} {what} {value!r}; valid: {', '.join(valid)}",
        valid={kind: valid},
    )
