"""Import ONNX protobufs into MLIR (torch dialect with ``onnx.*`` operators) with IREE's importer.

Runs inside a worker process: a malformed protobuf or an importer crash must not take the caller
down. External data is refused unless every ``location`` is relative, holds no ``..`` and
resolves inside ``external_data_dir`` (``../../etc/passwd``, ``/etc/passwd`` are
``invalid_graph``, checked before any file is opened); with no directory allowed, any external
data is refused.

Weights apart (``import_model(..., externalize=True)``): each initializer that holds weights
(``holds_weights``) becomes a ``util.global`` read from ``#stream.parameter.named<"model"::NAME>``
(IREE's own ``IREENodeImporter``, as ``iree-import-onnx --externalize-params`` does) and its values
go into a parameter archive (``.irpa``, ``iree.runtime.ParameterIndex.create_archive_file``); the
imported module then holds code, names, shapes and dtypes only. Small integer initializers (shape
tensors, axes, indices) and 0-d scalars stay inline: the ONNX-to-torch conversion needs some of
them as constants (an externalized i64 Reshape shape does not lower). Constant *nodes* are code and
stay inline too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kiln.dialects.allowlist import check_module
from kiln.errors import InvalidGraph

if TYPE_CHECKING:
    import onnx as onnx_t
    from iree.compiler import ir


def load_model(
    data: bytes, *, external_data_dir: str | None, side_files: Collection[str] | None = None
) -> onnx_t.ModelProto:
    """Parse ``data``; read the external data it names from ``external_data_dir``.

    Every ``location`` is checked before any file is opened (``invalid_graph`` for one that is
    absolute or leaves the directory). ``side_files`` (an upload's, relative ``/`` names): the
    model must name each of them (a file it does not name is ``invalid_graph``)."""
    import onnx
    from google.protobuf.message import DecodeError

    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise InvalidGraph(f"not a valid ONNX protobuf: {exc}") from None
    if not model.HasField("graph") or not model.opset_import:
        raise InvalidGraph("not a valid ONNX model: no graph or no opset_import")
    named = _check_external_data(model, external_data_dir)
    if side_files is not None:
        unnamed = sorted(set(side_files) - named)
        if unnamed:
            raise InvalidGraph(
                f"the upload holds {len(unnamed)} file(s) the model does not name "
                f"(first: {unnamed[0][:128]!r}); send only its external-data files",
                detail={"unnamed": [n[:128] for n in unnamed[:20]]},
            )
    if external_data_dir is not None and named:
        from onnx.external_data_helper import load_external_data_for_model

        try:
            load_external_data_for_model(model, external_data_dir)
        except (OSError, ValueError, onnx.checker.ValidationError) as exc:  # a file missing
            raise InvalidGraph(f"cannot load the model's external data: {exc}") from None
    return model


def _tensors(model: onnx_t.ModelProto):
    from onnx.external_data_helper import _get_all_tensors

    return _get_all_tensors(model)


def _check_external_data(model: onnx_t.ModelProto, allowed_dir: str | None) -> set[str]:
    """The normalized ``location`` of every external tensor, each checked to stay inside
    ``allowed_dir`` (resolving links); ``InvalidGraph`` for any external data without one."""
    import onnx

    root = Path(allowed_dir).resolve() if allowed_dir else None
    named: set[str] = set()
    for t in _tensors(model):
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        entries = {e.key: e.value for e in t.external_data}
        loc = entries.get("location", "")
        if root is None:
            raise InvalidGraph(
                f"tensor {t.name[:64]!r} keeps its data in an external file ({loc[:128]!r}); "
                "external data is accepted from the model's local directory (kiln compile) or "
                "uploaded beside it (a tar body, docs/api.md)"
            )
        parts = [p for p in loc.split("/") if p not in ("", ".")]
        if (not parts or os.path.isabs(loc) or "\x00" in loc or "\\" in loc
                or re.match(r"^[A-Za-z]:", loc)):
            raise InvalidGraph(f"tensor {t.name[:64]!r}: invalid external data location {loc[:128]!r}")
        if ".." in parts or not (root / loc).resolve().is_relative_to(root):
            raise InvalidGraph(
                f"tensor {t.name[:64]!r}: external data location {loc[:128]!r} points outside "
                f"the model's directory"
            )
        named.add("/".join(parts))
    return named


#: The scope of every externalized parameter (the runtime provider's scope; kiln.torch's too).
PARAM_SCOPE = "model"
#: Initializers of at least this many elements are externalized whatever their type
#: (``iree-import-onnx``'s default ``--num-elements-threshold``).
ELEMENTS_THRESHOLD = 100
_FLOAT_TYPES = frozenset({1, 10, 11, 16})  # FLOAT, FLOAT16, DOUBLE, BFLOAT16
# Integer types stored byte-aligned like numpy's (BOOL is not: IREE packs i1 parameters).
_INT_TYPES = frozenset({2, 3, 4, 5, 6, 7, 12, 13})
# Operands the ONNX-to-torch conversion reads as constants (sizes, scales, pads).
_CONSTANT_OPERANDS = {"Resize": {1, 2, 3}, "Upsample": {1}, "Pad": {1, 2, 3}}


def holds_weights(t: onnx_t.TensorProto, *, constant_operand: bool = False) -> bool:
    """Whether an initializer is a weight to externalize: a floating-point tensor of at least 2
    elements, or an integer one of at least ``ELEMENTS_THRESHOLD``; never one read as a constant
    (``constant_operand``: a Resize scale, a Pad width), never booleans or sub-byte types."""
    n = 1
    for d in t.dims:
        n *= d
    if constant_operand:
        return False
    if t.data_type in _FLOAT_TYPES:
        return n >= 2
    return t.data_type in _INT_TYPES and n >= ELEMENTS_THRESHOLD


def import_model(
    model: onnx_t.ModelProto, *, context: ir.Context, externalize: bool = False
) -> tuple[ir.Module, bytes | None]:
    """Shape-infer and import; raise ``InvalidGraph`` when the importer refuses the model.

    Returns the module and, with ``externalize``, the parameter archive's bytes (None when the
    model has no weights to externalize). ``context`` must have ``util`` and ``torch_c`` loaded
    when externalizing (the importer creates their ops without parsing them)."""
    import onnx

    from kiln.dialects.onnx_fixes import fix_model
    from kiln.dialects.onnx_shapes import fold_shapes, needs_folding

    model, _ = fix_model(model)  # rewrites of forms IREE cannot lower; never raises
    try:
        model = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # noqa: BLE001 - shape inference is best effort (the importer needs less)
        pass
    folded = needs_folding(model)
    if folded:  # shapes the graph computes become constants (kiln.dialects.onnx_shapes)
        model = fold_shapes(model)
    try:
        module, imp = _import(model, context=context, externalize=externalize)
    except InvalidGraph:
        if folded:
            raise
        retry = fold_shapes(model)
        if retry is model:
            raise
        module, imp = _import(retry, context=context, externalize=externalize)
    # ONNX carries free-form strings (attribute values and names, metadata) into the module: the
    # imported IR is held to the same allow-list as MLIR sent as such.
    check_module(module, what="the imported ONNX model")
    return module, (_archive(imp) if externalize else None)


def _import(model: onnx_t.ModelProto, *, context: ir.Context, externalize: bool
            ) -> tuple[ir.Module, Any]:
    """IREE's importer on ``model``: the module and the node importer that filled it."""
    from iree.compiler.extras import onnx_importer

    try:
        info = onnx_importer.ModelInfo(model)
        module = info.create_module(context=context)
        if externalize:
            imp = _externalizing_importer(info, module, model)
        else:
            imp = onnx_importer.NodeImporter.define_function(info.main_graph, module.operation)
        imp.import_all()
    except (onnx_importer.OnnxImportError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidGraph(f"the ONNX importer refused the model: {type(exc).__name__}: {exc}") from None
    return module, imp


def _externalizing_importer(info: Any, module: ir.Module, model: onnx_t.ModelProto) -> Any:
    """IREE's ``IREENodeImporter`` deciding per initializer with ``holds_weights``."""
    import onnx
    from iree.compiler.extras import onnx_importer
    from iree.compiler.tools.import_onnx.importer_externalization_overrides import (
        IREENodeImporter,
        ParamData,
    )

    constant = {
        name
        for node in model.graph.node
        for i, name in enumerate(node.input)
        if i in _CONSTANT_OPERANDS.get(node.op_type, ())
    }

    class Importer(IREENodeImporter):  # type: ignore[misc]
        def import_initializer(self, initializer: Any, extern_name: str | None = None) -> Any:
            if isinstance(initializer, onnx.TensorProto) and not holds_weights(
                initializer, constant_operand=initializer.name in constant
            ):
                # the plain importer's inline literal
                return onnx_importer.NodeImporter.import_initializer(self, initializer, extern_name)
            if isinstance(initializer, onnx.TensorProto) and not initializer.name and extern_name:
                # A Constant node's tensor has no name of its own: IREE's importer would name
                # its parameter at random (``584__k``), so the graph's digest changed from one
                # import to the next and the archive (keyed by ``extern_name``) did not hold
                # it. Give it the name of the value it defines.
                named = onnx.TensorProto()
                named.CopyFrom(initializer)
                named.name = extern_name
                initializer = named
            return super().import_initializer(initializer, extern_name)

    # Threshold 0: ``Importer.import_initializer`` has already decided. The paths are unused
    # (``_archive`` writes the archive).
    data = ParamData(param_bit_threshold=None, num_elements_threshold=0,
                     params_scope=PARAM_SCOPE, data_dir="", param_path="",
                     input_index_threshold=None)
    imp = IREENodeImporter.define_function(info.main_graph, module.operation, data)
    # define_function builds an IREENodeImporter whatever class it is called on.
    imp.__class__ = Importer
    return imp


def _archive(imp: Any) -> bytes | None:
    """The ``.irpa`` of the initializers ``imp`` externalized, keyed as the IR names them;
    None when there were none. The bytes depend only on the names, order and values."""
    import tempfile

    import iree.runtime as rt
    from onnx import numpy_helper

    if not imp.globals:
        return None
    index = rt.ParameterIndex()
    seen: set[str] = set()
    held = []
    for name, _symbol in imp.globals:
        key = imp.sanitize_name(name)  # what ``#stream.parameter.named`` names
        if key in seen:
            raise InvalidGraph(f"two initializers are both named {key[:64]!r} once sanitized")
        seen.add(key)
        try:
            array = numpy_helper.to_array(imp._gi.initializer_map[name])
        except (ValueError, TypeError) as exc:  # dims that its data does not fill, ...
            raise InvalidGraph(
                f"initializer {name[:64]!r} cannot be read: {exc}", detail={"initializer": name[:64]}
            ) from None
        held.append(array)
        index.add_buffer(key, array)
    with tempfile.TemporaryDirectory(prefix="kiln-params-") as tmp:
        path = os.path.join(tmp, "params.irpa")
        index.create_archive_file(path)
        with open(path, "rb") as f:
            return f.read()
