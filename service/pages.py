"""The HTML of Kiln's browser pages (the status page and its sign-in form): one escaping
function, one style sheet, the response headers. Every value that reaches a page goes through
``e``; the headers forbid scripts, requests and frames (``CSP``)."""

from __future__ import annotations

import html

from starlette.responses import HTMLResponse, Response

__all__ = ["CSP", "HEADERS", "OPENAPI_HTML", "e", "html_response", "login_page", "page"]

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
HEADERS = {
    "Content-Security-Policy": CSP,
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
REFRESH_SECONDS = 15
#: An HTML answer, as the OpenAPI document describes it.
OPENAPI_HTML = {"content": {"text/html": {"schema": {"type": "string"}}}}


def html_response(text: str, *, status: int = 200) -> Response:
    return HTMLResponse(text, status_code=status, headers=HEADERS)


def e(value: object) -> str:
    """Every value that reaches the page goes through here."""
    return html.escape(str(value), quote=True)


_STYLE = """
body{font:14px/1.4 "DejaVu Sans",system-ui,sans-serif;margin:0;color:#1d2330;background:#f4f5f8}
header{background:#1d2330;color:#fff;padding:10px 24px;display:flex;gap:24px;align-items:baseline}
header h1{font-size:20px;margin:0}header span{color:#b8c0d0}
main{padding:12px 24px;display:grid;grid-template-columns:1fr 1fr;gap:16px}
section{background:#fff;border:1px solid #dde1ea;border-radius:6px;padding:10px 14px}
section.wide{grid-column:1/3}h2{font-size:15px;margin:0 0 8px}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:3px 8px 3px 0;
border-bottom:1px solid #eef0f4;font-size:13px;vertical-align:top}th{color:#5a6275;font-weight:600}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.tiles{display:flex;gap:10px;flex-wrap:wrap}.tile{border:1px solid #dde1ea;border-radius:6px;
padding:6px 12px;flex:1 1 0;min-width:80px}.tile b{display:block;font-size:22px}.tile small{color:#5a6275}
.ok{color:#1a7f37}.bad{color:#c62828}.muted{color:#5a6275}code{font-size:12px}
form{display:flex;gap:8px;align-items:center}input{font:inherit;padding:4px 8px;width:320px}
"""


def page(title: str, body: str, *, refresh: bool) -> str:
    meta = f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">' if refresh else ""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">{meta}'
            f'<meta name="viewport" content="width=device-width">'
            f"<title>{e(title)}</title><style>{_STYLE}</style></head><body>{body}</body></html>")


def login_page(problem: str = "") -> str:
    note = f'<p class="bad" id="login-error">{e(problem)}</p>' if problem else ""
    return page("Kiln: sign in", (
        '<header><h1>Kiln</h1><span>status</span></header><main><section class="wide">'
        "<h2>Sign in</h2><p>This server needs a token to show its status.</p>"
        f'{note}<form method="post" action="/login"><label for="token">Token</label>'
        '<input id="token" name="token" type="password" autocomplete="current-password" '
        'required autofocus><button type="submit">Sign in</button></form></section></main>'
    ), refresh=False)
