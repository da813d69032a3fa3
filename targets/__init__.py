"""Targets: parse ``kind[:arch]`` strings, normalize aliases, allow-list, and produce compiler flags.

One file per vendor (``cpu``, ``cuda``, ``rocm``, ``vulkan``, ``metal``), each registered with
``@register_target``. ``parse_target("cuda:a100")`` returns a frozen ``TargetSpec`` for ``cuda:sm_80``.
"""

from kiln.targets.options import CompileOptions, normalize_options
from kiln.targets.registry import describe_targets, kinds, parse_target, register_target
from kiln.targets.types import KindInfo, TargetSpec

__all__ = [
    "CompileOptions",
    "KindInfo",
    "TargetSpec",
    "describe_targets",
    "kinds",
    "normalize_options",
    "parse_target",
    "register_target",
]
