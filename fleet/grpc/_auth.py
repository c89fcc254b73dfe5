"""Transport security for the API: TLS / mTLS credentials and a bearer-token check on every call.

Decisions:

* The token travels as ``authorization: Bearer <token>`` metadata and is compared in constant
  time. Every RPC needs it, reflection included; the standard health service stays open, because
  Kubernetes' gRPC probes and load balancers cannot send metadata, and it reveals nothing but
  SERVING / NOT_SERVING.
* A token without TLS is allowed (inside a cluster's private network, or on loopback) but is a
  clear-text secret on the wire; ``fleet up`` says so in its log.
* With a client CA the server *requires* a client certificate signed by it (mTLS): the handshake
  fails without one, before any RPC runs.
* Secrets are never logged: the token is not in ``Settings``' repr, and a refusal says only that
  the token was missing or wrong.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import grpc

log = logging.getLogger(__name__)

OPEN_SERVICES = ("/grpc.health.v1.Health/",)
"""Method prefixes that need no token (probes)."""


def server_credentials(
    cert_file: Path, key_file: Path, client_ca_file: Path | None = None
) -> grpc.ServerCredentials:
    """TLS credentials for the server; with ``client_ca_file`` clients must present a cert."""
    ca = client_ca_file.read_bytes() if client_ca_file is not None else None
    return grpc.ssl_server_credentials(
        [(key_file.read_bytes(), cert_file.read_bytes())],
        root_certificates=ca,
        require_client_auth=ca is not None,
    )


def refusing(
    handler: grpc.RpcMethodHandler, code: grpc.StatusCode, message: str
) -> grpc.RpcMethodHandler:
    """A handler of the same shape as ``handler`` that answers ``code`` and runs nothing.

    An interceptor returns it in place of the real handler: the caller gets a status, not a
    dropped connection, whatever the method's streaming shape.
    """

    async def unary(request: object, context: grpc.aio.ServicerContext[object, object]) -> None:
        await context.abort(code, message)

    async def stream(
        request: object, context: grpc.aio.ServicerContext[object, object]
    ) -> AsyncIterator[None]:
        await context.abort(code, message)
        yield  # pragma: no cover - abort raises

    kw = {
        "request_deserializer": handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.unary_unary:
        return grpc.unary_unary_rpc_method_handler(unary, **kw)
    if handler.unary_stream:
        return grpc.unary_stream_rpc_method_handler(stream, **kw)
    if handler.stream_unary:
        return grpc.stream_unary_rpc_method_handler(unary, **kw)
    return grpc.stream_stream_rpc_method_handler(stream, **kw)


class BearerTokenInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Refuses every call without ``authorization: Bearer <token>`` (health checks excepted)."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("an empty token would accept everyone")
        self._expected = f"Bearer {token}".encode()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        method = handler_call_details.method or ""
        handler = await continuation(handler_call_details)
        if handler is None or method.startswith(OPEN_SERVICES):
            return handler
        presented = ""
        for key, value in handler_call_details.invocation_metadata or ():
            if key == "authorization":
                presented = value if isinstance(value, str) else value.decode(errors="replace")
                break
        if hmac.compare_digest(presented.encode(), self._expected):
            return handler
        log.info("refused %s: %s bearer token", method, "wrong" if presented else "no")
        return refusing(
            handler,
            grpc.StatusCode.UNAUTHENTICATED,
            "missing or invalid bearer token (authorization metadata)",
        )
