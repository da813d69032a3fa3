"""The model zoo (``bench/zoo.py``) and the CPU matrix's structural check
(``bench/cpu_matrix.py``).

The zoo needs the ``bench`` extra (torch, onnxruntime); without it those tests are skipped. The
structural check needs only Kiln and the compiler.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import cpu_matrix, zoo
from kiln.compiler.pipeline import Pipeline

MLP = (ROOT / "examples" / "mlp.mlir").read_bytes()


def test_zoo_builds_once_and_matches_its_references(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("onnxruntime")
    monkeypatch.setattr(zoo, "ZOO_DIR", tmp_path)
    m = zoo.build("gru", 1)
    onnx_file = m.path / "model.onnx"
    assert onnx_file.exists() and (m.path / "ref.npz").exists()
    assert m.inputs[0].shape == (1, 32, 128)
    assert m.ref_ort[0].shape == m.ref_torch[0].shape == (1, 32, 64)
    np.testing.assert_allclose(m.ref_ort[0], m.ref_torch[0], rtol=1e-4, atol=1e-5)
    stamp = onnx_file.stat().st_mtime_ns
    again = zoo.build("gru", 1)  # served from the folder: nothing exported again
    assert onnx_file.stat().st_mtime_ns == stamp
    np.testing.assert_array_equal(again.inputs[0], m.inputs[0])
    assert m.path.parent.name == f"v{zoo.ZOO_VERSION}"


def test_zoo_cli_lists_every_model() -> None:
    import io

    out = io.StringIO()
    assert zoo.main(["--list"], stdout=out) == 0
    names = {line.split()[0] for line in out.getvalue().splitlines()[1:]}
    assert names == set(zoo.SPECS) and len(names) >= 16


@pytest.mark.parametrize(
    ("target", "arch"),
    [("cpu:aarch64:neoverse-n1", "aarch64"), ("cpu:riscv64", "riscv64"),
     ("cpu:x86_64:haswell", "x86_64")],
)
def test_structure_check_names_the_target_machine(
    pipeline: Pipeline, target: str, arch: str
) -> None:
    res = pipeline.compile(MLP, targets=[target])
    assert not res.errors
    vmfb = res.artifacts[0].data
    assert vmfb is not None
    assert cpu_matrix.check_structure(vmfb, target) == ""
    assert set(cpu_matrix.elf_machines(vmfb)) == {cpu_matrix.ELF_MACHINE[arch]}
    other = "cpu:riscv64" if arch != "riscv64" else "cpu:x86_64:haswell"
    assert "e_machine" in cpu_matrix.check_structure(vmfb, other)
    assert cpu_matrix.check_structure(b"not a module", target).startswith("not a VM module")
