"""Import ONNX protobufs into MLIR (torch dialect with ``onnx.*`` operators) with IREE's importer.

Runs inside a worker process: a malformed protobuf or an importer crash must not take the caller
down. External data is refused unless every ``location`` resolves inside ``external_data_dir``
(``../../etc/passwd`` is ``invalid_graph``); with no directory allowed, any external data is refused.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from kiln.errors import InvalidGraph

if TYPE_CHECKING:
    import onnx as onnx_t
    from iree.compiler import ir


def load_model(data: bytes, *, external_data_dir: str | None) -> onnx_t.ModelProto:
    import onnx
    from google.protobuf.message import DecodeError

    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise InvalidGraph(f"not a valid ONNX protobuf: {exc}") from None
    if not model.HasField("graph") or not model.opset_import:
        raise InvalidGraph("not a valid ONNX model: no graph or no opset_import")
    _check_external_data(model, external_data_dir)
    if external_data_dir is not None and _has_external_data(model):
        from onnx.external_data_helper import load_external_data_for_model

        try:
            load_external_data_for_model(model, external_data_dir)
        except (OSError, ValueError) as exc:
            raise InvalidGraph(f"cannot load the model's external data: {exc}") from None
    return model


def _tensors(model: onnx_t.ModelProto):
    from onnx.external_data_helper import _get_all_tensors

    return _get_all_tensors(model)


def _has_external_data(model: onnx_t.ModelProto) -> bool:
    import onnx

    return any(t.data_location == onnx.TensorProto.EXTERNAL for t in _tensors(model))


def _check_external_data(model: onnx_t.ModelProto, allowed_dir: str | None) -> None:
    import onnx

    root = Path(allowed_dir).resolve() if allowed_dir else None
    for t in _tensors(model):
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        entries = {e.key: e.value for e in t.external_data}
        loc = entries.get("location", "")
        if root is None:
            raise InvalidGraph(
                f"tensor {t.name[:64]!r} keeps its data in an external file ({loc[:128]!r}); "
                "external data is only accepted from a local directory (kiln compile) — send the "
                "model with its weights embedded"
            )
        if not loc or os.path.isabs(loc) or "\x00" in loc:
            raise InvalidGraph(f"tensor {t.name[:64]!r}: invalid external data location {loc[:128]!r}")
        path = (root / loc).resolve()
        if not path.is_relative_to(root):
            raise InvalidGraph(
                f"tensor {t.name[:64]!r}: external data location {loc[:128]!r} points outside "
                f"the model's directory"
            )


def import_model(model: onnx_t.ModelProto, *, context: ir.Context) -> ir.Module:
    """Shape-infer and import; raise ``InvalidGraph`` when the importer refuses the model."""
    import onnx
    from iree.compiler.extras import onnx_importer

    from kiln.dialects.onnx_fixes import fix_model

    model, _ = fix_model(model)  # rewrites of forms IREE cannot lower; never raises
    try:
        model = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # noqa: BLE001 - shape inference is best effort (the importer needs less)
        pass
    try:
        info = onnx_importer.ModelInfo(model)
        module = info.create_module(context=context)
        imp = onnx_importer.NodeImporter.define_function(info.main_graph, module.operation)
        imp.import_all()
    except (onnx_importer.OnnxImportError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidGraph(f"the ONNX importer refused the model: {type(exc).__name__}: {exc}") from None
    return module
