"""The Kiln client SDK (API.md, "Python SDK"): compile on a ``kiln serve`` daemon, fetch verified
executables, and load the best one for this machine.

    with Client("http://127.0.0.1:8000") as c:
        result = c.compile("model.onnx", targets=["cpu", "vulkan"])
        data = c.fetch(result.artifacts[0].digest)        # sha256-verified bytes
        mod = c.load("model.onnx", device="auto")         # best target here, CPU as the fallback
        y = mod.main(x)                                   # numpy in, numpy out

Failure semantics (every method): httpx's exceptions never escape; they are translated once, here,
with ``raise ... from exc``. A server error envelope becomes its Kiln class
(``KilnError.from_json``:
``InvalidGraph``, ``UnsupportedTarget``, ``CompileError``, ``Overloaded``, ...). 429/503 and
connection errors are retried per ``RetryPolicy`` (``Retry-After`` honoured); when retries run out
the last error is raised (``Overloaded`` or ``ConnectionFailed``). Bytes that do not match their
digest raise ``IntegrityError`` and are never cached or loaded.

Trust (docs/trust.md): with ``trusted_keys=[pem, ...]`` (or ``KILN_TRUSTED_KEYS=path[,path]``)
``artifact`` and ``load`` fetch each executable's signed provenance and check, before anything is
kept or loaded, that a trusted key signed it, that its subject is these bytes' sha256, and that
its target and graph digest are the ones the server answered; a missing, unsigned, foreign or
tampered provenance raises ``IntegrityError``. Without keys nothing is checked beyond the digest.

Every request names the installed IREE runtime (``X-Kiln-Runtime``); a server whose compiler
makes executables that runtime cannot load answers ``IncompatibleRuntime`` (409), whose message
says which runtime versions it can serve and what to install.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import hashlib
import importlib.metadata
import os
import re
import time
from collections.abc import Awaitable, Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, overload

import httpx

from kiln.client.cache import LocalCache, request_key
from kiln.client.params import ParamsArchive, archive_plan
from kiln.client.runtime import LoadedModule
from kiln.client.side_files import OnnxFiles, TarBody, with_side_files
from kiln.client.types import (
    RemoteArtifact,
    RemoteCompileResult,
    RemoteTargetError,
    RetryPolicy,
)
from kiln.errors import (
    CompileError,
    ConnectionFailed,
    IntegrityError,
    InvalidRequest,
    KilnError,
    LoadFailed,
    NotFound,
    Overloaded,
    UnsupportedTarget,
)
from kiln.provenance import KeyRing, split_paths, verify_artifact

if TYPE_CHECKING:
    import onnx

    from kiln.client.resolver import Candidate
    from kiln.dialects.types import FunctionSignature

__all__ = [
    "AsyncClient",
    "Client",
    "ClientModule",
    "ConnectionFailed",
    "LoadFailed",
    "RemoteArtifact",
    "RemoteCompileResult",
    "RemoteTargetError",
    "RetryPolicy",
    "read_graph",
]

GraphInput: TypeAlias = (
    "str | os.PathLike[str] | bytes | bytearray | memoryview | onnx.ModelProto | OnnxFiles"
)
RAW_BODY_THRESHOLD = 1 << 20  # graphs larger than this (bytes) go as a raw octet-stream body
_RETRY_STATUS = (429, 503)
_DIGEST_RE = re.compile(r"^(?:sha256:)?([0-9a-f]{64})$")


class ClientModule(LoadedModule):
    """A loaded executable plus how it was chosen: ``target``, ``digest`` and the ``fallbacks``
    (target, error) that were tried first and ruled out."""

    def __init__(
        self, data: bytes, *, driver: str, target: str, digest: str,
        fallbacks: list[tuple[str, KilnError]], signatures: Iterable[FunctionSignature] = (),
        params: ParamsArchive | None = None,
    ) -> None:
        super().__init__(data, driver=driver, signatures=signatures, params=params)
        self.target = target
        self.digest = digest
        self.fallbacks = fallbacks


# -- inputs and requests --------------------------------------------------------------------------

def read_graph(graph: GraphInput) -> tuple[bytes, str | None]:
    """The graph's bytes and, when the input says, its format ("onnx" | "mlir").

    A ``str`` is a path when such a file exists, else MLIR text; a ``str`` that is neither raises
    ``InvalidRequest`` (it would otherwise be sent as a graph and fail obscurely).
    """
    if hasattr(graph, "SerializeToString"):  # onnx.ModelProto, without importing onnx
        return bytes(graph.SerializeToString()), "onnx"
    if isinstance(graph, OnnxFiles):
        return graph.model, "onnx"
    if isinstance(graph, bytes | bytearray | memoryview):
        return bytes(graph), None
    if isinstance(graph, str) and not os.path.exists(graph):
        from kiln.dialects.detect import looks_like_mlir_text

        if looks_like_mlir_text(graph.encode("utf-8", "replace")):
            return graph.encode("utf-8"), "mlir"
        raise InvalidRequest(f"no such graph file, and not MLIR text: {graph[:80]!r}")
    if isinstance(graph, str | os.PathLike):
        try:
            return Path(graph).read_bytes(), None
        except OSError as exc:
            msg = f"cannot read the graph {os.fspath(graph)}: {exc.strerror}"
            raise InvalidRequest(msg) from exc
    raise InvalidRequest(f"unsupported graph input of type {type(graph).__name__}")


def _format_of(data: bytes, declared: str | None) -> str:
    from kiln.dialects.detect import detect_format
    from kiln.dialects.types import GraphFormat

    fmt = detect_format(data, declared=declared)
    return "onnx" if fmt is GraphFormat.ONNX else "mlir"


def graph_request(
    graph: GraphInput | OnnxFiles, format: str | None, targets: Sequence[str],
    options: dict[str, Any] | None, raw_threshold: int,
) -> dict[str, Any]:
    """httpx ``request`` keyword arguments for ``POST /v1/compile`` or ``/v1/jobs``: an ONNX
    file that names side files beside it goes as a tar with them (kiln.client.side_files)."""
    graph = with_side_files(graph)
    data, fmt = read_graph(graph)
    if isinstance(graph, OnnxFiles):
        return _compile_request(data, "onnx", targets, options, raw_threshold, sides=graph)
    return _compile_request(data, _format_of(data, format or fmt), targets, options,
                            raw_threshold)


def _compile_request(
    data: bytes, fmt: str, targets: Sequence[str], options: dict[str, Any] | None,
    raw_threshold: int, *, sides: OnnxFiles | None = None,
) -> dict[str, Any]:
    """httpx ``request`` keyword arguments for ``POST /v1/compile``."""
    if isinstance(targets, str):
        raise InvalidRequest("targets must be a list of target strings, e.g. ['cpu']")
    if sides is not None:
        query: list[tuple[str, str]] = [("format", "onnx")] + [("target", t) for t in targets]
        if options:
            query += [("option", f"{k}={v}") for k, v in sorted(options.items())]
        return {
            "params": query,
            "content": TarBody(sides),
            "headers": {"Content-Type": "application/x-tar",
                        "Content-Length": str(sides.tar_size)},
        }
    if len(data) > raw_threshold:
        params: list[tuple[str, str]] = [("format", fmt)] + [("target", t) for t in targets]
        if options:
            params += [("option", f"{k}={v}") for k, v in sorted(options.items())]
        return {
            "params": params,
            "content": data,
            "headers": {"Content-Type": "application/octet-stream"},
        }
    if fmt == "mlir" and not data.startswith(b"ML\xefR"):
        try:
            graph = {"format": fmt, "encoding": "utf-8", "data": data.decode("utf-8")}
        except UnicodeDecodeError:
            graph = {"format": fmt, "encoding": "base64", "data": base64.b64encode(data).decode()}
    else:
        graph = {"format": fmt, "encoding": "base64", "data": base64.b64encode(data).decode()}
    body: dict[str, Any] = {"graph": graph, "targets": list(targets)}
    if options:
        body["options"] = dict(options)
    return {"json": body}


def _sendable(kw: dict[str, Any], *, asynchronous: bool) -> dict[str, Any]:
    """``kw`` with a ``TarBody`` turned into a fresh stream of the runner's kind."""
    body = kw.get("content")
    if isinstance(body, TarBody):
        return {**kw, "content": body.chunks(asynchronous=asynchronous)}
    return kw


def _retry_after(resp: httpx.Response) -> float | None:
    value = resp.headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_of(resp: httpx.Response) -> KilnError:
    """The Kiln error for a non-2xx response (the envelope's class, else a generic one)."""
    try:
        body = resp.json()
        err = KilnError.from_json(body["error"])
    except (ValueError, KeyError, TypeError):
        err = KilnError(f"HTTP {resp.status_code} from {resp.request.url}: {resp.text[:500]}")
    if isinstance(err, Overloaded):
        err.retry_after = _retry_after(resp) or 1.0
    return err


def _check(resp: httpx.Response) -> httpx.Response:
    if resp.status_code >= 400:
        raise _error_of(resp)
    return resp


def _hex_of(digest: str) -> str:
    m = _DIGEST_RE.match(digest.strip().lower())
    if not m:
        raise InvalidRequest(f"not a sha256 digest: {digest[:80]!r}")
    return m.group(1)


def _verify(digest: str, data: bytes) -> bytes:
    want = _hex_of(digest)
    got = hashlib.sha256(data).hexdigest()
    if got != want:
        raise IntegrityError(
            f"artifact sha256:{want} arrived with sha256:{got}; refusing it",
            detail={"expected": f"sha256:{want}", "actual": f"sha256:{got}", "size": len(data)},
        )
    return data


def _record(a: RemoteArtifact, res: RemoteCompileResult) -> dict[str, Any]:
    return {"target": a.target, "digest": a.digest, "key": a.key, "flags": list(a.flags),
            "graph_digest": res.graph_digest,
            "signatures": [sig.to_json() for sig in res.signatures],
            **({"params": res.params["digest"]} if res.params else {})}


def _trusted(keys: Sequence[str | bytes] | None) -> KeyRing | None:
    """The ring from ``keys`` (PEM texts), else from ``KILN_TRUSTED_KEYS`` (PEM file paths)."""
    if keys is not None:
        return KeyRing.from_pems(keys)
    paths = split_paths(os.environ.get("KILN_TRUSTED_KEYS", ""))
    return KeyRing.from_files(paths) if paths else None


def runtime_version() -> str | None:
    """The installed ``iree-base-runtime`` version (without importing it); None if absent."""
    try:
        return importlib.metadata.version("iree-base-runtime")
    except importlib.metadata.PackageNotFoundError:
        return None


# Errors after which load() tries the next candidate: this target cannot be built or run here.
_FALLBACK = (CompileError, UnsupportedTarget, NotFound)

# -- the one request/response core ----------------------------------------------------------------
#
# Every operation is written once, as a *plan*: a generator that yields steps and gets their
# results back. ``Client`` runs a plan with blocking calls, ``AsyncClient`` with awaits; neither
# holds any logic of its own, so the two cannot drift.

T = TypeVar("T")


@dataclass(frozen=True)
class _Send:
    """Send one HTTP request; the plan gets the ``httpx.Response`` or the httpx exception."""

    method: str
    path: str
    kw: dict[str, Any]


@dataclass(frozen=True)
class _Sleep:
    seconds: float


@dataclass(frozen=True)
class _Blocking:
    """Run ``fn(run)`` off the event loop (blocking work: loading, timing); ``run(plan)`` runs
    another plan to completion from inside ``fn``."""

    fn: Callable[[Callable[[Plan[Any]], Any]], Any]


Plan: TypeAlias = Generator["_Send | _Sleep | _Blocking", Any, T]


class _Base:
    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = 300.0,
        retry: RetryPolicy | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        raw_threshold: int = RAW_BODY_THRESHOLD,
        trusted_keys: Sequence[str | bytes] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        #: Keys provenance must be signed by before anything is loaded; None = not checked.
        self.trusted = _trusted(trusted_keys)
        self.retry = retry or RetryPolicy()
        self.cache = LocalCache(cache_dir)
        self.raw_threshold = raw_threshold
        self._timeout = timeout
        self._headers = {"User-Agent": "kiln-client/0.1", "Accept": "application/json"}
        runtime = runtime_version()
        if runtime:  # the server refuses (409 incompatible_runtime) what this cannot load
            self._headers["X-Kiln-Runtime"] = runtime
        if token:
            self._headers["Authorization"] = f"Bearer {token}"

    # -- plans ------------------------------------------------------------------------------------

    def _request(self, method: str, path: str, **kw: Any) -> Plan[httpx.Response]:
        """One request with the retry policy; httpx errors and error envelopes become Kiln
        errors here, once."""
        policy = self.retry
        for attempt in range(policy.attempts):
            last = attempt == policy.attempts - 1
            try:
                resp = yield _Send(method, path, kw)
            except (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ConnectTimeout) as exc:
                if last:
                    raise ConnectionFailed(f"cannot reach {self.base_url}: {exc}") from exc
                yield _Sleep(policy.delay(attempt))
                continue
            except httpx.HTTPError as exc:
                raise ConnectionFailed(f"{method} {self.base_url}{path} failed: {exc}") from exc
            if resp.status_code in _RETRY_STATUS and not last:
                after = _retry_after(resp)
                if after is None or after <= policy.max_retry_after:
                    yield _Sleep(policy.delay(attempt, after))
                    continue
            return _check(resp)
        raise AssertionError("unreachable")  # pragma: no cover

    def _compile(self, graph: GraphInput, targets: Sequence[str], options: dict[str, Any] | None,
                 format: str | None) -> Plan[RemoteCompileResult]:
        req = graph_request(graph, format, targets, options, self.raw_threshold)
        resp = yield from self._request("POST", "/v1/compile", **req)
        return RemoteCompileResult.from_json(resp.json())

    def _fetch(self, digest: str) -> Plan[bytes]:
        hexd = _hex_of(digest)
        hit = self.cache.get_blob(hexd)
        if hit is not None:
            return hit
        resp = yield from self._request("GET", f"/v1/artifacts/{hexd}")
        data = _verify(hexd, resp.content)
        self.cache.put_blob(hexd, data)
        return data

    def _json(self, path: str) -> Plan[Any]:
        resp = yield from self._request("GET", path)
        return resp.json()

    def _provenance(self, digest: str, key: str | None) -> Plan[dict[str, Any] | None]:
        params = {"key": key} if key else None
        try:
            resp = yield from self._request(
                "GET", f"/v1/artifacts/{_hex_of(digest)}/provenance", params=params)
        except NotFound:
            return None
        return dict(resp.json())

    def _artifact(self, graph: GraphInput, target: str, options: dict[str, Any] | None,
                  format: str | None) -> Plan[tuple[bytes, dict[str, Any]]]:
        graph = with_side_files(graph)
        data, fmt = read_graph(graph)
        fmt = format or fmt
        sides = graph if isinstance(graph, OnnxFiles) else None
        key = request_key(server=self.base_url, graph=data, target=target, options=options,
                          format=fmt, side_files=sides.digest if sides else None)
        hit = self._cached_artifact(key)
        if hit is not None:
            return hit
        res = yield from self._compile(sides or data, [target], options, fmt)
        a = _one_artifact(res)
        blob = yield from self._fetch(a.digest)
        rec = _record(a, res)
        if self.trusted is not None:
            rec["provenance"] = yield from self._provenance(a.digest, a.key)
            self._check(blob, rec)
        self.cache.put_result(key, rec)
        return blob, rec

    def _load(self, graph: GraphInput, device: str, options: dict[str, Any] | None,
              candidates: Sequence[Candidate] | None, autotune: bool) -> Plan[ClientModule]:
        graph = with_side_files(graph)
        data, fmt = read_graph(graph)
        sent: GraphInput = graph if isinstance(graph, OnnxFiles) else data
        tried: list[tuple[str, KilnError]] = []
        for c in self._candidates(device, candidates):
            try:
                opts = options
                if autotune and options is None:
                    opts = yield _Blocking(partial(self._tune, data, c.target, fmt))
                blob, rec = yield from self._artifact(sent, c.target, opts, fmt)
                # weights apart: the archive, from the local cache or downloaded (params.py)
                params = yield from archive_plan(self, rec.get("params"))
            except _FALLBACK as exc:
                tried.append((c.target, exc))
                continue
            mod: ClientModule | None = yield _Blocking(
                partial(_open_step, c, blob, rec, tried, params=params))
            if mod is not None:
                return mod
        raise _no_target(tried)

    def _tune(self, data: bytes, target: str, fmt: str | None,
              run: Callable[[Plan[Any]], Any]) -> dict[str, Any]:
        """Autotuned options for ``target`` (blocking: it times executables here): the local
        choice, else the server's, else measured here and posted (kiln/client/tuning.py)."""
        from kiln.client.tuning import tune

        return tune(self, data, target, fmt, run).options

    # -- helpers ----------------------------------------------------------------------------------

    def _cached_artifact(self, key: str) -> tuple[bytes, dict[str, Any]] | None:
        """A local hit; with trusted keys only one whose kept provenance still verifies."""
        rec = self.cache.get_result(key)
        if rec is None:
            return None
        blob = self.cache.get_blob(rec["digest"])
        if blob is None:
            return None
        if self.trusted is not None:
            try:
                self._check(blob, rec)
            except IntegrityError:
                return None  # ask the server again (and verify what it sends)
        return blob, rec

    def _check(self, blob: bytes, rec: dict[str, Any]) -> None:
        assert self.trusted is not None
        verify_artifact(self.trusted, blob, rec.get("provenance"), target=rec["target"],
                        graph_digest=rec.get("graph_digest"))

    def _candidates(self, device: str, candidates: Sequence[Candidate] | None) -> list[Candidate]:
        from kiln.client.resolver import candidates as detect

        cands = list(candidates) if candidates is not None else detect(device)
        if not cands:
            raise NotFound(f"no {device} device on this machine")
        return cands


def _one_artifact(res: RemoteCompileResult) -> RemoteArtifact:
    if not res.artifacts:
        raise res.errors[0].error if res.errors else KilnError("the server returned no artifact")
    return res.artifacts[0]


def _open(c: Candidate, blob: bytes, rec: dict[str, Any],
          tried: list[tuple[str, KilnError]], *,
          params: ParamsArchive | None = None) -> ClientModule | None:
    """Load ``blob`` on ``c.driver``; a runtime failure (no device, bad module) is recorded."""
    try:
        return ClientModule(blob, driver=c.driver, target=rec["target"], digest=rec["digest"],
                            fallbacks=list(tried), signatures=_signatures_of(rec),
                            params=params)
    except (RuntimeError, ValueError, OSError) as exc:
        tried.append((c.target, KilnError(f"cannot load on {c.driver}: {exc}")))
        return None


def _open_step(c: Candidate, blob: bytes, rec: dict[str, Any],
               tried: list[tuple[str, KilnError]], run: Callable[[Plan[Any]], Any], *,
               params: ParamsArchive | None = None) -> Any:
    return _open(c, blob, rec, tried, params=params)


def _signatures_of(rec: dict[str, Any]) -> list[FunctionSignature]:
    from kiln.dialects.types import FunctionSignature

    try:
        return [FunctionSignature.from_json(s) for s in rec.get("signatures") or ()]
    except (TypeError, ValueError, AttributeError):
        return []  # an unreadable cached record: the executable's own say is enough


def _no_target(tried: list[tuple[str, KilnError]]) -> LoadFailed:
    return LoadFailed(
        "no candidate target compiled and loaded: "
        + "; ".join(f"{t}: {e.code}: {e.message}" for t, e in tried),
        detail={"attempts": [{"target": t, "error": e.to_json()} for t, e in tried]},
    )


class Client(_Base):
    """Synchronous client. ``transport`` (an ``httpx.BaseTransport``) is injectable for tests."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = 300.0,
        retry: RetryPolicy | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        transport: httpx.BaseTransport | None = None,
        raw_threshold: int = RAW_BODY_THRESHOLD,
        sleep: Callable[[float], None] = time.sleep,
        trusted_keys: Sequence[str | bytes] | None = None,
    ) -> None:
        super().__init__(base_url, token=token, timeout=timeout, retry=retry, cache_dir=cache_dir,
                         raw_threshold=raw_threshold, trusted_keys=trusted_keys)
        self._sleep = sleep
        self._http = httpx.Client(base_url=self.base_url, headers=self._headers, timeout=timeout,
                                  transport=transport)

    def _run(self, plan: Plan[T]) -> T:
        """Run ``plan`` with blocking calls."""
        result: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = plan.throw(error) if error is not None else plan.send(result)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            result, error = None, None
            try:
                if isinstance(step, _Send):
                    result = self._http.request(step.method, step.path,
                                                **_sendable(step.kw, asynchronous=False))
                elif isinstance(step, _Sleep):
                    self._sleep(step.seconds)
                else:
                    result = step.fn(self._run)
            except Exception as exc:  # noqa: BLE001 - handed to the plan, which decides
                error = exc

    @overload
    def compile(self, graph: str | os.PathLike[str], *, targets: Sequence[str],
                options: dict[str, Any] | None = None,
                format: str | None = None) -> RemoteCompileResult: ...
    @overload
    def compile(self, graph: bytes | bytearray | memoryview, *, targets: Sequence[str],
                options: dict[str, Any] | None = None,
                format: str | None = None) -> RemoteCompileResult: ...
    @overload
    def compile(self, graph: onnx.ModelProto, *, targets: Sequence[str],
                options: dict[str, Any] | None = None,
                format: str | None = None) -> RemoteCompileResult: ...

    def compile(self, graph: Any, *, targets: Sequence[str], options: dict[str, Any] | None = None,
                format: str | None = None) -> RemoteCompileResult:
        """Compile on the server (always asks it; its cache makes repeats cheap). Targets that fail
        while others succeed are in ``.errors``; if all fail the error is raised."""
        return self._run(self._compile(graph, targets, options, format))

    def fetch(self, digest: str) -> bytes:
        """The executable's bytes, sha256-verified (``IntegrityError`` otherwise); served from the
        local cache when present there, so a repeat fetch makes no request."""
        return self._run(self._fetch(digest))

    def targets(self) -> dict[str, Any]:
        """``GET /v1/targets``: the compiler version and the accepted targets per kind."""
        return dict(self._run(self._json("/v1/targets")))

    def artifact(self, graph: GraphInput, target: str, *, options: dict[str, Any] | None = None,
                 format: str | None = None) -> tuple[bytes, dict[str, Any]]:
        """One target's executable bytes and record, from the local cache when this exact request
        was made before (no request then), else compiled and fetched."""
        return self._run(self._artifact(graph, target, options, format))

    def fetch_params(self, digest: str) -> ParamsArchive:
        """The parameter archive ``digest`` (a compile answer's ``params``), sha256-verified (and
        its provenance, with trusted keys), from the local cache or the server."""
        archive = self._run(archive_plan(self, digest))
        assert archive is not None
        return archive

    def provenance(self, digest: str, *, key: str | None = None) -> dict[str, Any] | None:
        """The artifact's signed provenance envelope (of the build ``key`` when given), or None
        when the server has none."""
        return self._run(self._provenance(digest, key))

    def keys(self) -> list[dict[str, str]]:
        """``GET /v1/keys``: the server's public keys (fetching them is not trusting them)."""
        return list(self._run(self._json("/v1/keys")))

    def load(self, graph: GraphInput, device: str = "auto", *,
             options: dict[str, Any] | None = None,
             candidates: Sequence[Candidate] | None = None,
             autotune: bool = False) -> ClientModule:
        """Compile for the best target here and load it; on a compile or load failure fall back
        down the list (CPU last). ``device``: ``"auto"``, a kind (``"cpu"``, ``"vulkan"``,
        ``"cuda"``, ``"rocm"``) or a full target string (``"vulkan:llvmpipe"``,
        ``"cpu:x86_64:znver3"``: that target alone, on this kind's device).
        ``candidates`` overrides the detected list. Raises ``LoadFailed``
        when none works; graph, auth and integrity errors are raised at once (no fallback).

        ``autotune=True`` (without ``options``): compile a few allow-listed presets for the chosen
        target, time them on this device, keep the fastest (the default preset is always a
        candidate and wins ties), and remember the choice locally (kiln.client.autotune) so the
        next load on this hardware uses it without tuning."""
        return self._run(self._load(graph, device, options, candidates, autotune))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(_Base):
    """The asyncio twin of ``Client``: the same methods over the same plans, awaitable; loading
    and autotuning run in a worker thread."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = 300.0,
        retry: RetryPolicy | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        raw_threshold: int = RAW_BODY_THRESHOLD,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        trusted_keys: Sequence[str | bytes] | None = None,
    ) -> None:
        super().__init__(base_url, token=token, timeout=timeout, retry=retry, cache_dir=cache_dir,
                         raw_threshold=raw_threshold, trusted_keys=trusted_keys)
        self._sleep = sleep
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=self._headers,
                                       timeout=timeout, transport=transport)

    async def _run(self, plan: Plan[T]) -> T:
        """Run ``plan`` with awaits; a ``_Blocking`` step runs in a thread, and a plan it starts
        runs back on this event loop."""
        loop = asyncio.get_running_loop()

        def run_here(inner: Plan[Any]) -> Any:
            return asyncio.run_coroutine_threadsafe(self._run(inner), loop).result()

        result: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = plan.throw(error) if error is not None else plan.send(result)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            result, error = None, None
            try:
                if isinstance(step, _Send):
                    result = await self._http.request(step.method, step.path,
                                                      **_sendable(step.kw, asynchronous=True))
                elif isinstance(step, _Sleep):
                    await self._sleep(step.seconds)
                else:
                    result = await asyncio.to_thread(step.fn, run_here)
            except Exception as exc:  # noqa: BLE001 - handed to the plan, which decides
                error = exc

    @overload
    async def compile(self, graph: str | os.PathLike[str], *, targets: Sequence[str],
                      options: dict[str, Any] | None = None,
                      format: str | None = None) -> RemoteCompileResult: ...
    @overload
    async def compile(self, graph: bytes | bytearray | memoryview, *, targets: Sequence[str],
                      options: dict[str, Any] | None = None,
                      format: str | None = None) -> RemoteCompileResult: ...
    @overload
    async def compile(self, graph: onnx.ModelProto, *, targets: Sequence[str],
                      options: dict[str, Any] | None = None,
                      format: str | None = None) -> RemoteCompileResult: ...

    async def compile(self, graph: Any, *, targets: Sequence[str],
                      options: dict[str, Any] | None = None,
                      format: str | None = None) -> RemoteCompileResult:
        """See ``Client.compile``."""
        return await self._run(self._compile(graph, targets, options, format))

    async def fetch(self, digest: str) -> bytes:
        """See ``Client.fetch``."""
        return await self._run(self._fetch(digest))

    async def targets(self) -> dict[str, Any]:
        """See ``Client.targets``."""
        return dict(await self._run(self._json("/v1/targets")))

    async def artifact(self, graph: GraphInput, target: str, *,
                       options: dict[str, Any] | None = None,
                       format: str | None = None) -> tuple[bytes, dict[str, Any]]:
        """See ``Client.artifact``."""
        return await self._run(self._artifact(graph, target, options, format))

    async def fetch_params(self, digest: str) -> ParamsArchive:
        """See ``Client.fetch_params``."""
        archive = await self._run(archive_plan(self, digest))
        assert archive is not None
        return archive

    async def provenance(self, digest: str, *, key: str | None = None) -> dict[str, Any] | None:
        """See ``Client.provenance``."""
        return await self._run(self._provenance(digest, key))

    async def keys(self) -> list[dict[str, str]]:
        """See ``Client.keys``."""
        return list(await self._run(self._json("/v1/keys")))

    async def load(self, graph: GraphInput, device: str = "auto", *,
                   options: dict[str, Any] | None = None,
                   candidates: Sequence[Candidate] | None = None,
                   autotune: bool = False) -> ClientModule:
        """See ``Client.load`` (the module loads, and tuning times, in a worker thread)."""
        return await self._run(self._load(graph, device, options, candidates, autotune))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


# Asynchronous compiles (POST /v1/jobs): submit, job, wait, compile_job (kiln/client/jobs.py).
from kiln.client.jobs import attach as _attach_jobs  # noqa: E402

_attach_jobs(Client, AsyncClient)

# Fleet-wide autotune (GET/POST /v1/tuning): tune (kiln/client/tuning.py).
from kiln.client.tuning import attach as _attach_tuning  # noqa: E402

_attach_tuning(Client, AsyncClient)
