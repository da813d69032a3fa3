"""Fleet-wide tuning records against a real ``kiln serve`` (tokens on): a client on this CPU
tunes for real and posts its record; once a second submitter agrees (the quorum), the next
client uses that choice without a compile or a timing run of its own; records that are
anonymous, implausible, contradict themselves, stray from their peers or were forged are
refused, by the server or by a client that pins the server's key; a stranger with tokens of its
own cannot make its made-up numbers everyone's choice, and every answer is strict JSON."""

from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

import kiln.client.autotune as autotune_mod
from kiln import Client
from kiln.client.resolver import candidates as detect
from kiln.client.sdk import runtime_version
from kiln.provenance import TUNING_PREDICATE_TYPE, KeyRing
from kiln.service.tuning import tuning_key
from tests.conftest_redis import RedisServer
from tests.graphs import onnx_mlp
from tests.server import KilnServer, kiln_server

TOKENS = "tuner-a,tuner-b,tuner-c,tuner-d,mallory-1,mallory-2"
PRESETS = ["default", "baseline"]
RUNTIME = "3.13.0"
SYNTHETIC = "ab" * 32  # a graph digest no client compiled: records alone


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilnServer]:
    with kiln_server(tmp_path_factory, workers=1, tokens=TOKENS, access_log="false") as s:
        yield s


@pytest.fixture(scope="module")
def pem(srv: KilnServer) -> str:
    pem: str = srv.client().get("/v1/keys").json()[0]["public_key_pem"]
    return pem


class Recording(httpx.HTTPTransport):
    """Every request's method and path; with ``forge``, answers of GET /v1/tuning/... have their
    choice swapped to ``forge`` (in the JSON and in the signed payload, signature kept)."""

    def __init__(self, forge: str | None = None) -> None:
        super().__init__()
        self.requests: list[tuple[str, str]] = []
        self.forge = forge
        self.forged = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append((request.method, request.url.path))
        resp = super().handle_request(request)
        if self.forge is None or not request.url.path.startswith("/v1/tuning/"):
            return resp
        doc = json.loads(resp.read())
        if doc.get("choice") is not None:
            doc["choice"]["preset"] = self.forge
            env = doc["provenance"]
            stmt = json.loads(base64.b64decode(env["payload"]))
            stmt["predicate"]["choice"]["preset"] = self.forge
            env["payload"] = base64.b64encode(json.dumps(stmt).encode()).decode()
            self.forged += 1
        return httpx.Response(resp.status_code, json=doc)

    def count(self, method: str, prefix: str) -> int:
        return sum(1 for m, p in self.requests if m == method and p.startswith(prefix))


class TimingCalls:
    """Counts the executables autotune loads to time (kiln.client.autotune._load)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        inner = autotune_mod._load

        def counting(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return inner(*args, **kwargs)

        monkeypatch.setattr(autotune_mod, "_load", counting)


def host_cpu() -> str:
    return detect("cpu")[0].target


def record(preset: str, default_ms: float, chosen_ms: float, *, samples: int = 5,
           name: str = "Test CPU 9000", graph: str = SYNTHETIC) -> dict[str, Any]:
    times = {"default": {"median_ms": default_ms, "samples": samples}}
    if preset != "default":
        times[preset] = {"median_ms": chosen_ms, "samples": samples}
    return {"graph_digest": f"sha256:{graph}", "target": "cpu", "preset": preset,
            "times": times, "device": {"kind": "cpu", "name": name}}


def post(srv: KilnServer, body: dict[str, Any], **kw: Any) -> httpx.Response:
    return srv.client(**kw).post("/v1/tuning", json=body, headers={"X-Kiln-Runtime": RUNTIME})


def strict(text: str) -> Any:
    """``json.loads`` that refuses NaN and infinities, as standard JSON parsers do."""
    def refuse(token: str) -> Any:
        raise ValueError(f"not JSON: {token}")
    return json.loads(text, parse_constant=refuse)


def evidence(srv: KilnServer, graph_hex: str, target: str, runtime: str) -> dict[str, Any]:
    r = srv.client().get(f"/v1/tuning/{graph_hex}", params={"target": target,
                                                            "runtime": runtime})
    assert r.status_code == 200, r.text
    doc: dict[str, Any] = strict(r.text)
    return doc


def test_the_second_client_uses_the_first_ones_choice_without_tuning(
    srv: KilnServer, pem: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    graph, target, runtime = onnx_mlp(), host_cpu(), runtime_version()
    assert runtime is not None
    timing = TimingCalls(monkeypatch)

    # The first client tunes here (two presets compiled and timed) and posts what it measured.
    wire1 = Recording()
    with Client(srv.url, token="tuner-a", cache_dir=tmp_path / "c1", transport=wire1) as c1:
        first = c1.tune(graph, target, candidates=PRESETS, repeats=3)
    assert first.source == "measured" and first.compiles == 2 and timing.calls == 2
    assert set(first.timings_ms) == set(PRESETS) and first.samples == dict.fromkeys(PRESETS, 3)
    assert wire1.count("POST", "/v1/tuning") == 1

    answer = srv.client().post("/v1/compile", json={
        "graph": {"format": "onnx", "encoding": "base64",
                  "data": base64.b64encode(graph).decode()}, "targets": [target],
    }).json()
    (art,), graph_hex = answer["artifacts"], answer["graph_digest"].removeprefix("sha256:")
    doc = evidence(srv, graph_hex, art["target"], runtime)
    (rec,) = doc["records"]
    assert rec["preset"] == first.preset and rec["submitter"].startswith("token:")
    assert rec["times"]["default"] == {"median_ms": first.timings_ms["default"], "samples": 3}
    # One submitter's word steers no one: no choice until a second one agrees.
    assert doc["choice"] is None and doc["quorum"] == 2
    agreeing = {k: rec[k] for k in ("graph_digest", "target", "preset", "times", "device")}
    assert post(srv, agreeing, token="tuner-c").status_code == 200
    doc = evidence(srv, graph_hex, art["target"], runtime)
    assert doc["choice"]["preset"] == first.preset and doc["choice"]["reporters"] == 2
    # The evidence is signed by the server's key, about this graph, target and runtime.
    stmt = KeyRing.from_pems([pem]).open(doc["provenance"], predicate_type=TUNING_PREDICATE_TYPE)
    assert stmt["subject"][0]["digest"]["sha256"] == graph_hex
    assert stmt["predicate"]["choice"] == doc["choice"]
    assert stmt["predicate"]["records"] == doc["records"]

    # The second client (its own cache, the server's key pinned) loads with autotune: the
    # server's choice, with no compile and no timing run of its own, and posts nothing.
    wire2 = Recording()
    with Client(srv.url, token="tuner-b", cache_dir=tmp_path / "c2", transport=wire2,
                trusted_keys=[pem]) as c2:
        mod = c2.load(graph, device="cpu", autotune=True)
    assert timing.calls == 2  # none more
    (entry,) = (tmp_path / "c2" / "tuning").glob("*.json")
    stored = json.loads(entry.read_text())
    assert (stored["source"], stored["preset"], stored["compiles"]) == (
        "fleet", first.preset, 0)
    assert wire2.count("GET", "/v1/tuning/") == 1 and wire2.count("POST", "/v1/tuning") == 0
    # One compile request for the graph digest (the default preset's, a server cache hit),
    # one more only when the choice is another preset.
    assert wire2.count("POST", "/v1/compile") == (1 if first.preset == "default" else 2)
    assert mod.target == art["target"]
    y = mod.mlp(np.ones((4, 8), np.float32))
    assert y.shape == (4, 3)

    # A third client pins the key, but a man in the middle swaps the choice: refused, it tunes.
    forged = "baseline" if first.preset == "default" else "default"
    wire3 = Recording(forge=forged)
    with caplog.at_level(logging.WARNING, logger="kiln.client.tuning"), Client(
        srv.url, token="tuner-b", cache_dir=tmp_path / "c3", transport=wire3,
        trusted_keys=[pem],
    ) as c3:
        third = c3.tune(graph, target, candidates=PRESETS, repeats=3)
    assert wire3.forged == 1
    assert third.source == "measured" and third.compiles == 2 and timing.calls == 4
    assert "refusing the server's tuning choice" in caplog.text
    assert "signature does not verify" in caplog.text
    assert len(evidence(srv, graph_hex, art["target"], runtime)["records"]) == 3

    served = srv.metric("kiln_tuned_serves_total")
    assert served >= 3  # the evidence above, the second client's, the forged one's
    page = srv.client().get("/").text  # the status page's "Now" tiles
    assert re.search(rf'id="tuned-serves"[^>]*>{int(served)}<', page)
    assert re.search(r'id="tuning-accepted"[^>]*>\d+<', page)


def test_records_are_taken_from_authenticated_clients_only(
    srv: KilnServer, tmp_path_factory: pytest.TempPathFactory,
) -> None:
    body = record("baseline", 3.0, 2.0, graph="cd" * 32)
    assert post(srv, body, token="").status_code == 401
    r = post(srv, body, token="not-a-token")
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
    assert evidence(srv, "cd" * 32, "cpu", RUNTIME)["records"] == []
    # A server without tokens cannot tell who posts: it keeps none unless told to.
    with kiln_server(tmp_path_factory, workers=1, access_log="false") as open_srv:
        r = post(open_srv, body)
        assert r.status_code == 403
        err = r.json()["error"]
        assert err["code"] == "tuning_forbidden" and "KILN_TUNING_ACCEPT=any" in err["message"]
        assert open_srv.metric("kiln_tuning_records_total", result="rejected") == 1


def test_records_that_contradict_themselves_or_their_peers_are_refused(
    srv: KilnServer,
) -> None:
    before = srv.metric("kiln_tuning_records_total", result="rejected")
    for body, reason in [
        (record("baseline", 2.0, 3.0), "not_fastest"),       # the choice is slower than default
        (record("baseline", 3.0, 2.0, samples=2), "samples"),
        (record("baseline", 30.0, 2.0), "implausible"),      # 15x faster than default
        (record("warp-speed", 3.0, 2.0), "preset"),
        ({**record("default", 2.0, 0), "times": {"baseline": {"median_ms": 1.0,
                                                              "samples": 5}}}, "preset"),
    ]:
        r = post(srv, body)
        assert r.status_code == 422, r.text
        assert r.json()["error"]["code"] == "tuning_rejected"
        assert r.json()["error"]["detail"]["reason"] == reason
    # Three submitters on one device class agree on about 1.5x: kept.
    for token, default_ms in (("tuner-a", 3.0), ("tuner-b", 2.9), ("tuner-c", 3.1)):
        r = post(srv, record("baseline", default_ms, 2.0), token=token)
        assert r.status_code == 200, r.text
    # A fourth claims 5x: more than 2x from all three, refused; renaming its CPU changes
    # nothing (the device class is the target, not the free-text name).
    for name in ("Test CPU 9000", "Other CPU"):
        r = post(srv, record("baseline", 10.0, 2.0, name=name), token="tuner-d")
        assert r.status_code == 409 and r.json()["error"]["code"] == "tuning_outlier"
        assert r.json()["error"]["detail"]["peers"] == 3
        assert r.json()["error"]["detail"]["device_class"] == "cpu:cpu:x86_64:generic"
    assert srv.metric("kiln_tuning_records_total", result="rejected") == before + 7

    doc = evidence(srv, SYNTHETIC, "cpu", RUNTIME)
    assert doc["target"] == "cpu:x86_64:generic" and len(doc["records"]) == 3
    assert doc["choice"] == {"preset": "baseline", "median_speedup": 1.5, "reports": 3,
                             "reporters": 3, "options": {"preset": "baseline"}}
    assert {p["preset"]: p["median_speedup"] for p in doc["presets"]} == {
        "default": 1.0, "baseline": 1.5}  # median of 1.45, 1.5 and 1.55


def test_times_that_are_not_finite_or_out_of_bounds_are_400(srv: KilnServer) -> None:
    graph = "9a" * 32
    for default_ms, chosen_ms in [(1e308, 1e-308), (3.0, -2.0), (3.0, 0.0), (1e12, 1e11)]:
        r = post(srv, record("baseline", default_ms, chosen_ms, graph=graph))
        assert r.status_code == 400, r.text
        err = strict(r.text)["error"]
        assert err["code"] == "invalid_request"
        assert {tuple(e["loc"][-1:]) for e in err["detail"]["errors"]} == {("median_ms",)}
    # NaN and Infinity are not JSON, but Python's encoder writes them: refused all the same.
    for bad in ("NaN", "Infinity", "-Infinity"):
        text = json.dumps(record("baseline", 3.0, 2.0, graph=graph)).replace("2.0", bad, 1)
        r = srv.client().post("/v1/tuning", content=text, headers={
            "X-Kiln-Runtime": RUNTIME, "Content-Type": "application/json"})
        assert r.status_code == 400 and strict(r.text)["error"]["code"] == "invalid_request"
    assert evidence(srv, graph, "cpu", RUNTIME)["records"] == []


def test_a_stranger_with_made_up_records_steers_no_one(srv: KilnServer) -> None:
    """Mallory holds two tokens and makes up numbers; honest tuner-a and tuner-b agree on a
    modest 1.2x for baseline. Every answer parses as strict JSON."""
    graph = "5e" * 32
    # A 100x speedup is not plausible: refused whoever posts it.
    r = post(srv, record("baseline", 100.0, 1.0, graph=graph), token="mallory-1")
    assert r.status_code == 422 and strict(r.text)["error"]["detail"]["reason"] == "implausible"
    # A 9x claim (with "size" 9.5x), posted many times from one token, is one vote: it alone
    # makes no choice.
    made_up = record("size", 9.0, 0.95, graph=graph)
    made_up["times"]["baseline"] = {"median_ms": 1.0, "samples": 5}
    for _ in range(5):
        r = post(srv, made_up, token="mallory-1")
        assert r.status_code == 200, r.text
    doc = evidence(srv, graph, "cpu", RUNTIME)
    assert doc["choice"] is None
    assert [(p["preset"], p["reports"], p["reporters"]) for p in doc["presets"]] == [
        ("default", 5, 1), ("baseline", 5, 1), ("size", 5, 1)]
    # Honest submitters are not outliers against one stranger's many records.
    for token in ("tuner-a", "tuner-b"):
        r = post(srv, record("baseline", 1.2, 1.0, graph=graph), token=token)
        assert r.status_code == 200, r.text
    doc = evidence(srv, graph, "cpu", RUNTIME)
    # baseline: the median of 1.2, 1.2 and 9, not moved; "size", which only Mallory found
    # faster, is never the choice.
    assert doc["choice"] == {"preset": "baseline", "median_speedup": 1.2, "reports": 7,
                             "reporters": 3, "options": {"preset": "baseline"}}
    # Mallory's second token now disagrees with most other submitters: refused, any name.
    r = post(srv, record("baseline", 9.0, 1.0, graph=graph, name="Renamed CPU"),
             token="mallory-2")
    assert r.status_code == 409, r.text
    assert strict(r.text)["error"]["detail"]["apart"] == 2


def test_a_forged_record_in_the_store_is_never_served(srv: KilnServer) -> None:
    graph = "ef" * 32
    assert post(srv, record("baseline", 3.0, 2.0, graph=graph)).status_code == 200
    assert post(srv, record("baseline", 3.3, 2.0, graph=graph),
                token="tuner-b").status_code == 200
    assert post(srv, record("baseline", 3.2, 2.0, graph=graph),
                token="tuner-c").status_code == 200
    key = tuning_key(graph, "cpu:x86_64:generic", RUNTIME)
    path = srv.cache_dir / "v1" / "tuning" / key[:2] / f"{key}.json"
    stored = json.loads(path.read_text())
    rid, env_text = sorted(stored["reports"].items())[0]
    env = json.loads(env_text)
    stmt = json.loads(base64.b64decode(env["payload"]))
    stmt["predicate"]["times"]["baseline"]["median_ms"] = 0.1  # a 30x "speedup", same signature
    env["payload"] = base64.b64encode(json.dumps(stmt).encode()).decode()
    stored["reports"][rid] = json.dumps(env)
    path.write_text(json.dumps(stored))
    before = srv.metric("kiln_tuning_records_total", result="forged")
    doc = evidence(srv, graph, "cpu", RUNTIME)
    assert [r["id"] for r in doc["records"]] == sorted(stored["reports"])[1:]
    assert doc["choice"]["median_speedup"] == 1.625  # median of 1.65 and 1.6
    assert srv.metric("kiln_tuning_records_total", result="forged") == before + 1
    assert rid not in json.loads(path.read_text())["reports"]  # removed


@pytest.mark.redis
def test_records_are_shared_by_replicas_through_redis(
    redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory,
) -> None:
    graph = "12" * 32
    settings = {"workers": 1, "tokens": TOKENS, "access_log": "false",
                "redis_url": redis_server.url}
    with kiln_server(tmp_path_factory, **settings) as a, kiln_server(tmp_path_factory,
                                                                      **settings) as b:
        assert post(a, record("baseline", 3.0, 2.0, graph=graph)).status_code == 200
        assert post(b, record("baseline", 3.1, 2.0, graph=graph),
                    token="tuner-b").status_code == 200
        doc = evidence(b, graph, "cpu", RUNTIME)  # the other replica, its own disk cache
        assert len(doc["records"]) == 2 and doc["choice"]["preset"] == "baseline"
        key = tuning_key(graph, "cpu:x86_64:generic", RUNTIME)
        assert redis_server.command("HLEN", f"kiln:v1:tuning:{key}") == b":2\r\n"
        assert not (a.cache_dir / "v1" / "tuning").exists()


def test_an_open_server_keeps_records_when_told_to_and_bounds_each_submitter(
    tmp_path: Path,
) -> None:
    from kiln.errors import TuningForbidden
    from kiln.provenance import Authority, Signer
    from kiln.service.tuning import DiskTuningStore, TuningService

    def service(**kw: Any) -> TuningService:
        return TuningService(DiskTuningStore(tmp_path), Authority(Signer.generate()),
                             auth_enabled=False, max_reports=8,
                             normalize=lambda t: "cpu:x86_64:generic", **kw)

    with pytest.raises(TuningForbidden):
        service().submit(record("baseline", 3.0, 2.0), runtime=RUNTIME, submitter="addr:1")
    open_ = service(accept_any=True)  # KILN_TUNING_ACCEPT=any
    for default_ms in (3.0, 3.1, 2.9):  # one submitter keeps a quarter of max_reports: 2
        open_.submit(record("baseline", default_ms, 2.0), runtime=RUNTIME, submitter="addr:1")
    open_.submit(record("baseline", 3.2, 2.0), runtime=RUNTIME, submitter="addr:2")
    doc = open_.evidence(SYNTHETIC, "cpu", RUNTIME)
    assert [(r["submitter"], r["times"]["default"]["median_ms"]) for r in doc["records"]] == [
        ("addr:1", 3.1), ("addr:1", 2.9), ("addr:2", 3.2)]
