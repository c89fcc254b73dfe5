"""A long-lived ``ruff server`` per process: the same lint as ``ruff check``, without starting a
20 MiB binary for every answer.

A ``ruff check`` run is ~5 ms of CPU, nearly all of it the kernel starting the binary, for a lint
that takes ruff well under a millisecond. ``ruff server`` is ruff's own language server (LSP over
stdin and stdout): the client opens a document, asks for its diagnostics (the pull model,
``textDocument/diagnostic``) and closes it, 0.3 ms a lint. It reads no configuration file
(``configurationPreference: editorOnly``) and lints with the rules given at ``initialize``, as
``ruff check --isolated --select …`` does; the findings are the same (tested on every answer of
the selection corpus).

One request at a time (a lock: a lint is far shorter than the wait for it), each with a
deadline. A server that fails, answers late or garbles a message is killed and the caller falls
back to ``ruff check``; the next lint starts a fresh server. A forked child starts its own
rather than talk on its parent's pipes.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["Finding", "RuffServer", "RuffServerError"]

_URI = "file:///nonexistent/fleet-lint/{n}/solution.py"
"""Documents live nowhere on disk, so no configuration file can sit above them."""


class RuffServerError(Exception):
    """The server could not start, answer in time or be understood (the message says which)."""


@dataclass(frozen=True)
class Finding:
    rule: str
    """The rule's code (``F821``), or ``invalid-syntax``."""
    row: int
    """1-based, as ``ruff check`` reports it."""
    column: int
    message: str


class RuffServer:
    """``ruff server`` with ``rules`` selected; thread-safe; started on the first ``lint``."""

    def __init__(self, binary: str, rules: list[str], env: dict[str, str]) -> None:
        self._argv = [binary, "server"]
        self._rules = rules
        self._env = env
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid = 0
        self._buffer = bytearray()
        self._next = 0
        atexit.register(self.close)

    def lint(self, code: str, timeout_s: float) -> list[Finding]:
        """Ruff's findings on ``code`` as one module, in ``ruff check``'s order.

        Raises:
            RuffServerError: no answer within ``timeout_s`` (the server is then gone).
        """
        deadline = time.monotonic() + timeout_s
        with self._lock:
            try:
                if self._proc is None or self._pid != os.getpid() or self._proc.poll() is not None:
                    self._start(deadline)
                return self._lint(code, deadline)
            except (OSError, ValueError, KeyError, TypeError, RuffServerError) as e:
                self._stop()
                raise RuffServerError(f"ruff server: {e}") from e

    def close(self) -> None:
        with self._lock:
            self._stop()

    # ------------------------------------------------------------------------ the protocol

    def _start(self, deadline: float) -> None:
        self._proc = None  # a parent's server (after a fork) is left to the parent
        self._buffer.clear()
        self._proc = subprocess.Popen(
            self._argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=self._env,
        )
        self._pid = os.getpid()
        settings = {
            "configurationPreference": "editorOnly",
            "lint": {"select": self._rules, "preview": False},
            "showSyntaxErrors": True,
            "fixAll": False,
            "organizeImports": False,
        }
        capabilities = {"textDocument": {"diagnostic": {"dynamicRegistration": False}}}
        params = {
            "processId": os.getpid(),
            "rootUri": None,
            "capabilities": capabilities,
            "initializationOptions": {"settings": settings},
        }
        self._request("initialize", params, deadline)
        self._notify("initialized", {})

    def _lint(self, code: str, deadline: float) -> list[Finding]:
        self._next += 1
        document = {"uri": _URI.format(n=self._next)}
        opened = {**document, "languageId": "python", "version": 1, "text": code}
        self._notify("textDocument/didOpen", {"textDocument": opened})
        try:
            report = self._request("textDocument/diagnostic", {"textDocument": document}, deadline)
        finally:
            self._notify("textDocument/didClose", {"textDocument": document})
        found = [
            Finding(
                rule=str(d.get("code") or "invalid-syntax"),
                row=int(d["range"]["start"]["line"]) + 1,
                column=int(d["range"]["start"]["character"]) + 1,
                message=str(d.get("message", "")).split("\n\n")[0],  # without its "help: …"
            )
            for d in _items(report)
        ]
        return sorted(found, key=lambda f: (f.row, f.column, f.rule))

    def _request(self, method: str, params: object, deadline: float) -> dict[str, Any]:
        self._next += 1
        number = self._next
        self._send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
        while True:
            message = self._receive(deadline)
            if "method" in message:
                if "id" in message:  # a request of the server's: nothing we offer
                    self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                continue
            if message.get("id") != number:
                continue
            if "error" in message:
                raise RuffServerError(f"{method} failed: {message['error']}")
            result = message.get("result")
            if not isinstance(result, dict):
                raise RuffServerError(f"{method} answered {result!r}")
            return result

    def _notify(self, method: str, params: object) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def _send(self, message: dict[str, object]) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        body = json.dumps(message).encode()
        try:
            self._proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            self._proc.stdin.flush()
        except BrokenPipeError:
            raise RuffServerError("it exited (its input is closed)") from None

    def _receive(self, deadline: float) -> dict[str, Any]:
        """The next message, read as it comes (never past ``deadline``)."""
        while True:
            head, sep, rest = self._buffer.partition(b"\r\n\r\n")
            if sep:
                sizes = [
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ]
                if not sizes:
                    raise RuffServerError(f"a message without its length: {bytes(head[:80])!r}")
                length = sizes[0]
                if len(rest) >= length:
                    body = bytes(rest[:length])
                    del self._buffer[: len(head) + len(sep) + length]
                    message = json.loads(body)
                    if not isinstance(message, dict):
                        raise RuffServerError(f"not a message: {body[:80]!r}")
                    return message
            self._read(deadline)

    def _read(self, deadline: float) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise RuffServerError("no answer in time")
        chunk = os.read(fd, 65536)
        if not chunk:
            raise RuffServerError("it exited")
        self._buffer += chunk

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or self._pid != os.getpid():
            return
        with contextlib.suppress(OSError):
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        for stream in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()


def _items(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The diagnostics of a full document report (JSON as the server sent it: Any)."""
    items = report.get("items")
    if not isinstance(items, list) or not all(isinstance(d, dict) for d in items):
        raise RuffServerError(f"a diagnostic report without items: {str(report)[:80]}")
    return items
