"""Fleet-wide autotune: ask the server before tuning, tell it after.

    mod = client.load("model.onnx", device="cpu", autotune=True)
    result = client.tune("model.onnx", "cpu", candidates=["default", "baseline"], repeats=5)
    result.preset, result.source        # "baseline", "fleet" | "measured" | "stored"

``tune`` runs ``kiln.client.autotune.autotune`` with two hooks, in this order:

1. A choice stored locally for this graph, target and runtime identity is used as before: no
   request at all.
2. Else the default preset's artifact is compiled (or read from the local cache): its answer
   names the graph digest and the normalized target. ``GET /v1/tuning/{graph_hex}?target=&runtime=``
   asks for the server's choice; a choice is used with no compile and no timing (``source
   ="fleet"``) and remembered locally. The server answers a choice only once enough
   independent submitters agree (or a trusted one reported; service/tuning.py): before that
   the answer holds none and this machine tunes as in 3. With trusted keys (``Client(trusted_keys=...)``) the
   choice is taken only from the signed evidence (``provenance``, a DSSE envelope signed by the
   server's key, predicate ``kiln.provenance.TUNING_PREDICATE_TYPE``) about this very graph,
   target and runtime; evidence that does not verify is refused (logged) and this machine tunes
   itself.
3. Else the presets are timed here; the result is posted (``POST /v1/tuning``) so the next
   client gets it.

Failure semantics: everything fleet-related is best effort. A server without the routes, an
unreachable one, a refused record (401, 403 ``tuning_forbidden``, 409 ``tuning_outlier``, 422
``tuning_rejected``) or evidence that does not verify is logged (logger ``kiln.client.tuning``)
and never raised: tuning goes on as if alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any

from kiln.errors import IntegrityError, KilnError
from kiln.provenance import TUNING_PREDICATE_TYPE, KeyRing

if TYPE_CHECKING:
    from kiln.client.autotune import TuneResult

__all__ = ["attach", "choice_of", "device_description", "record_of", "tune"]

log = logging.getLogger("kiln.client.tuning")

Plan = Generator[Any, Any, Any]
Run = Callable[[Plan], Any]


def tune(
    client: Any, data: bytes, target: str, fmt: str | None, run: Run, *,
    candidates: Sequence[str] | None = None, repeats: int = 15, refresh: bool = False,
) -> TuneResult:
    """Tune ``data`` for ``target`` with the fleet's hooks (module docstring). Blocking: it
    times executables here; ``run(plan)`` runs the client's plans."""
    from kiln.client.autotune import autotune

    def compile_with(opts: Any) -> bytes:
        blob: bytes = run(client._artifact(data, target, dict(opts) or None, fmt))[0]
        return blob

    def default_record() -> dict[str, Any]:
        rec: dict[str, Any] = run(client._artifact(data, target, None, fmt))[1]
        return rec

    def advice() -> str | None:
        runtime = _runtime(client)
        if runtime is None:
            return None
        try:
            rec = default_record()
            graph_hex = rec["graph_digest"].removeprefix("sha256:")
            doc = run(_get_json(client, f"/v1/tuning/{graph_hex}",
                                {"target": rec["target"], "runtime": runtime}))
            return choice_of(doc, ring=client.trusted, graph_digest=rec["graph_digest"],
                             target=rec["target"], runtime=runtime)
        except IntegrityError as exc:
            log.warning("refusing the server's tuning choice for %s: %s", target, exc.message)
        except Exception as exc:  # best effort (module docstring)
            log.info("no tuning choice from the server for %s: %s", target, _why(exc))
        return None

    def report(result: TuneResult) -> None:
        runtime = _runtime(client)
        if runtime is None or len(result.timings_ms) < 2:
            return  # nothing to compare: no record worth keeping
        try:
            rec = default_record()  # a local hit by now
            body = record_of(result, graph_digest=rec["graph_digest"], target=rec["target"],
                             runtime=runtime)
            run(client._request("POST", "/v1/tuning", json=body))
        except Exception as exc:  # best effort (module docstring)
            log.warning("the server did not keep this tuning record for %s: %s", target,
                        _why(exc))

    return autotune(data, target=target, compile=compile_with,
                    cache_dir=client.cache.root / "tuning", candidates=candidates,
                    repeats=repeats, refresh=refresh, advice=advice, report=report)


def choice_of(
    doc: dict[str, Any], *, ring: KeyRing | None, graph_digest: str, target: str, runtime: str,
) -> str | None:
    """The preset the server's evidence chooses, or None. With ``ring``, only from the signed
    statement, which must be about ``graph_digest``, ``target`` and ``runtime``
    (``IntegrityError`` otherwise)."""
    from kiln.targets.presets import PRESETS

    evidence = doc
    if ring is not None:
        env = doc.get("provenance")
        if doc.get("choice") is None and env is None:
            return None
        if env is None:
            raise IntegrityError("the tuning evidence is not signed, and trusted keys are "
                                 "configured")
        stmt = ring.open(env, predicate_type=TUNING_PREDICATE_TYPE)
        evidence = stmt.get("predicate") or {}
        subject = [s.get("digest", {}).get("sha256") for s in stmt.get("subject") or []]
        about = (evidence.get("kind"), evidence.get("graph_digest"), evidence.get("target"),
                 evidence.get("runtime"))
        if subject != [graph_digest.removeprefix("sha256:")] or about != (
                "evidence", graph_digest, target, runtime):
            raise IntegrityError(
                f"the signed tuning evidence is about {about[1:]}, not "
                f"{(graph_digest, target, runtime)}")
    choice = evidence.get("choice")
    preset = choice.get("preset") if isinstance(choice, dict) else None
    return preset if isinstance(preset, str) and preset in PRESETS else None


def record_of(result: TuneResult, *, graph_digest: str, target: str,
              runtime: str) -> dict[str, Any]:
    """The ``POST /v1/tuning`` body for a measured ``result``."""
    return {
        "graph_digest": graph_digest,
        "target": target,
        "runtime": runtime,
        "preset": result.preset,
        "times": {p: {"median_ms": ms, "samples": result.samples.get(p, 0)}
                  for p, ms in result.timings_ms.items()},
        "device": device_description(result.runtime.get("driver", "local-task")),
    }


def device_description(driver: str) -> dict[str, str]:
    """What a record was measured on: the CPU model and Kiln CPU target, or the GPU's name."""
    if driver.startswith("local"):
        from kiln.client.resolver import detect_cpu

        cpu = detect_cpu()
        return {"kind": "cpu", "name": (cpu.model_name or cpu.target)[:200],
                "features": cpu.target[:1000], "driver": driver[:64]}
    from kiln.client.autotune import _device_name

    return {"kind": "gpu", "name": (_device_name(driver) or driver)[:200], "driver": driver[:64]}


def _get_json(client: Any, path: str, params: dict[str, str]) -> Plan:
    resp = yield from client._request("GET", path, params=params)
    return resp.json()


def _runtime(client: Any) -> str | None:
    value = client._headers.get("X-Kiln-Runtime")
    return str(value) if value else None


def _why(exc: BaseException) -> str:
    return f"{exc.code}: {exc.message}" if isinstance(exc, KilnError) else repr(exc)


# -- Client.tune / AsyncClient.tune ----------------------------------------------------------------


def _tune_plan(c: Any, graph: Any, target: str, candidates: Sequence[str] | None, repeats: int,
               refresh: bool, format: str | None) -> Plan:
    from functools import partial

    from kiln.client.sdk import _Blocking, read_graph

    data, fmt = read_graph(graph)
    return (yield _Blocking(partial(_tune_step, c, data, target, format or fmt,
                                    candidates=candidates, repeats=repeats, refresh=refresh)))


def _tune_step(c: Any, data: bytes, target: str, fmt: str | None, run: Run, **kw: Any) -> Any:
    return tune(c, data, target, fmt, run, **kw)


class _SyncTune:
    def tune(self: Any, graph: Any, target: str, *, candidates: Sequence[str] | None = None,
             repeats: int = 15, refresh: bool = False,
             format: str | None = None) -> TuneResult:
        """Autotune ``graph`` for ``target`` here, the fleet's way (kiln.client.tuning): the
        local choice, else the server's (no tuning run), else measured here and posted."""
        return self._run(  # type: ignore[no-any-return]
            _tune_plan(self, graph, target, candidates, repeats, refresh, format))


class _AsyncTune:
    async def tune(self: Any, graph: Any, target: str, *,
                   candidates: Sequence[str] | None = None, repeats: int = 15,
                   refresh: bool = False, format: str | None = None) -> TuneResult:
        """See ``Client.tune`` (timing runs in a worker thread)."""
        return await self._run(  # type: ignore[no-any-return]
            _tune_plan(self, graph, target, candidates, repeats, refresh, format))


def attach(client_cls: type, async_client_cls: type) -> None:
    """Give ``Client`` and ``AsyncClient`` ``tune`` (kiln.client.sdk calls this)."""
    for cls, impl in ((client_cls, _SyncTune), (async_client_cls, _AsyncTune)):
        setattr(cls, "tune", getattr(impl, "tune"))  # noqa: B009, B010 - attached by name
