"""What every request and response of the viewer goes through, static files included.

- Only GET and HEAD: no route changes anything, and no other method is answered (405).
- The ``Host`` header must name the address the viewer was bound to when that is
  a loopback one (127.0.0.1, localhost, ::1): a page of another site that a
  browser resolves to 127.0.0.1 (DNS rebinding) gets a 400.
- With a token (required off loopback), every request must carry it: as
  ``?token=`` (the URL ``ood-store serve`` prints; the viewer then sets a cookie,
  HttpOnly and SameSite=Strict, so that its own links need no token), as that
  cookie, or as ``Authorization: Bearer TOKEN``. Compared in constant time.
- Every response forbids what the viewer does not do: a Content-Security-Policy
  that lets pages run only the viewer's own scripts (no inline script, no
  ``eval``, nothing from another origin), no framing, no referrer (the token may
  be in the URL), no MIME sniffing.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "ood_store_token"
#: Scripts, styles, images and fetches from the viewer's own origin only; no inline script, no eval.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-cache"),
)
METHODS = ("GET", "HEAD")


class Guard:
    """ASGI middleware: methods, Host, token and the security headers (see the module documentation)."""

    def __init__(self, app: ASGIApp, *, token: str | None, hosts: frozenset[str] | None):
        self.app = app
        self.token = token
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if scope["method"] not in METHODS:
            await _plain(
                send, 405, "The viewer is read-only: it answers GET and HEAD only.", [(b"allow", b"GET, HEAD")]
            )
            return
        if self.hosts is not None and _hostname(headers.get("host", "")) not in self.hosts:
            await _plain(send, 400, "Unexpected Host header: open the address `ood-store serve` printed.")
            return
        given_by_query = False
        if self.token is not None:
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            cookies = SimpleCookie()
            cookies.load(headers.get("cookie", ""))
            bearer = headers.get("authorization", "")
            offered = [
                query.get("token"),
                cookies[COOKIE].value if COOKIE in cookies else None,
                bearer[7:] if bearer.lower().startswith("bearer ") else None,
            ]
            if not any(t is not None and hmac.compare_digest(t.encode(), self.token.encode()) for t in offered):
                await _plain(send, 401, "This viewer needs its token: open the URL `ood-store serve` printed.")
                return
            given_by_query = query.get("token") is not None

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = list(HEADERS)
                if given_by_query and self.token is not None:
                    cookie = f"{COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/"
                    extra.append((b"set-cookie", cookie.encode("latin-1")))
                names = {name for name, _ in extra}
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
                message["headers"] = kept + extra
            await send(message)

        await self.app(scope, receive, secured)


def _hostname(host: str) -> str:
    """The name of a Host header without its port: ``127.0.0.1:8000`` -> ``127.0.0.1``, ``[::1]:80`` -> ``::1``."""
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


async def _plain(send: Send, status: int, text: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = (text + "\n").encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
                        *HEADERS, *(headers or [])],
        }
    )  # fmt: skip
    await send({"type": "http.response.body", "body": body})
