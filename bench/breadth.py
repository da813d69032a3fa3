"""A breadth ratchet: every Hugging Face ``transformers`` model type, small and randomly
initialized, through both of Kiln's routes on CPU, each failure classified by whose it is.

For each model type of ``MODEL_MAPPING_NAMES`` (the base models ``AutoModel`` builds), a child
process:

1. builds the type's config with small sizes (hidden size 32, 1-2 layers, 2-4 heads, vocab 128,
   image 32×32 where it has one; ``shrink``), instantiates ``AutoModel.from_config`` under a
   seed from the name, and draws every matrix from N(0, 0.05) so outputs are not constant;
2. feeds it ``input_ids`` (1×8) for a text model, ``pixel_values`` (1×C×32×32) for a vision
   model (plus ``decoder_input_ids`` for an encoder-decoder); anything else (audio,
   multimodal, time series) is ``skipped`` with reason ``inputs``. The model's first output
   (``last_hidden_state`` for most) is the result, eager torch the reference;
3. ONNX route: ``torch.onnx.export`` with the default exporter (dynamo), the TorchScript one
   (``dynamo=False``, opset 17) when that fails; ``kiln.compiler.pipeline.Pipeline`` compiles
   it for ``cpu`` in this process, ``iree.runtime`` runs it (``local-sync``);
4. torch route: ``kiln.torch.compile(model, (x,), target="cpu", driver="local-sync")``.

Classes, per route:

| class | meaning |
|---|---|
| ``ok`` | compiled, ran, max abs error ≤ 1e-3 × max(1, max abs reference) |
| ``exporter`` | ``torch.onnx.export`` (both exporters) or ``torch.export`` failed |
| ``iree`` | IREE's importer (ONNX importer, FX importer) or ``iree-compile`` failed on a graph |
|  | the exporter produced: the error is IREE's diagnostic, passed on by Kiln |
| ``kiln`` | Kiln refused or crashed on its own account (allow-list, validation, rewrites, a |
|  | Python error in Kiln), or a wrong answer where raw ``iree-compile`` gets it right |
| ``mismatch`` | compiled and ran, wrong answer, and raw IREE (``iree-import-onnx`` + |
|  | ``iree-compile`` defaults) is wrong too, or could not be checked (torch route) |
| ``skipped`` | not run: ``inputs`` (not fed simply), ``config``/``build``/``eager`` (the |
|  | model itself failed at small sizes), ``timeout`` (the child ran out of time) |

The split between ``kiln`` and ``iree`` reads the error: Kiln's ``CompileError`` carries
``iree-compile``'s diagnostics and ``InvalidGraph("the ONNX importer refused ...")`` /
``ExportError("importing the exported program failed ...")`` IREE's importers'; every other Kiln
error is Kiln's. A ``mismatch`` on the ONNX route is compiled again with raw IREE: right there
means Kiln made it wrong (``kiln``).

Results go to ``bench/breadth.json`` (merged: a run over some types updates those), the counts
are printed per route. One child per model (``--timeout`` seconds each), so a hang or a crash
costs that model only.

    .venv/bin/python bench/breadth.py --limit 40
    .venv/bin/python bench/breadth.py --only bert,vit --jobs 1
    .venv/bin/python bench/breadth.py --list
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import zlib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
JSON_PATH = ROOT / "bench" / "breadth.json"
CLASSES = ("ok", "kiln", "iree", "exporter", "mismatch", "skipped")
ROUTES = ("onnx", "torch")
SEQ = 8
IMAGE = 32
STD = 0.05
RTOL = 1e-3
MAX_PARAMS = 20_000_000

# Common encoders and decoders first: a bounded run covers what most users send.
FIRST = [
    "bert", "roberta", "distilbert", "albert", "electra", "gpt2", "gpt_neo", "opt", "llama",
    "mistral", "qwen2", "phi", "gemma", "bloom", "t5", "bart", "vit", "deit", "beit", "swin",
    "convnext", "resnet", "mobilevit", "dinov2", "deberta", "xlm-roberta", "mpnet", "camembert",
    "gptj", "falcon", "mobilenet_v2", "efficientnet", "regnet", "levit", "poolformer", "segformer",
]

# Scalar config attributes set when the config has them.
SMALL: dict[str, Any] = {
    "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 64, "vocab_size": 128,
    "max_position_embeddings": 64, "n_positions": 64, "image_size": IMAGE, "patch_size": 8,
    "d_model": 32, "encoder_layers": 1, "decoder_layers": 1, "encoder_attention_heads": 4,
    "decoder_attention_heads": 4, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "d_ff": 64,
    "num_layers": 2, "num_decoder_layers": 1, "num_heads": 4, "n_embd": 32, "n_layer": 2,
    "n_head": 4, "n_inner": 64, "ffn_dim": 64, "embed_dim": 32, "head_dim": 8, "d_kv": 8,
    "embedding_size": 32, "projection_dim": 32, "type_vocab_size": 2, "initializer_range": STD,
    "use_cache": False, "num_channels": 3, "rotary_dim": 8, "window_size": 4,
}
# List attributes (per-stage sizes of hierarchical vision models): the same length, small.
SMALL_LISTS: dict[str, Any] = {
    "depths": lambda n: [1] * n, "hidden_sizes": lambda n: [16 * (i + 1) for i in range(n)],
    "num_heads": lambda n: [1] * n, "embed_dims": lambda n: [16 * (i + 1) for i in range(n)],
    "num_attention_heads": lambda n: [1] * n,
}


def model_types() -> list[str]:
    """Every model type ``AutoModel`` knows, the common ones first."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    first = [n for n in FIRST if n in MODEL_MAPPING_NAMES]
    order = {"text": 0, "vision": 0, "seq2seq": 1, "other": 2}
    rest = sorted((n for n in MODEL_MAPPING_NAMES if n not in first),
                  key=lambda n: (order[input_kind(n)], n))
    return first + rest


def input_kind(name: str) -> str:
    """``text``, ``seq2seq``, ``vision`` or ``other`` (not fed simply)."""
    from transformers.models.auto import modeling_auto as ma

    def has(*maps: str) -> bool:
        return any(name in getattr(ma, m, {}) for m in maps)

    if has("MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES", "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES",
           "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES", "MODEL_FOR_CTC_MAPPING_NAMES",
           "MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES",
           "MODEL_FOR_TIME_SERIES_PREDICTION_MAPPING_NAMES",
           "MODEL_FOR_VISUAL_QUESTION_ANSWERING_MAPPING_NAMES",
           "MODEL_FOR_ZERO_SHOT_IMAGE_CLASSIFICATION_MAPPING_NAMES"):
        return "other"
    if has("MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES"):
        return "seq2seq"
    if has("MODEL_FOR_MASKED_LM_MAPPING_NAMES", "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
           "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES",
           "MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES", "MODEL_FOR_TEXT_ENCODING_MAPPING_NAMES"):
        return "text"
    if has("MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES", "MODEL_FOR_IMAGE_MAPPING_NAMES",
           "MODEL_FOR_BACKBONE_MAPPING_NAMES", "MODEL_FOR_SEMANTIC_SEGMENTATION_MAPPING_NAMES",
           "MODEL_FOR_DEPTH_ESTIMATION_MAPPING_NAMES"):
        return "vision"
    return "other"


def shrink(config: Any) -> Any:
    """``config`` with the small sizes of ``SMALL`` / ``SMALL_LISTS`` where it has the attribute."""
    for key, value in SMALL.items():
        old = getattr(config, key, None)
        if old is None or isinstance(old, list | tuple | dict):
            continue
        if isinstance(old, bool) != isinstance(value, bool):
            continue
        setattr(config, key, value)
    for key, make in SMALL_LISTS.items():
        old = getattr(config, key, None)
        if isinstance(old, list | tuple) and old and all(isinstance(v, int) for v in old):
            setattr(config, key, make(len(old)))
    if hasattr(config, "attn_implementation"):
        config._attn_implementation = "eager"
    return config


def first_output(model: Any, extra: dict[str, Any]) -> Any:
    """A module calling ``model(x, **extra)`` and returning its first tensor output
    (``last_hidden_state`` for most), in eval mode."""
    import torch

    class First(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, x: Any) -> Any:
            out = self.model(x, **extra)
            items = out.to_tuple() if hasattr(out, "to_tuple") else out
            if isinstance(items, torch.Tensor):
                return items
            return next(t for t in items if isinstance(t, torch.Tensor))

    return First().eval()


def build(name: str) -> tuple[Any, Any, dict[str, Any]]:
    """(module, example input, info); raises ``Skip`` when the type cannot be run simply."""
    import torch
    from transformers import AutoConfig, AutoModel

    kind = input_kind(name)
    if kind == "other":
        raise Skip("inputs", "not a text or vision model (audio, multimodal, time series)")
    seed = zlib.crc32(name.encode())
    torch.manual_seed(seed)
    try:
        config = shrink(AutoConfig.for_model(name))
    except Exception as exc:  # noqa: BLE001 (the type's own config failed)
        raise Skip("config", _short(exc)) from None
    try:
        model = AutoModel.from_config(config, attn_implementation="eager")
    except Exception:  # noqa: BLE001 (not every model takes the keyword)
        try:
            model = AutoModel.from_config(config)
        except Exception as exc:  # noqa: BLE001 (the model does not build at these sizes)
            raise Skip("build", _short(exc)) from None
    n = sum(p.numel() for p in model.parameters())
    if n > MAX_PARAMS:
        raise Skip("build", f"{n} parameters at the small sizes")
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, STD)
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    extra: dict[str, Any] = {}
    if kind == "vision":
        ch = int(getattr(config, "num_channels", 3) or 3)
        x = torch.randn(1, ch, IMAGE, IMAGE, generator=gen)
    else:
        vocab = int(getattr(config, "vocab_size", 128) or 128)
        x = torch.randint(0, min(vocab, 128), (1, SEQ), generator=gen)
        if kind == "seq2seq":
            extra["decoder_input_ids"] = torch.randint(0, min(vocab, 128), (1, 4), generator=gen)
    module = first_output(model, extra)
    return module, x, {"kind": kind, "params": n}


class Skip(Exception):
    def __init__(self, why: str, detail: str) -> None:
        super().__init__(detail)
        self.why = why


def _short(exc: BaseException, n: int = 200) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:n]


def compare(got: np.ndarray, want: np.ndarray) -> tuple[bool, str]:
    """(within tolerance, a short account): max abs error against ``RTOL`` × max(1, scale)."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return False, f"shape {got.shape} != {want.shape}"
    scale = float(np.abs(want).max()) if want.size else 0.0
    err = float(np.abs(got - want).max()) if want.size else 0.0
    if not np.isfinite(err):
        return False, "non-finite output"
    return err <= RTOL * max(1.0, scale), f"max abs err {err:.2e}, scale {scale:.2e}"


def classify_kiln_error(exc: BaseException) -> str:
    """``iree`` when the error passes on IREE's own diagnostics, else ``kiln``."""
    from kiln.errors import CompileError

    text = str(exc)
    if isinstance(exc, CompileError):
        return "iree"
    if text.startswith(("the ONNX importer refused", "importing the exported program failed")):
        return "iree"
    return "kiln"


# -- the routes ----------------------------------------------------------------------------------


def export_onnx(module: Any, x: Any, out: Path) -> str:
    """Write ``out`` (external data beside it when large); returns the exporter used."""
    import torch

    errors = []
    for dynamo in (True, False):
        try:
            with torch.no_grad():
                if dynamo:
                    torch.onnx.export(module, (x,), str(out), dynamo=True, external_data=False,
                                      verbose=False)
                else:
                    torch.onnx.export(module, (x,), str(out), dynamo=False, opset_version=17)
            return "dynamo" if dynamo else "torchscript"
        except Exception as exc:  # noqa: BLE001 (the exporter's failure is the finding)
            errors.append(_short(exc, 150))
    raise ExporterFailed("; ".join(errors))


class ExporterFailed(Exception):
    pass


def raw_iree(onnx_path: Path, x: np.ndarray) -> np.ndarray:
    """``onnx_path`` through ``iree-import-onnx`` and ``iree-compile`` with default flags
    (llvm-cpu, host CPU), run on ``local-sync``: the answer without Kiln."""
    import iree.compiler.tools as ict
    import iree.runtime as rt

    mlir = onnx_path.with_suffix(".mlir")
    subprocess.run([sys.executable, "-m", "iree.compiler.tools.import_onnx", str(onnx_path),
                    "-o", str(mlir)], check=True, capture_output=True, timeout=300)
    vmfb = ict.compile_file(str(mlir), target_backends=["llvm-cpu"],
                            extra_args=["--iree-llvmcpu-target-cpu=host"])
    ctx = rt.SystemContext(config=rt.Config("local-sync"))
    vm = rt.VmModule.copy_buffer(ctx.instance, vmfb)
    ctx.add_vm_module(vm)
    fn = ctx.modules[vm.name]["main_graph"]
    return np.asarray(fn(x).to_host())


def onnx_route(module: Any, x: Any, want: np.ndarray, tmp: Path) -> dict[str, str]:
    from kiln.client.runtime import load_vmfb
    from kiln.compiler.pipeline import Pipeline
    from kiln.errors import KilnError

    path = tmp / "model.onnx"
    try:
        exporter = export_onnx(module, x, path)
    except ExporterFailed as exc:
        return {"class": "exporter", "reason": str(exc)[:300]}
    xin = x.numpy()
    try:
        with Pipeline(workers=1, compile_timeout=600) as pipe:
            res = pipe.compile(path.read_bytes(), targets=["cpu"],
                               external_data_dir=str(tmp))
        if res.errors:
            err = res.errors[0].error
            return {"class": classify_kiln_error(err), "reason": _short(err, 300),
                    "exporter": exporter}
        mod = load_vmfb(res.artifacts[0].data, driver="local-sync",
                        signatures=res.signatures)
        got = mod[res.functions[0]](xin)
        got = got[0] if isinstance(got, list | tuple) else got
    except KilnError as exc:
        return {"class": classify_kiln_error(exc), "reason": _short(exc, 300),
                "exporter": exporter}
    except Exception as exc:  # noqa: BLE001 (a crash inside Kiln is Kiln's)
        return {"class": "kiln", "reason": _short(exc, 300), "exporter": exporter}
    ok, how = compare(np.asarray(got), want)
    if ok:
        return {"class": "ok", "reason": how, "exporter": exporter}
    try:
        raw_ok, raw_how = compare(raw_iree(path, xin), want)
    except Exception as exc:  # noqa: BLE001 (raw IREE failing too leaves it a mismatch)
        return {"class": "mismatch", "reason": f"{how}; raw IREE failed: {_short(exc, 120)}",
                "exporter": exporter}
    cls = "kiln" if raw_ok else "mismatch"
    return {"class": cls, "reason": f"{how}; raw IREE: {raw_how}", "exporter": exporter}


def torch_route(module: Any, x: Any, want: np.ndarray) -> dict[str, str]:
    import torch

    import kiln.torch
    from kiln.errors import KilnError
    from kiln.torch.importer import ExportError

    try:
        fast = kiln.torch.compile(module, (x,), target="cpu", driver="local-sync")
        with torch.no_grad():
            got = fast(x)
    except ExportError as exc:
        text = str(exc)
        cls = "exporter" if text.startswith("torch.export failed") else classify_kiln_error(exc)
        return {"class": cls, "reason": _short(exc, 300)}
    except KilnError as exc:
        cause = exc.__cause__ or exc
        cls = classify_kiln_error(exc)
        if cls == "kiln" and type(exc).__name__ == "LoadFailed":
            # LoadFailed wraps each candidate's error: the first one's decides.
            detail = getattr(exc, "detail", None) or {}
            text = json.dumps(detail)
            cls = "iree" if "compile_failed" in text else "kiln"
        return {"class": cls, "reason": _short(cause, 300)}
    except Exception as exc:  # noqa: BLE001 (a crash inside Kiln is Kiln's)
        return {"class": "kiln", "reason": _short(exc, 300)}
    ok, how = compare(got.detach().numpy(), want)
    return {"class": "ok" if ok else "mismatch", "reason": how}


def run_one(name: str) -> dict[str, Any]:
    """One model type through both routes, in this process."""
    import torch

    t0 = time.perf_counter()
    try:
        module, x, info = build(name)
        with torch.no_grad():
            want = module(x).detach().numpy()
    except Skip as exc:
        skip = {"class": "skipped", "reason": f"{exc.why}: {exc}"[:300]}
        return {"onnx": skip, "torch": skip}
    except Exception as exc:  # noqa: BLE001 (the model fails eagerly at these inputs)
        skip = {"class": "skipped", "reason": f"eager: {_short(exc)}"}
        return {"onnx": skip, "torch": skip}
    info["output"] = list(want.shape)
    info["output_std"] = float(want.std())
    with tempfile.TemporaryDirectory() as tmp:
        onnx = onnx_route(module, x, want, Path(tmp))
    tch = torch_route(module, x, want)
    return {**info, "onnx": onnx, "torch": tch, "wall_s": round(time.perf_counter() - t0, 1)}


def _child(name: str, out: str) -> int:
    import warnings

    warnings.simplefilter("ignore")
    os.environ.setdefault("KILN_CACHE_DIR", tempfile.mkdtemp(prefix="kiln-breadth-"))
    try:
        res = run_one(name)
    except Exception as exc:  # noqa: BLE001 (anything left is the harness's: record it)
        res = {"onnx": {"class": "kiln", "reason": f"harness: {_short(exc)}"},
               "torch": {"class": "kiln", "reason": f"harness: {_short(exc)}"}}
    Path(out).write_text(json.dumps(res))
    return 0


def run_child(name: str, *, timeout: float) -> dict[str, Any]:
    """``run_one`` in a child process: a crash or hang is this model's result only."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        t0 = time.perf_counter()
        try:
            p = subprocess.run([sys.executable, __file__, "_one", name, str(out)],
                               capture_output=True, text=True, timeout=timeout, check=False,
                               cwd=ROOT)
        except subprocess.TimeoutExpired:
            skip = {"class": "skipped", "reason": f"timeout: over {timeout:.0f} s"}
            return {"onnx": skip, "torch": skip, "wall_s": round(timeout, 1)}
        if not out.exists():
            tail = (p.stderr.strip().splitlines() or [""])[-1][:200]
            crash = {"class": "kiln", "reason": f"child exited {p.returncode}: {tail}"}
            return {"onnx": crash, "torch": crash,
                    "wall_s": round(time.perf_counter() - t0, 1)}
        return dict(json.loads(out.read_text()))


# -- the ratchet file ----------------------------------------------------------------------------


def load(path: Path = JSON_PATH) -> dict[str, Any]:
    if path.exists():
        return dict(json.loads(path.read_text()))
    return {"meta": {}, "models": {}, "explanations": {}}


def regressions(expected: dict[str, Any], results: dict[str, dict[str, Any]]) -> dict[str, str]:
    """``"NAME on ROUTE"`` → what it gave now, for every route ``expected`` (the ratchet's
    ``models``) has as ``ok`` that did not come out ``ok`` in ``results``."""
    out = {}
    for name, res in results.items():
        for route in ROUTES:
            if expected.get(name, {}).get(route, {}).get("class") != "ok":
                continue
            if res[route]["class"] != "ok":
                out[f"{name} on {route}"] = f"{res[route]['class']}: {res[route]['reason']}"
    return out


def unexplained(state: dict[str, Any]) -> list[str]:
    """``"NAME on ROUTE"`` for each ``kiln`` failure without an entry in ``explanations``."""
    notes = state.get("explanations", {})
    return [f"{name} on {route}" for name, m in sorted(state["models"].items())
            for route in ROUTES
            if m[route]["class"] == "kiln" and not notes.get(name, {}).get(route)]


def counts(models: dict[str, Any]) -> dict[str, Counter[str]]:
    return {r: Counter(m[r]["class"] for m in models.values()) for r in ROUTES}


def table(state: dict[str, Any]) -> str:
    c = counts(state["models"])
    lines = ["| route | " + " | ".join(CLASSES) + " | tried |",
             "|---|" + "---|" * (len(CLASSES) + 1)]
    total = state["meta"].get("model_types", "?")
    for r in ROUTES:
        cells = " | ".join(str(c[r].get(k, 0)) for k in CLASSES)
        lines.append(f"| {r} | {cells} | {len(state['models'])} of {total} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=0, help="the first N types (0: all)")
    ap.add_argument("--only", default="", help="comma-separated model types")
    ap.add_argument("--skip-done", action="store_true", help="leave types already in the file")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per model")
    ap.add_argument("--budget", type=float, default=0.0,
                    help="stop starting models after this many seconds (0: no limit)")
    ap.add_argument("--json", type=Path, default=JSON_PATH)
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args(argv)
    names = model_types()
    if args.list:
        for n in names:
            print(n, input_kind(n))
        return 0
    state = load(args.json)
    if args.only:
        wanted = [n for n in args.only.split(",") if n]
        unknown = [n for n in wanted if n not in names]
        if unknown:
            raise SystemExit(f"unknown model types {unknown}")
        names = wanted
    if args.skip_done:
        names = [n for n in names if n not in state["models"]]
    if args.limit:
        names = names[: args.limit]
    t_start = time.monotonic()

    def one(name: str) -> tuple[str, dict[str, Any] | None]:
        if input_kind(name) == "other":  # no child needed to say so
            skip = {"class": "skipped", "reason": "inputs: not a text or vision model"}
            return name, {"onnx": skip, "torch": skip}
        if args.budget and time.monotonic() - t_start > args.budget:
            return name, None
        res = run_child(name, timeout=args.timeout)
        print(f"{name:28s} onnx {res['onnx']['class']:9s} torch {res['torch']['class']:9s} "
              f"{res.get('wall_s', '')}", flush=True)
        return name, res

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for name, res in pool.map(one, names):
            if res is None:
                continue
            state["models"][name] = res
            state["meta"] = {
                "transformers": __import__("transformers").__version__,
                "torch": __import__("torch").__version__,
                "model_types": len(model_types()),
                "updated": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
            state.setdefault("explanations", {})
            args.json.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")
    print(table(state))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "_one":
        sys.exit(_child(sys.argv[2], sys.argv[3]))
    sys.exit(main())
