"""CUDA targets: ``cuda:sm_XX`` (and aliases such as ``a100``) for the NVPTX backend.

IREE 3.13's flag table knows sm_60..sm_89 but not Hopper/Blackwell: for those the spec carries a
``hal.device.targets`` module attribute with an explicit ``#iree_gpu.target`` (see
shared/iree-notes/cuda_sm90_target_attr.mlir) and no target flag. Unknown names segfault the
compiler, so only names in ``ARCHS`` are ever passed on.
"""

from __future__ import annotations

from kiln.targets.registry import pick_arch, register_target
from kiln.targets.types import KindInfo, TargetSpec

# Archs the 3.13 flag table accepts (verified by tests/test_targets_matrix.py).
FLAG_ARCHS = (
    "sm_60", "sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89",
    "sm_120", "sm_121",
)
# Archs declared through the module attribute: arch -> PTX ISA feature.
ATTR_ARCHS = {
    "sm_90": "+ptx80",
    "sm_90a": "+ptx80",
    "sm_100": "+ptx86",
    "sm_100a": "+ptx86",
    "sm_103": "+ptx88",
}
# In compute-capability order (sm_90 before sm_120), as listings and error messages show them.
ARCHS = tuple(sorted(FLAG_ARCHS + tuple(ATTR_ARCHS),
                     key=lambda a: (int(a[3:].rstrip("abcdefghijklmnopqrstuvwxyz")), a)))
ALIASES = {
    "p100": "sm_60",
    "v100": "sm_70",
    "t4": "sm_75",
    "a100": "sm_80",
    "a30": "sm_80",
    "a10": "sm_86",
    "a40": "sm_86",
    "rtx3090": "sm_86",
    "a6000": "sm_86",
    "orin": "sm_87",
    "l4": "sm_89",
    "l40s": "sm_89",
    "rtx4090": "sm_89",
    "h100": "sm_90",
    "h200": "sm_90",
    "gh200": "sm_90",
    "b200": "sm_100",
    "gb200": "sm_100",
    "b300": "sm_103",
    "rtx5090": "sm_120",
    "rtx5080": "sm_120",
    "dgx-spark": "sm_121",
}

_WGP = (
    "wgp = <compute = fp64|fp32|fp16|int64|int32|int16|int8, storage = b64|b32|b16|b8, "
    "subgroup = shuffle|arithmetic, dot = dp4xi8toi32, mma = [<NV_MMA_SYNC_F32_16x8x16_F16>, "
    "<NV_MMA_SYNC_F16_16x8x16_F16>, <NV_MMA_SYNC_F32_16x8x16_BF16>, <NV_WMMA_F32_16x16x16_F16>, "
    "<NV_WMMA_F16_16x16x16_F16>], subgroup_size_choices = [32], "
    "max_workgroup_sizes = [1024, 1024, 64], max_thread_count_per_workgroup = 1024, "
    "max_workgroup_memory_bytes = 232448, "
    "max_workgroup_counts = [2147483647, 65535, 65535]>"
)


def _device_targets_attr(arch: str, features: str) -> str:
    exe = (
        f'#hal.executable.target<"cuda", "cuda-nvptx-fb", {{iree_codegen.target_info = '
        f'#iree_gpu.target<arch = "{arch}", features = "{features}", {_WGP}>}}>'
    )
    return f'[#hal.device.target<"cuda", [{exe}]> : !hal.device]'


@register_target("cuda")
class Cuda:
    kind = "cuda"

    def info(self) -> KindInfo:
        return KindInfo(
            kind="cuda",
            default="cuda:sm_80",
            archs=ARCHS,
            aliases=dict(ALIASES),
            notes="sm_90+ are declared in the module (IREE 3.13's flag table lacks them)",
        )

    def resolve(self, parts: list[str]) -> TargetSpec:
        arch = pick_arch(
            "cuda", parts, archs=ARCHS, aliases=ALIASES, default="sm_80"
        )
        if arch in ATTR_ARCHS:
            return TargetSpec(
                target=f"cuda:{arch}",
                kind="cuda",
                arch=arch,
                flags=(),
                driver="cuda",
                executable_format="cuda-nvptx-fb",
                module_attr=_device_targets_attr(arch, ATTR_ARCHS[arch]),
            )
        return TargetSpec(
            target=f"cuda:{arch}",
            kind="cuda",
            arch=arch,
            flags=("--iree-hal-target-device=cuda", f"--iree-cuda-target={arch}"),
            driver="cuda",
            executable_format="cuda-nvptx-fb",
        )
