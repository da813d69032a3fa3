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
stay inline too. The archive is written to a file; weights kept in external files
(``load_model(defer_weights=True)``) are mapped from those files while it is written, so a
model's weights are never held in the worker's memory whole.
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
    data: bytes, *, external_data_dir: str | None, side_files: Collection[str] | None = None,
    defer_weights: bool = False,
) -> onnx_t.ModelProto:
    """Parse ``data``; read the external data it names from ``external_data_dir``.

    Every ``location`` is checked before any file is opened (``invalid_graph`` for one that is
    absolute or leaves the directory). ``side_files`` (an upload's, relative ``/`` names): the
    model must name each of them (a file it does not name is ``invalid_graph``).
    ``defer_weights`` (weights apart): the graph initializers that ``holds_weights`` and keep
    their data in a file stay there; ``import_model(..., archive_path=)`` copies them from the
    file into the archive, so a model's weights are never held in memory whole."""
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
        deferred = {id(t) for t in _deferrable(model)} if defer_weights else set()
        _load_external(model, external_data_dir, skip=deferred)
    return model


def _load_external(model: onnx_t.ModelProto, base_dir: str, *, skip: Collection[int] = ()
                   ) -> None:
    """Read the external data of every tensor whose ``id`` is not in ``skip`` into the model
    (``invalid_graph`` when a file is missing or short)."""
    import onnx
    from onnx.external_data_helper import load_external_data_for_tensor, uses_external_data

    try:
        for t in _tensors(model):
            if uses_external_data(t) and id(t) not in skip:
                load_external_data_for_tensor(t, base_dir)
                t.data_location = onnx.TensorProto.DEFAULT
                del t.external_data[:]
    except (OSError, ValueError, onnx.checker.ValidationError) as exc:  # a file missing
        raise InvalidGraph(f"cannot load the model's external data: {exc}") from None


def _deferrable(model: onnx_t.ModelProto) -> list[onnx_t.TensorProto]:
    """The graph initializers kept in external files that an externalizing import puts in the
    archive whole: weights (``holds_weights``) whose stored bytes are what
    ``numpy_helper.to_array`` gives (not BFLOAT16, which onnx converts)."""
    import onnx

    constant = _constant_operands(model)
    return [
        t for t in model.graph.initializer
        if t.data_location == onnx.TensorProto.EXTERNAL and t.data_type in _RAW_TYPES
        and holds_weights(t, constant_operand=t.name in constant)
    ]


def _constant_operands(model: onnx_t.ModelProto) -> set[str]:
    return {
        name
        for node in model.graph.node
        for i, name in enumerate(node.input)
        if i in _CONSTANT_OPERANDS.get(node.op_type, ())
    }


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
#: Types whose external bytes are the archive's bytes as they are (little-endian raw data).
_RAW_TYPES = frozenset({1, 10, 11}) | _INT_TYPES
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
    model: onnx_t.ModelProto, *, context: ir.Context, externalize: bool = False,
    archive_path: str | None = None, external_data_dir: str | None = None,
) -> tuple[ir.Module, tuple[str, int] | None]:
    """Shape-infer and import; raise ``InvalidGraph`` when the importer refuses the model.

    With ``externalize`` the parameter archive is written to ``archive_path`` (required then) and
    its ``("sha256:<hex>", size)`` returned; None when the model has no weights to externalize
    (nothing is written). Weights ``load_model(defer_weights=True)`` left in their files are read
    from ``external_data_dir``. ``context`` must have ``util`` and ``torch_c`` loaded when
    externalizing (the importer creates their ops without parsing them)."""
    import onnx

    from kiln.dialects.onnx_fixes import _has_candidates, fix_model
    from kiln.dialects.onnx_shapes import fold_shapes, needs_folding

    if externalize and archive_path is None:
        raise ValueError("externalize needs an archive_path")
    if external_data_dir is not None and _has_candidates(model):
        # The fixes read every initializer's values: load what load_model left in its files.
        _load_external(model, external_data_dir)
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
    if not externalize:
        return module, None
    assert archive_path is not None
    return module, _archive(imp, path=archive_path, external_data_dir=external_data_dir)


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

    constant = _constant_operands(model)

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


def _archive(imp: Any, *, path: str, external_data_dir: str | None) -> tuple[str, int] | None:
    """Write the ``.irpa`` of the initializers ``imp`` externalized, keyed as the IR names them,
    to ``path``; its ``("sha256:<hex>", size)``, or None (nothing written) when there were none.
    The bytes depend only on the names, order and values. A weight still in its external file is
    mapped from it, not read into memory."""
    import hashlib

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
        t = imp._gi.initializer_map[name]
        try:
            if t.external_data and external_data_dir is not None:
                array = _mapped(t, external_data_dir)
            else:
                array = numpy_helper.to_array(t)
        except (ValueError, TypeError, OSError) as exc:  # dims that its data does not fill, ...
            raise InvalidGraph(
                f"initializer {name[:64]!r} cannot be read: {exc}", detail={"initializer": name[:64]}
            ) from None
        held.append(array)
        index.add_buffer(key, array)
    index.create_archive_file(path)
    del index, held
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return "sha256:" + h.hexdigest(), size


def _mapped(t: onnx_t.TensorProto, base_dir: str) -> Any:
    """The bytes of an external tensor as a read-only map of its file (``ValueError`` when the
    file does not hold as many bytes as the tensor's dims and type need)."""
    import numpy as np
    from onnx import helper

    entries = {e.key: e.value for e in t.external_data}
    offset = int(entries.get("offset") or 0)
    n = 1
    for d in t.dims:
        n *= d
    need = n * np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize
    length = int(entries["length"]) if entries.get("length") else None
    file = os.path.join(base_dir, entries["location"])  # checked by _check_external_data
    have = os.path.getsize(file) - offset
    if (length is not None and length != need) or have < need:
        raise ValueError(f"its external data holds {min(have, length or have)} bytes, "
                         f"its dims and type need {need}")
    if need == 0:
        return np.zeros(0, np.uint8)
    return np.memmap(file, dtype=np.uint8, mode="r", offset=offset, shape=(need,))
