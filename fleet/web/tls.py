"""The console's TLS: the API's certificate and key, and its client CA (mTLS) when there is one."""

from __future__ import annotations

import ssl
from pathlib import Path


def server_context(
    cert_file: Path, key_file: Path, client_ca_file: Path | None = None
) -> ssl.SSLContext:
    """An HTTPS server context; with ``client_ca_file`` browsers must present a certificate."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    if client_ca_file is not None:
        context.load_verify_locations(client_ca_file)
        context.verify_mode = ssl.CERT_REQUIRED
    return context
