"""Target parsing, normalization and the allow-list (no compiler runs here)."""

from __future__ import annotations

import pytest

from kiln.errors import UnsupportedTarget
from kiln.targets import parse_target


@pytest.mark.parametrize(
    ("given", "normalized"),
    [
        ("cpu", "cpu:x86_64:generic"),
        ("cpu:x86_64", "cpu:x86_64:generic"),
        ("cpu:x86_64:znver3", "cpu:x86_64:znver3"),
        ("cpu:aarch64:neoverse-v1", "cpu:aarch64:neoverse-v1"),
        ("cpu:arm64", "cpu:aarch64:generic"),
        ("cpu:riscv64", "cpu:riscv64:generic-rv64"),
        ("cpu:x86_64:znver3:+fma,+avx2", "cpu:x86_64:znver3:+avx2,+fma"),
        ("cuda:a100", "cuda:sm_80"),
        ("cuda:SM_89", "cuda:sm_89"),
        ("cuda:h100", "cuda:sm_90"),
        ("cuda:sm_100", "cuda:sm_100"),
        ("rocm:mi300x", "rocm:gfx942"),
        ("rocm:gfx90a", "rocm:gfx90a"),
        ("vulkan", "vulkan:generic"),
        ("vulkan:rdna3", "vulkan:rdna3"),
        ("metal", "metal:macos"),
        ("metal:ios", "metal:ios"),
    ],
)
def test_aliases_normalize(given: str, normalized: str) -> None:
    assert parse_target(given).target == normalized
    # Normalization is idempotent: the normalized form parses to itself.
    assert parse_target(normalized).target == normalized


@pytest.mark.parametrize(
    "bad",
    [
        "tpu",
        "cuda:sm_99",
        "rocm:gfx9999",
        "vulkan:bogus",
        "metal:watchos",
        "cpu:sparc",
        "cpu:x86_64:host",
        "cpu:x86_64:not-a-cpu",
        "cpu:x86_64:generic:+not-a-feature",
        "cpu:x86_64:generic:avx2",
        "--iree-hal-target-device=cuda",
        "cuda:sm_80 --iree-flag",
        "cuda:sm_80:extra",
        "",
    ],
)
def test_unknown_targets_are_refused_with_the_valid_values(bad: str) -> None:
    with pytest.raises(UnsupportedTarget) as info:
        parse_target(bad)
    err = info.value
    assert err.code == "unsupported_target"
    assert err.detail["valid"], "the error lists what is valid"


def test_unsupported_cuda_lists_the_archs() -> None:
    with pytest.raises(UnsupportedTarget) as info:
        parse_target("cuda:sm_99")
    assert "sm_80" in info.value.detail["valid"]["cuda"]
    assert "sm_90" in info.value.message


def test_cpu_default_is_portable_not_host() -> None:
    spec = parse_target("cpu")
    assert "--iree-llvmcpu-target-cpu=generic" in spec.flags
    assert not any("host" in f for f in spec.flags)


def test_sm90_is_declared_in_the_module_not_by_flag() -> None:
    spec = parse_target("cuda:sm_90")
    assert spec.flags == ()
    assert spec.module_attr is not None and 'arch = "sm_90"' in spec.module_attr
    assert "+ptx80" in spec.module_attr


def test_registry_is_complete_under_concurrent_first_use() -> None:
    import subprocess
    import sys

    # A fresh interpreter: 8 threads parse targets of every kind at once, first use included.
    code = (
        "import concurrent.futures as f\n"
        "from kiln.targets import parse_target\n"
        "ts = ['cpu', 'vulkan', 'cuda:sm_80', 'rocm:gfx942', 'metal'] * 8\n"
        "with f.ThreadPoolExecutor(8) as ex: print(sorted({s.kind for s in ex.map(parse_target, ts)}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['cpu', 'cuda', 'metal', 'rocm', 'vulkan']"
