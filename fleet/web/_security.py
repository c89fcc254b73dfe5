"""The console's defences, as aiohttp middlewares: headers on every answer, the API's token on
every ``/api/`` call, and no cross-site writes.

Decisions:

* Model output is untrusted. The page renders it with ``textContent`` only; the
  Content-Security-Policy is the second wall: scripts from this origin's files only (no inline
  script, no ``eval``), nothing framed, no plugins, no form posts elsewhere.
* The token is the API's (``FLEET_API_TOKEN``): with one set, every ``/api/`` call needs
  ``Authorization: Bearer <token>``, as every RPC does. The page keeps it in ``sessionStorage``
  and sends it from JavaScript; it is never a cookie, so another site cannot make the browser
  send it (no CSRF by construction).
* Writes must also be ``application/json`` (a cross-site form cannot send that without a
  CORS preflight, which this server never grants) and, when the browser says where they come
  from, come from this origin.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
}
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def error(status: int, message: str) -> web.Response:
    """A JSON error the page shows as is: ``{"error": message}``."""
    return web.json_response({"error": message}, status=status, headers=HEADERS)


@web.middleware
async def security_headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as e:
        response = e
    for k, v in HEADERS.items():
        response.headers.setdefault(k, v)
    if request.path.startswith("/api/"):
        response.headers.setdefault("Cache-Control", "no-store")
    return response


def token_check(token: str) -> Middleware:
    """The API's bearer token on ``/api/`` (none needed when ``token`` is empty), and the
    same-origin JSON rule on writes."""
    expected = f"Bearer {token}".encode()

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith("/api/"):
            return await handler(request)
        if token:
            presented = request.headers.get("Authorization", "")
            if not hmac.compare_digest(presented.encode(), expected):
                log.info("web: refused %s %s: %s bearer token", request.method, request.path,
                         "wrong" if presented else "no")  # fmt: skip
                return error(401, "missing or invalid bearer token (Authorization header)")
        if request.method not in SAFE_METHODS:
            if request.content_type != "application/json":
                return error(415, "writes take a JSON body (Content-Type: application/json)")
            origin = request.headers.get("Origin")
            if origin is not None and origin != own_origin(request):
                return error(403, f"cross-site request from {origin} refused")
        return await handler(request)

    return check


def own_origin(request: web.Request) -> str:
    return f"{request.scheme}://{request.host}"
