"""The routes of docs/api.md. Handlers translate HTTP to calls on the app's ``Service`` and back;
every failure is a ``KilnError`` that ``errors.py`` turns into the envelope.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from functools import partial
from typing import Annotated, Any, Literal, TypeVar

import anyio.to_thread
from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, ValidationError, WithJsonSchema
from starlette.responses import Response

from kiln.compiler.fair_queue import TENANT
from kiln.errors import IncompatibleRuntime, InvalidRequest, KilnError, NotFound

from .errors import error_responses, note_code
from .limits import read_body
from .logs import log_fields
from .metrics import CONTENT_TYPE_LATEST
from .service import Service
from .types import (
    RUNTIME_PATTERN,
    CompileRequest,
    CompileResponse,
    DsseEnvelope,
    Health,
    JobOut,
    KeyOut,
    Readiness,
    TargetsResponse,
    TuningAccepted,
    TuningEvidence,
    TuningRecordIn,
    options_schema,
    target_schema,
)
from .uploads import EXTERNAL_PARAMS_BYTES, TAR_TYPES, ModelUpload, receive_tar

__all__ = ["router"]

router = APIRouter()
_HEX = re.compile(r"^[0-9a-f]{64}$")
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:[.\w+-]*)$")

_RAW_DOC = (
    "Send the graph either as JSON (`application/json`, CompileRequest) or as the raw request "
    "body (`application/octet-stream`) with the query parameters `format`, `target` (repeat it) "
    "and `option=key=value` (repeat it; values are strings, as in the JSON form). An ONNX model "
    "whose weights are in side files goes as a tar (`application/x-tar`, the same query "
    "parameters): its first `.onnx` member is the model, the others the files it names; side "
    "files of 64 MiB or more default to `params=external`."
)


def _json(body: Any, status: int = 200) -> Response:
    """Strict JSON: a NaN or an infinity is a bug (ValueError, 500), never sent as a bare
    ``NaN``/``Infinity`` token that standard parsers refuse."""
    return Response(
        json.dumps(body, separators=(",", ":"), allow_nan=False).encode(),
        status_code=status,
        media_type="application/json",
    )


def _service(request: Request) -> Service:
    svc: Service = request.app.state.kiln
    return svc


_HEX_SCHEMA = {"type": "string", "pattern": "^[0-9a-f]{64}$",
               "description": "lowercase hex sha256 (anything else is 404 not_found)"}
_RUNTIME_HEADER = {
    "name": "X-Kiln-Runtime",
    "in": "header",
    "required": False,
    "description": "the client's IREE runtime version: another major.minor than the server's "
    "compiler is 409 incompatible_runtime, before any work",
    "schema": {"type": "string", "pattern": r"^[0-9]+\.[0-9]+[.A-Za-z0-9_+-]*$",
               "examples": ["3.13.0"]},
}
_QUERY_OPTIONS = [f"{k}={v}" for k, allowed in sorted(options_schema()["properties"].items())
                  for v in allowed["enum"] if isinstance(v, str)]


_Format = Annotated[
    Literal["mlir", "onnx"] | None,
    Query(description="raw body only: the graph's format (detected when omitted)"),
]
_TargetQuery = Annotated[
    list[Annotated[str, WithJsonSchema(target_schema())]] | None,
    Query(description="raw body only: a target string; repeat it for several"),
]
_OptionQuery = Annotated[
    list[Annotated[str, WithJsonSchema({"type": "string", "enum": _QUERY_OPTIONS})]] | None,
    Query(description="raw body only: key=value of an allow-listed option; repeat it"),
]
_PARAMS_QUERY = {
    "name": "params", "in": "query", "required": False,
    "schema": {"type": "string", "enum": ["embedded", "external"]},
    "description": "raw body only: the option params (same as option=params=VALUE): external "
    "keeps the weights apart from the executables, in one archive (/v1/params/{hex})",
}
_COMPILE_BODY = {
    "parameters": [_RUNTIME_HEADER, _PARAMS_QUERY],
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {"$ref": "#/components/schemas/CompileRequest"}
            },
            "application/octet-stream": {
                "schema": {"type": "string", "format": "binary",
                           "description": "the graph's bytes (ONNX, MLIR text or bytecode)"}
            },
            "application/x-tar": {
                "schema": {"type": "string", "format": "binary",
                           "description": "an ONNX model (the first .onnx member) and the "
                           "external-data files it names, by relative name; query parameters "
                           "as for a raw body"}
            },
        },
    },
}


@router.post(
    "/v1/compile",
    response_model=CompileResponse,
    responses=error_responses(400, 401, 408, 409, 413, 422, 500, 503, 507),
    summary="Compile one graph for one or more targets",
    description=_RAW_DOC,
    operation_id="compile",
    openapi_extra=_COMPILE_BODY,
)
async def compile_graph(
    request: Request,
    format: _Format = None,
    target: _TargetQuery = None,
    option: _OptionQuery = None,
) -> Response:
    svc = _service(request)
    with svc.idle_tuning.working(), _request_dir() as workdir:
        # the idle tuner yields while a compile is answered
        data, targets, options, fmt, supported, upload = await _compile_input(
            request, format, target, option, workdir=workdir)
        # The compile pool serves clients round-robin and caps each one's waiting jobs.
        tenant = TENANT.set(_tenant(request))
        try:
            result = await svc.compiles.compile(
                data, targets=targets, options=options, format=fmt,
                log_fields=log_fields(request.scope), upload=upload,
            )
        finally:
            TENANT.reset(tenant)
    if upload is None:  # a model whose side files are gone cannot be compiled again later
        svc.idle_tuning.remember(data, format=fmt, options=options, answer=result,
                                 runtime=request.headers.get("x-kiln-runtime"))
    return _json(_finish(result, supported))


@contextlib.contextmanager
def _request_dir() -> Iterator[Callable[[], str]]:
    """The request's own directory, made on first use (a tar upload's side files) and removed
    with everything in it when the request ends, however it ends."""
    made: list[str] = []

    def get() -> str:
        if not made:
            made.append(tempfile.mkdtemp(prefix="kiln-request-"))
        return made[0]

    try:
        yield get
    finally:
        for d in made:
            shutil.rmtree(d, ignore_errors=True)


async def _compile_input(
    request: Request, format: str | None, target: list[str] | None, option: list[str] | None,
    *, workdir: Callable[[], str],
) -> tuple[bytes, list[str], dict[str, Any] | None, str | None, list[str], ModelUpload | None]:
    """The graph, targets, options and format of a compile request (JSON, raw or tar body), the
    runtime versions its executables load on, and a tar body's upload (its side files written
    into ``workdir()``); 400/409 before any work."""
    svc = _service(request)
    ctype = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    upload = None
    if ctype in TAR_TYPES:
        if format not in (None, "onnx"):
            raise InvalidRequest("a tar body carries an ONNX model with its side files: "
                                 "format must be onnx")
        upload = await receive_tar(request, directory=workdir(),
                                   limit=svc.settings.max_request_bytes, budget=svc.uploads)
        body = upload.model
    else:
        body = await read_body(
            request, limit=svc.settings.max_request_bytes, budget=svc.uploads
        )
    options: dict[str, Any] | None
    params = request.query_params.getlist("params")
    if ctype == "application/octet-stream" or upload is not None:
        data, targets, options = body, list(target or []), _query_options(option or [])
        fmt = "onnx" if upload is not None else format
        if params:
            if len(params) > 1 or "params" in options:
                raise InvalidRequest("params given twice (params= and option=params=)")
            options["params"] = params[0]
        if upload is not None and "params" not in options \
                and upload.size >= EXTERNAL_PARAMS_BYTES:
            options["params"] = "external"  # big weights stay out of the executables
    elif ctype in ("application/json", ""):
        if target or option or format or params:
            raise InvalidRequest(
                "query parameters go with a raw (application/octet-stream) body; "
                "a JSON body carries graph, targets and options itself"
            )
        req = _parse_json(body, CompileRequest)
        data, targets, options, fmt = _graph_bytes(req), req.targets, req.options, req.graph.format
    else:
        raise InvalidRequest(
            f"unsupported Content-Type {ctype[:64]!r}: use application/json, "
            "application/octet-stream or application/x-tar"
        )
    supported = _runtime_check(request.headers.get("x-kiln-runtime"),
                               svc.pipeline.compiler.version)
    return data, list(targets), options, fmt, supported, upload


def _finish(result: dict[str, Any], supported: list[str]) -> dict[str, Any]:
    """The compile answer as the client sees it: each artifact's runtimes; no compile time
    for what this request did not compile."""
    for art in result["artifacts"]:
        art["runtime"] = supported
        if art["cached"]:
            art["compile_seconds"] = 0.0  # nothing was compiled for this request
    return result


def _series(version: str) -> str | None:
    """``3.13`` of ``3.13.0``, ``3.13.0rc20261016`` or ``3.13``; None if it is no version."""
    m = _VERSION.match(version.strip())
    return f"{int(m.group(1))}.{int(m.group(2))}" if m else None


def _runtime_check(runtime: str | None, compiler_version: str) -> list[str]:
    """The runtime versions this server's executables load on (IREE loads a compiler's output
    only on a runtime of the same major.minor); raises ``IncompatibleRuntime`` when the client's
    ``X-Kiln-Runtime`` is another series, before any work."""
    series = _series(compiler_version)
    supported = [f"{series}.x"] if series else []
    if runtime is None or series is None:
        return supported
    got = _series(runtime)
    if got is None:
        raise InvalidRequest(
            f"X-Kiln-Runtime must be an IREE runtime version such as 3.13.0, not {runtime[:40]!r}"
        )
    if got != series:
        raise IncompatibleRuntime(
            f"this server compiles with IREE {compiler_version}, whose executables load only on "
            f"IREE runtime {series}.x; your runtime is {runtime}: install "
            f"iree-base-runtime=={series}.* or use a Kiln server whose compiler is IREE {got}",
            detail={"runtime": runtime, "compiler": compiler_version, "supported": supported},
        )
    return supported


def _tenant(request: Request) -> str:
    """Who a compile is for: the bearer token (hashed) when auth is on, else the peer address."""
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer ") and request.app.state.kiln.auth.enabled:
        return "token:" + hashlib.sha256(auth[7:].strip().encode()).hexdigest()[:16]
    return "addr:" + (request.client.host if request.client else "?")


M = TypeVar("M", bound=BaseModel)


def _parse_json(body: bytes, model: type[M]) -> M:
    try:
        obj = json.loads(body)
    except RecursionError:
        raise InvalidRequest("the JSON body is nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"the body is not valid JSON: {str(exc)[:200]}") from None
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        errors = [
            {"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
            for e in exc.errors(include_url=False, include_input=False)[:20]
        ]
        raise InvalidRequest("the request does not validate", detail={"errors": errors}) from None
    except RecursionError:
        raise InvalidRequest("the JSON body is nested too deeply") from None


def _graph_bytes(req: CompileRequest) -> bytes:
    g = req.graph
    if g.encoding == "base64":
        try:
            return base64.b64decode("".join(g.data.split()), validate=True)
        except (binascii.Error, ValueError):
            raise InvalidRequest("graph.data is not valid base64") from None
    try:
        return g.data.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRequest("graph.data is not encodable as UTF-8 (lone surrogate)") from None


def _query_options(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidRequest(f"option must be key=value, got {item[:64]!r}")
        if key in out:
            raise InvalidRequest(f"option {key[:64]!r} given twice")
        out[key] = value
    return out


_JOB_ID_SCHEMA = {"type": "string", "pattern": "^[0-9a-f]{32}$",
                  "description": "the job's id (anything else is 404 not_found)"}


@router.post(
    "/v1/jobs",
    response_model=JobOut,
    status_code=202,
    responses={202: {"description": "accepted; poll the Location (GET /v1/jobs/{id})",
                     "headers": {"Location": {"schema": {"type": "string"}, "required": True,
                                              "description": "/v1/jobs/<id>"}}},
               **error_responses(400, 401, 408, 409, 413, 429, 500, 503,
                                 s429="overloaded: this client (token) already has "
                                 "KILN_MAX_JOBS_PER_CLIENT jobs queued or running; Retry-After")},
    summary="Compile asynchronously: the /v1/compile request, answered at once with a job",
    description=_RAW_DOC + " The graph is read and checked before the answer (400 as for "
    "/v1/compile); the compiles run afterwards. An identical job of the same client in flight "
    "(same graph bytes, format, targets and options) answers with that job. The job belongs to "
    "the client's token: other tokens get 404 for it.",
    operation_id="submit_job",
    openapi_extra=_COMPILE_BODY,
)
async def submit_job(
    request: Request,
    format: _Format = None,
    target: _TargetQuery = None,
    option: _OptionQuery = None,
) -> Response:
    svc = _service(request)
    svc.idle_tuning.touch()  # the job's compiles end with Pipeline.on_result (touch again)
    with _request_dir() as workdir:  # a tar's side files: read by the prepare, in submit
        data, targets, options, fmt, supported, upload = await _compile_input(
            request, format, target, option, workdir=workdir)
        tenant = TENANT.set(_tenant(request))  # inherited by the job's driver
        try:
            doc = await svc.jobs.submit(data, targets=targets, options=options, format=fmt,
                                        log_fields=log_fields(request.scope),
                                        owner=_tenant(request), upload=upload)
        finally:
            TENANT.reset(tenant)
    resp = _json(_job_out(doc, supported), status=202)
    resp.headers["Location"] = f"/v1/jobs/{doc['id']}"
    return resp


@router.get(
    "/v1/jobs/{job_id}",
    response_model=JobOut,
    responses=error_responses(400, 401, 404, 500, 503),
    summary="A job: its state, progress, and once done the /v1/compile answer",
    description="`wait` (seconds, at most 60) answers as soon as the state or progress "
    "changes, or when `wait` has passed. Any replica answers for any job; a job whose replica "
    "stopped is taken over by the one asked.",
    operation_id="get_job",
)
async def get_job(
    request: Request,
    job_id: Annotated[str, Path(), WithJsonSchema(_JOB_ID_SCHEMA)],
    wait: Annotated[float, Query(ge=0, le=60, description="long-poll up to this many "
                                 "seconds for a change")] = 0.0,
) -> Response:
    svc = _service(request)
    doc = await svc.jobs.get(job_id, wait=wait, viewer=_job_viewer(request))
    return _json(_job_out(doc, _runtime_check(None, svc.pipeline.compiler.version)))


@router.delete(
    "/v1/jobs/{job_id}",
    status_code=204,
    response_class=Response,
    responses={204: {"description": "cancelled (queued or running) or forgotten (finished)"},
               **error_responses(401, 404, 500, 503, s404="not_found: no such job, or another "
                                 "client's")},
    summary="Cancel a job of this client",
    description="A queued or running job is cancelled: its targets still waiting for a "
    "compile slot are not compiled, and the job is gone (GET answers 404). A compile already "
    "running in a worker finishes into the cache. Another token's job is 404, as an unknown "
    "one (KILN_JOBS_ADMIN_TOKENS may cancel any).",
    operation_id="cancel_job",
)
async def cancel_job(
    request: Request,
    job_id: Annotated[str, Path(), WithJsonSchema(_JOB_ID_SCHEMA)],
) -> Response:
    await _service(request).jobs.cancel(job_id, viewer=_job_viewer(request))
    return Response(status_code=204)


def _job_viewer(request: Request) -> str | None:
    """Whose jobs a request may see: its token's (hashed like ``_tenant``); None (all) for an
    admin token, or on a server without tokens."""
    svc = _service(request)
    if not svc.auth.enabled:
        return None
    tenant = _tenant(request)
    return None if tenant in svc.jobs_admins else tenant


def _job_out(doc: dict[str, Any], supported: list[str]) -> dict[str, Any]:
    out = dict(doc)
    out.pop("owner", None)  # the token's hash: kept for the server, not sent
    if out.get("result") is not None:
        out["result"] = _finish(json.loads(json.dumps(out["result"])), supported)
    return out


_ARTIFACT_HEADERS: dict[str, Any] = {
    "ETag": {"schema": {"type": "string"}, "required": True, "description": '"<hex>"'},
    "Cache-Control": {"schema": {"type": "string"}, "required": True,
                      "description": "public, max-age=31536000, immutable"},
}
_VMFB = {"application/x-iree-vmfb": {"schema": {"type": "string", "format": "binary"}}}
_ARTIFACT_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"content": _VMFB, "description": "the executable", "headers": _ARTIFACT_HEADERS},
    206: {"content": _VMFB, "description": "the byte range Range named",
          "headers": {**_ARTIFACT_HEADERS, "Content-Range": {
              "schema": {"type": "string"}, "required": True,
              "description": "bytes FIRST-LAST/SIZE"}}},
    304: {"description": "If-None-Match matched (artifacts are immutable)",
          "headers": _ARTIFACT_HEADERS},
    **error_responses(401, 404, 416, 500, 503),
}
_ARTIFACT_PARAMETERS = [
    {"name": "If-None-Match", "in": "header", "required": False, "schema": {"type": "string"},
     "description": 'the ETag ("<hex>") or *: 304 when it matches'},
    {"name": "Range", "in": "header", "required": False,
     "schema": {"type": "string", "examples": ["bytes=0-99"]},
     "description": "one range bytes=a-b, bytes=a- or bytes=-n: 206 (past the end: 416); "
     "several ranges: the whole executable"},
    {"name": "If-Range", "in": "header", "required": False, "schema": {"type": "string"},
     "description": "Range applies only if this is the ETag"},
]
_Hex = Annotated[str, Path(), WithJsonSchema(_HEX_SCHEMA)]


def _serve_blob(request: Request, server: Any, hex: str) -> Response:
    """A blob through its ``ArtifactServer`` (executables or parameter archives), with the
    request's conditional and range headers."""
    response: Response = server.respond(
        hex,
        head=request.method == "HEAD",
        if_none_match=request.headers.get("if-none-match"),
        range_header=request.headers.get("range"),
        if_range=request.headers.get("if-range"),
    )
    if response.status_code == 416:
        note_code(request.scope, "invalid_request")
    return response


async def get_artifact(request: Request, hex: _Hex) -> Response:
    return _serve_blob(request, _service(request).artifacts, hex)


router.add_api_route(
    "/v1/artifacts/{hex}",
    get_artifact,
    methods=["GET"],
    responses=_ARTIFACT_RESPONSES,
    response_class=Response,
    summary="An executable's bytes, by the hex sha256 of its bytes",
    operation_id="get_artifact",
    openapi_extra={"parameters": _ARTIFACT_PARAMETERS},
)
router.add_api_route(
    "/v1/artifacts/{hex}",
    get_artifact,
    methods=["HEAD"],
    responses=_ARTIFACT_RESPONSES,
    response_class=Response,
    summary="An executable's size and ETag, without its bytes",
    operation_id="head_artifact",
    openapi_extra={"parameters": _ARTIFACT_PARAMETERS},
)


@router.get(
    "/v1/artifacts/{hex}/provenance",
    response_model=DsseEnvelope,
    responses=error_responses(401, 404, 500, 503),
    summary="The executable's signed provenance: a DSSE envelope over an in-toto Statement v1",
    description="With `key` (the artifact's compile key from /v1/compile) the provenance of "
    "that very build; without it, the last one stored for these bytes. 404 if none.",
    operation_id="get_provenance",
)
async def get_provenance(
    request: Request,
    hex: _Hex,
    key: Annotated[
        str | None,
        Query(description="hex compile key"),
        WithJsonSchema(_HEX_SCHEMA),
    ] = None,
) -> Response:
    svc = _service(request)
    if not _HEX.match(hex) or (key is not None and not _HEX.match(key)):
        raise NotFound("no such artifact: not a lowercase sha256 hex digest")
    env = await anyio.to_thread.run_sync(partial(svc.cache.provenance, hex, key=key))
    if env is None:
        raise NotFound(f"no provenance for sha256:{hex}", detail={"digest": hex, "key": key})
    return _json(env)


_IRPA = {"application/x-iree-irpa": {"schema": {"type": "string", "format": "binary"}}}
_PARAMS_RESPONSES: dict[int | str, dict[str, Any]] = {
    **_ARTIFACT_RESPONSES,
    200: {"content": _IRPA, "description": "the parameter archive (.irpa)",
          "headers": _ARTIFACT_HEADERS},
    206: {**_ARTIFACT_RESPONSES[206], "content": _IRPA},
}


async def get_params(request: Request, hex: _Hex) -> Response:
    return _serve_blob(request, _service(request).params, hex)


for _method, _name, _summary in (
    ("GET", "get_params", "A parameter archive's bytes (weights apart from code), by the hex "
     "sha256 of its bytes"),
    ("HEAD", "head_params", "A parameter archive's size and ETag, without its bytes"),
):
    router.add_api_route(
        "/v1/params/{hex}", get_params, methods=[_method], responses=_PARAMS_RESPONSES,
        response_class=Response, summary=_summary, operation_id=_name,
        openapi_extra={"parameters": _ARTIFACT_PARAMETERS},
    )


@router.get(
    "/v1/params/{hex}/provenance",
    response_model=DsseEnvelope,
    responses=error_responses(401, 404, 500, 503),
    summary="The parameter archive's signed provenance: a DSSE envelope over an in-toto "
    "Statement v1 (subject: the archive; parameters: the code-only graph digest)",
    operation_id="get_params_provenance",
)
async def get_params_provenance(request: Request, hex: _Hex) -> Response:
    svc = _service(request)
    if not _HEX.match(hex):
        raise NotFound("no such parameter archive: not a lowercase sha256 hex digest")
    env = await anyio.to_thread.run_sync(partial(svc.cache.provenance, hex))
    if env is None:
        raise NotFound(f"no provenance for sha256:{hex}", detail={"digest": hex})
    return _json(env)


@router.get("/v1/keys", response_model=list[KeyOut],
            responses=error_responses(401, 500, 503), operation_id="get_keys",
            summary="The public keys that sign (and signed) this server's provenance")
async def get_keys(request: Request) -> Response:
    return _json(_service(request).authority.ring.to_json())


def _get_and_head(path: str, endpoint: Any, *, name: str, summary: str, **kw: Any) -> None:
    """``GET path`` and ``HEAD path`` (same answer, no body), each its own operation."""
    router.add_api_route(path, endpoint, methods=["GET"], operation_id=name, summary=summary,
                         **kw)
    router.add_api_route(path, endpoint, methods=["HEAD"], operation_id=f"head_{name}",
                         summary=summary + " (headers only)", **kw)


async def get_targets(request: Request) -> Response:
    return Response(_service(request).targets_json(), media_type="application/json")


_get_and_head(
    "/v1/targets", get_targets, name="get_targets", response_model=TargetsResponse,
    responses=error_responses(401, 500, 503),
    summary="The compiler, and per target kind the accepted archs, aliases and default; the "
    "allow-listed compile options",
)


async def healthz() -> dict[str, str]:
    return {"status": "ok"}


_get_and_head("/healthz", healthz, name="healthz", response_model=Health,
              responses=error_responses(500, 503), summary="Alive (no auth)")


async def readyz(request: Request) -> Response:
    svc = _service(request)
    checks = await anyio.to_thread.run_sync(svc.readiness)
    failed = [k for k, v in checks.items() if v != "ok"]
    if not failed:
        return _json({"status": "ready", "checks": checks})
    code = "cache_unavailable" if set(failed) <= {"cache", "redis", "s3"} else "internal"
    note_code(request.scope, code)
    err = KilnError(f"not ready: {', '.join(failed)}", detail={"checks": checks})
    err.code = code
    return Response(
        json.dumps({"error": err.to_json()}).encode(), status_code=503,
        media_type="application/json", headers={"Retry-After": "5"},
    )


_get_and_head(
    "/readyz", readyz, name="readyz", response_model=Readiness,
    responses=error_responses(
        500, 503, s503="not ready: cache_unavailable (only the cache directory, Redis or S3 "
        "failed) or internal, with each check in detail.checks; or overloaded",
    ),
    summary="Ready: compiler usable, cache writable, Redis and S3 reachable (no auth)",
)


async def metrics(request: Request) -> Response:
    return Response(_service(request).metrics.render(), media_type=CONTENT_TYPE_LATEST)


_get_and_head(
    "/metrics", metrics, name="metrics", response_class=Response,
    responses={
        200: {"content": {"text/plain": {"schema": {"type": "string"}}},
              "description": "Prometheus text format (docs/service.md lists the metrics)"},
        **error_responses(401, 500, 503),
    },
    summary="Prometheus metrics",
)


# -- tuning records (service/tuning.py) ------------------------------------------------------------

_TUNING_RUNTIME_HEADER = {
    **_RUNTIME_HEADER,
    "description": "the client's IREE runtime version: the runtime a record was measured on, "
    "or a choice is asked for, unless the body or the query names it",
}


def _tuning_runtime(header: str | None, given: str | None) -> str:
    """The runtime a record or a question is about: ``given`` (body or query), else the
    ``X-Kiln-Runtime`` header; both: they must agree. 400 when neither names a version."""
    if header is not None and not re.match(RUNTIME_PATTERN, header.strip()):
        raise InvalidRequest(
            f"X-Kiln-Runtime must be an IREE runtime version such as 3.13.0, not {header[:40]!r}"
        )
    header = header.strip() if header is not None else None
    if given is not None and header is not None and given != header:
        raise InvalidRequest(
            f"the runtime {given[:40]!r} and the X-Kiln-Runtime header {header!r} disagree")
    runtime = given or header
    if not runtime:
        raise InvalidRequest("name the IREE runtime: the runtime field (or query parameter), "
                             "or the X-Kiln-Runtime header")
    return runtime


def _submitter(request: Request) -> str:
    """Who posted a record: the bearer token's hash, else the address's (never in clear)."""
    tenant = _tenant(request)
    if tenant.startswith("token:"):
        return tenant
    return "addr:" + hashlib.sha256(tenant.encode()).hexdigest()[:16]


@router.post(
    "/v1/tuning",
    response_model=TuningAccepted,
    responses=error_responses(
        400, 401, 403, 409, 413, 422, 500, 503,
        s400="invalid_request: the body does not validate, e.g. a time that is not finite or "
        "outside 0.0001 to 3600000 ms",
        s409="tuning_outlier: the record's speedup is more than 2x away from the median of "
        "the other submitters (or of the trusted ones) for the same graph, target, runtime "
        "and device class",
        s422="tuning_rejected: the chosen preset is not the fastest of the record's times, a "
        "preset is not allow-listed or default is missing, fewer than 3 samples, or a preset "
        "more than 10x faster or slower than default (detail.reason says which)",
        s503="cache_unavailable (the shared store, Redis, cannot be reached) or overloaded",
    ),
    summary="Keep one autotune result (a tuning record) for every client of this graph",
    description="Accepted only from authenticated clients: with tokens configured, the bearer "
    "token; a server without tokens answers 403 tuning_forbidden unless started with "
    "KILN_TUNING_ACCEPT=any. The record is signed by the server's key and kept in the shared "
    "store (Redis when configured); the answer holds it and the evidence after it.",
    operation_id="post_tuning_record",
    openapi_extra={
        "parameters": [_TUNING_RUNTIME_HEADER],
        "requestBody": {"required": True, "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/TuningRecordIn"}}}},
    },
)
async def post_tuning_record(request: Request) -> Response:
    svc = _service(request)
    try:
        svc.tuning.admit()
        body = await read_body(request, limit=svc.settings.tuning_max_body_bytes)
        record = _parse_json(body, TuningRecordIn)
        runtime = _tuning_runtime(request.headers.get("x-kiln-runtime"), record.runtime)
    except KilnError:
        svc.metrics.on_tuning("rejected")
        raise
    out = await anyio.to_thread.run_sync(partial(
        svc.tuning.submit, record.model_dump(), runtime=runtime, submitter=_submitter(request)))
    return _json(out)


@router.get(
    "/v1/tuning/{graph_hex}",
    response_model=TuningEvidence,
    responses=error_responses(400, 401, 404, 500, 503),
    summary="The tuning evidence of a graph for a target and runtime: accepted records, "
    "median speedups, the current choice",
    description="Each submitter is one vote (the median of its records). The choice is the "
    "preset with the best median speedup (default's time / its own) that at least `quorum` "
    "submitters (KILN_TUNING_QUORUM, default 2), or one trusted submitter, found faster than "
    "default; else default once `quorum` submitters reported; else null. `provenance` "
    "signs the whole answer (verify it with GET /v1/keys' key, as for artifacts).",
    operation_id="get_tuning",
    openapi_extra={"parameters": [_TUNING_RUNTIME_HEADER]},
)
async def get_tuning(
    request: Request,
    graph_hex: Annotated[str, Path(), WithJsonSchema(
        {**_HEX_SCHEMA, "description": "the graph digest's lowercase hex (anything else is "
         "404 not_found)"})],
    target: Annotated[str, Query(description="the target (normalized by the server)"),
                      WithJsonSchema(target_schema())],
    runtime: Annotated[str | None, Query(
        description="the IREE runtime version; default: the X-Kiln-Runtime header"),
        WithJsonSchema({"type": "string", "pattern": RUNTIME_PATTERN, "maxLength": 64})] = None,
) -> Response:
    svc = _service(request)
    if not _HEX.match(graph_hex):
        raise NotFound("no such graph: not a lowercase sha256 hex digest")
    if runtime is not None and (len(runtime) > 64 or not re.match(RUNTIME_PATTERN, runtime)):
        raise InvalidRequest(f"runtime must be an IREE runtime version, not {runtime[:40]!r}")
    rt = _tuning_runtime(request.headers.get("x-kiln-runtime"), runtime)
    out = await anyio.to_thread.run_sync(partial(svc.tuning.evidence, graph_hex, target, rt))
    return _json(out)
