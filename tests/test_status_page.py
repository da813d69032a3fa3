"""The status page (``GET /``, service/status.py) against a real ``kiln serve``: after a few
compiles it lists them and shows the numbers ``/metrics`` shows; with tokens it shows a login
form and nothing else until ``POST /login`` sets an HttpOnly session cookie, which opens the page
and no API route; a real headless Chromium renders it offline to a non-blank screenshot.

``KILN_UPDATE_SCREENSHOT=1`` also writes that screenshot to docs/status-page.png."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from kiln.compiler.pipeline import CompileResult, TargetError
from kiln.errors import CompileError
from kiln.service.metrics import Activity, Answer
from kiln.service.sessions import Sessions
from kiln.service.status import _cluster, _recent, cluster_view
from tests.conftest_redis import RedisServer
from tests.graphs import LINALG
from tests.server import REPO, KilnServer, kiln_server
from tests.test_determinism import REFORMATTED
from tests.test_kernel_cache import DEEP, SHALLOW, mlp

TOKEN = "status-page-token"
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilnServer]:
    """A server without tokens, after three answers: a two-target compile and a cache hit."""
    with kiln_server(tmp_path_factory, workers=1, compile_timeout=120) as s:
        c = s.client()
        first = c.post("/v1/compile", json={"graph": {"format": "mlir", "data": LINALG},
                                            "targets": ["cpu", "vulkan"]})
        assert first.status_code == 200, first.text
        hit = c.post("/v1/compile", json={"graph": {"format": "mlir", "data": REFORMATTED},
                                          "targets": ["cpu"]})
        assert hit.status_code == 200 and hit.json()["artifacts"][0]["cached"], hit.text
        yield s


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilnServer]:
    with kiln_server(tmp_path_factory, workers=1, tokens=f"{TOKEN},another") as s:
        yield s


def _tile(page: str, ident: str) -> str:
    m = re.search(rf'id="{ident}"[^>]*>([^<]*)<', page)
    assert m, ident
    return m.group(1)


def test_the_page_lists_the_compiles_and_agrees_with_metrics(srv: KilnServer) -> None:
    r = httpx.get(srv.url + "/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert r.headers["content-security-policy"].startswith(CSP)
    page = r.text
    assert "<script" not in page and "http://" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")
    # Recent compiles: three rows, newest first: the hit, then the two compiled targets.
    table = page[page.index('id="recent"'):page.index("</table>", page.index('id="recent"'))]
    rows = re.findall(r"<tr><td>[^<]*</td><td><code>([^<]+)</code></td><td[^>]*>(\w+)</td>"
                      r"<td>(yes|no)</td>", table)
    assert rows == [("cpu:x86_64:generic", "ok", "yes"), ("cpu:x86_64:generic", "ok", "no"),
                    ("vulkan:generic", "ok", "no")] or rows == [
        ("cpu:x86_64:generic", "ok", "yes"), ("vulkan:generic", "ok", "no"),
        ("cpu:x86_64:generic", "ok", "no")], rows
    # The same numbers as /metrics.
    assert int(_tile(page, "compiles-ok")) == srv.metric("kiln_compiles_total", outcome="ok") == 2
    assert int(_tile(page, "cache-hits")) == srv.metric("kiln_cache_requests_total",
                                                        result="hit") >= 1
    assert int(_tile(page, "cache-misses")) == srv.metric("kiln_cache_requests_total",
                                                          result="miss") >= 2
    assert int(_tile(page, "queue-depth")) == srv.metric("kiln_compile_queue_depth") == 0
    assert int(_tile(page, "in-flight")) == srv.metric("kiln_compiles_in_flight") == 0
    # This minute's bar and hit rate; local compiles; the disk tier holds both executables.
    chart = page[page.index('<svg id="chart"'):page.index("</svg>")]
    assert sum(map(int, re.findall(r"<title>(\d+) compiled</title>", chart))) == 2
    assert "<circle" in chart or "<polyline" in chart
    assert "Local compiles (--compile local)" in _tile(page, "cluster")
    assert int(_tile(page, "cache-blobs")) >= 2 and int(_tile(page, "cache-records")) >= 2
    assert int(re.search(r'data-bytes="(\d+)"', page).group(1)) > 0  # type: ignore[union-attr]
    # Every target kind of GET /v1/targets, with its default.
    for kind in httpx.get(srv.url + "/v1/targets").json()["kinds"]:
        assert f"<b>{kind['kind']}</b>" in page and f"<code>{kind['default']}</code>" in page
    # The page is counted like any route.
    assert srv.metric("kiln_requests_total", route="/", status="200") >= 1


def test_kernel_cache_hits_and_tuned_answers_show_as_shares(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Kernel hits and misses reach /metrics, and the page shows their share and the
    share of GET /v1/tuning answers that held a choice ("—" before there is any)."""
    with kiln_server(tmp_path_factory, workers=1, kernel_cache=1, access_log="false") as s:
        c = s.client()
        page = c.get("/").text
        assert _tile(page, "kernel-hit-share") == _tile(page, "tuned-share") == "—"
        # Two Vulkan MLPs sharing three layers: the second reuses their kernels.
        for layers in (SHALLOW, DEEP):
            r = c.post("/v1/compile", json={"graph": {"format": "mlir",
                                                      "data": mlp(layers).decode()},
                                            "targets": ["vulkan"]})
            assert r.status_code == 200, r.text
        hits = s.metric("kiln_kernel_cache_total", kind="vulkan", result="hit")
        misses = s.metric("kiln_kernel_cache_total", kind="vulkan", result="miss")
        assert hits >= 3 and misses >= 4  # DEEP found SHALLOW's three hidden layers
        assert s.metric("kiln_kernel_cache_total", kind="cuda", result="fallback") == 0  # listed
        # One tuning question without records: asked, nothing served.
        r = c.get(f"/v1/tuning/{'ab' * 32}", params={"target": "cpu", "runtime": "3.13.0"})
        assert r.status_code == 200 and r.json()["choice"] is None
        assert (s.metric("kiln_tuning_gets_total"), s.metric("kiln_tuned_serves_total")) == (1, 0)
        page = c.get("/").text
        assert _tile(page, "kernel-hit-share") == f"{100 * hits / (hits + misses):.0f}%"
        assert _tile(page, "tuned-share") == "0%"
        # The same MLP for another target starts from its stored input phase (front-end cache).
        assert s.metric("kiln_frontend_cache_total", result="miss") == 2
        r = c.post("/v1/compile", json={"graph": {"format": "mlir",
                                                  "data": mlp(SHALLOW).decode()},
                                        "targets": ["vulkan:llvmpipe"]})
        assert r.status_code == 200, r.text
        assert s.metric("kiln_frontend_cache_total", result="hit") == 1


def test_without_a_session_the_page_asks_for_a_token_and_shows_nothing_else(
    locked: KilnServer,
) -> None:
    with httpx.Client(base_url=locked.url) as anon, httpx.Client(base_url=locked.url) as signed:
        _login_flow(locked, anon, signed)


def _login_flow(locked: KilnServer, anon: httpx.Client, signed: httpx.Client) -> None:
    page = anon.get("/")
    assert page.status_code == 200 and page.headers["content-security-policy"].startswith(CSP)
    assert '<form method="post" action="/login">' in page.text and 'name="token"' in page.text
    for secret in ("Recent compiles", "compiles-ok", "Targets", "cpu:x86_64", "IREE", "process"):
        assert secret not in page.text
    assert "set-cookie" not in page.headers
    # A wrong token, or no form at all, is refused and sets nothing.
    wrong = anon.post("/login", data={"token": "nope"})
    assert wrong.status_code == 403 and "not accepted" in wrong.text
    assert "set-cookie" not in wrong.headers
    assert anon.post("/login", content=b"{}", headers={"content-type": "application/json"}
                     ).status_code == 400
    # A forged cookie is no session.
    forged = httpx.get(locked.url + "/", headers={"Cookie": "kiln_session=abc.def"})
    assert "Recent compiles" not in forged.text and "/login" in forged.text
    # The right token: a session cookie, HttpOnly, SameSite=Strict, Path=/, and then the page.
    ok = anon.post("/login", data={"token": TOKEN})
    assert ok.status_code == 303 and ok.headers["location"] == "/"
    cookie = ok.headers["set-cookie"]
    attrs = {a.strip().split("=")[0].lower() for a in cookie.split(";")[1:]}
    assert {"httponly", "path", "samesite"} <= attrs
    assert "SameSite=Strict" in cookie and "Path=/;" in cookie + ";"
    value = cookie.split(";")[0]
    assert value.startswith("kiln_session=")
    signed.headers["Cookie"] = value
    page = signed.get("/")
    assert page.status_code == 200 and "Recent compiles" in page.text
    assert 'action="/login"' not in page.text
    # An edited session id fails its signature.
    sid, sig = value.split("=", 1)[1].split(".")
    other = sid[:-1] + ("B" if sid.endswith("A") else "A")
    edited = httpx.get(locked.url + "/", headers={"Cookie": f"kiln_session={other}.{sig}"})
    assert "Recent compiles" not in edited.text
    # The cookie opens the page and nothing else: the API still wants the bearer header.
    compile_ = signed.post("/v1/compile", json={"graph": {"format": "mlir", "data": LINALG},
                                                "targets": ["cpu"]})
    assert compile_.status_code == 401 and compile_.json()["error"]["code"] == "unauthorized"
    for path in ("/metrics", "/v1/targets", "/openapi.json", "/docs"):
        assert signed.get(path).status_code == 401, path
    # The bearer header opens the page too (curl, monitoring).
    assert "Recent compiles" in locked.client().get("/").text
    # Signing out ends the session: the same cookie no longer opens the page.
    assert 'action="/logout"' in page.text
    out = signed.post("/logout", headers={"Sec-Fetch-Site": "same-origin"})
    assert out.status_code == 303 and "Max-Age=0" in out.headers["set-cookie"]
    assert "Recent compiles" not in signed.get("/").text


def test_another_site_can_neither_sign_a_browser_in_nor_out(locked: KilnServer) -> None:
    """Login CSRF: a page elsewhere posting the form (with the attacker's own valid token) into a
    victim's browser, which sends the site's Origin or Sec-Fetch-Site."""
    with httpx.Client(base_url=locked.url) as browser:
        for headers in ({"Origin": "https://evil.example"}, {"Origin": "null"},
                        {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"},
                        {"Origin": locked.url, "Sec-Fetch-Site": "cross-site"}):
            r = browser.post("/login", data={"token": TOKEN}, headers=headers)
            assert r.status_code == 403 and "set-cookie" not in r.headers, headers
        # The server's own page: the browser says same-origin (with Origin: null, as the page's
        # no-referrer policy makes it), or the Origin is the server's own.
        for headers in ({"Sec-Fetch-Site": "same-origin", "Origin": "null"},
                        {"Origin": locked.url}):
            ok = browser.post("/login", data={"token": TOKEN}, headers=headers)
            assert ok.status_code == 303 and "kiln_session=" in ok.headers["set-cookie"], headers
        browser.headers["Cookie"] = ok.headers["set-cookie"].split(";")[0]
        # Nor signed out from elsewhere.
        r = browser.post("/logout", headers={"Origin": "https://evil.example"})
        assert r.status_code == 403 and "set-cookie" not in r.headers
        assert "Recent compiles" in browser.get("/").text


def test_wrong_tokens_are_throttled_per_address(tmp_path_factory: pytest.TempPathFactory) -> None:
    with kiln_server(tmp_path_factory, workers=1, tokens=TOKEN) as s, \
            httpx.Client(base_url=s.url) as guesser:
        codes = [guesser.post("/login", data={"token": f"guess-{i}"}).status_code
                 for i in range(8)]
        assert codes == [403] * 5 + [429] * 3
        r = guesser.post("/login", data={"token": TOKEN})  # even the right one, for a while
        assert r.status_code == 429 and 1 <= int(r.headers["retry-after"]) <= 60
        assert "set-cookie" not in r.headers
        # The API's bearer header is not a sign-in: it still works.
        assert s.client().get("/v1/targets").status_code == 200


def test_without_tokens_login_wants_the_form_and_opens_the_public_page(srv: KilnServer) -> None:
    with httpx.Client(base_url=srv.url) as c:
        assert c.post("/login").status_code == 400
        r = c.post("/login", data={"token": "anything"})
        assert r.status_code == 303 and r.headers["location"] == "/"
        assert "set-cookie" not in r.headers


def test_everything_rendered_is_escaped() -> None:
    hostile = "<script>alert(1)</script>"
    html_ = _recent([Answer(0.0, hostile, "compile_failed", False, None, 1.5,
                            "sha256:" + "a" * 64, f'error near "{hostile}" & more')])
    assert "<script>" not in html_ and "&lt;script&gt;" in html_ and "&amp; more" in html_
    assert 'title="error near &quot;' in html_


def test_activity_and_sessions_are_bounded() -> None:
    now = [600.0]
    act = Activity(minutes=3, recent=2, clock=lambda: now[0])
    act.compiled("ok")
    act.looked_up("hit")
    now[0] += 120
    act.compiled("error")
    act.looked_up("miss")
    series = act.series()
    assert [(m.compiles, m.failed, m.hits, m.misses) for m in series] == [
        (1, 0, 1, 0), (0, 0, 0, 0), (0, 1, 0, 1)]
    now[0] += 600
    assert all(m.compiles == m.failed == 0 for m in act.series())  # the hour moved on
    result = CompileResult("sha256:" + "b" * 64, None, (), None, [],  # type: ignore[arg-type]
                           [TargetError(t, CompileError("boom"))
                            for t in ("cpu", "vulkan", "metal")])
    act.answered(result, 0.5)
    assert [a.target for a in act.recent()] == ["metal", "vulkan"]
    assert act.recent()[0].outcome == "compile_failed"

    clock = [0.0]
    sessions = Sessions(ttl=10, max_entries=2, clock=lambda: clock[0])
    a, b, c = sessions.new(), sessions.new(), sessions.new()
    assert not sessions.valid(a) and sessions.valid(b) and sessions.valid(c)  # oldest out
    assert len(sessions) == 2
    clock[0] = 11
    assert not sessions.valid(b)  # expired
    assert not sessions.valid(None) and not sessions.valid("x" * 1000)


def test_cluster_mode_shows_each_queue_and_live_worker(redis_server: RedisServer) -> None:
    from kiln.cluster.queue import PREFIX, CompileQueue, worker_heartbeat
    from kiln.cluster.types import queue_for

    queue = CompileQueue(redis_server.url, visibility_timeout=60)
    try:
        queue.client.rpush(PREFIX + "celery:" + queue_for("cuda"), b"m1", b"m2")
        worker_heartbeat(queue.client, "w-<1>", {
            "name": "w-<1>", "host": "node-a", "queues": [queue_for("cuda")], "busy": 1,
            "concurrency": 2, "compiles": 7, "started": 0.0}, ttl=30)
        svc: Any = SimpleNamespace(queue=queue)
        view = cluster_view(svc)
        assert view is not None and not view.error
        assert view.queues[queue_for("cuda")] == 2 and view.queues[queue_for("cpu")] == 0
        page = _cluster(view, svc)
        assert "Cluster mode" in page and "w-&lt;1&gt;" in page and "node-a" in page
        assert f"<code>{queue_for('cuda')}</code></td><td class=\"n\">2<" in page
        assert ">1/2<" in page  # busy / concurrency
    finally:
        queue.close()
    assert cluster_view(SimpleNamespace(queue=None)) is None  # type: ignore[arg-type]


def _png_pixels(data: bytes) -> tuple[int, int, int, bytes]:
    """(width, height, bytes per pixel, the unfiltered scanlines) of an 8-bit RGB/RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    out = bytearray()
    prev = bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev, strict=True))
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pred) & 255
        out += line
        prev = line
    return width, height, bpp, bytes(out)


def test_headless_chromium_renders_the_page_offline(srv: KilnServer, tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Debian's chromium is missing: scripts/bootstrap.sh installs it"
    shot = tmp_path / "status.png"
    proc = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}",
         # No name resolves and no host but the server's answers: the page needs no network.
         "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
         f"--screenshot={shot}", "--window-size=1280,900", srv.url + "/"],
        capture_output=True, text=True, timeout=90, check=False,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert shot.is_file(), proc.stderr[-3000:]
    width, height, bpp, pixels = _png_pixels(shot.read_bytes())
    assert (width, height) == (1280, 900)
    # Not blank: many colours (text, the dark header, the chart), no colour covering it all.
    colours: dict[bytes, int] = {}
    for i in range(0, len(pixels), bpp * 7):
        px = pixels[i:i + 3]
        colours[px] = colours.get(px, 0) + 1
    sampled = sum(colours.values())
    assert len(colours) > 50, len(colours)
    assert max(colours.values()) < 0.9 * sampled
    assert colours.get(bytes((0x1d, 0x23, 0x30)), 0) > 0.01 * sampled  # the header's colour
    assert colours.get(bytes((0x35, 0x63, 0xc9)), 0) > 0  # a compile bar of the chart
    if os.environ.get("KILN_UPDATE_SCREENSHOT") == "1":
        shutil.copyfile(shot, REPO / "docs" / "status-page.png")
