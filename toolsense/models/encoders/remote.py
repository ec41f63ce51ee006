"""Embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint: OpenAI itself, vLLM, Ollama, llama.cpp's server
started with ``--embedding``.

Texts go ``batch_size`` to a request (length-sorted, :func:`~toolsense.models.encoders.embedders.encode_batched`),
through the endpoint's retries and circuit breaker (:class:`~toolsense.endpoints.client.Endpoint`). A reply holds one
vector per text; a server without pooling (llama.cpp's default for a chat model such as SmolLM2: llama-cpp-python's
server, or ``llama-server --pooling none``) answers one vector *per token* instead, and those are averaged here: the
mean of a text's token vectors, which is what the server computes itself with ``--pooling mean`` (it is logged once).
Such a server is then asked one text a request: llama-cpp-python's (0.3.36) returns the right token vectors for the
first text of a request only (its ``Llama.embed`` steps through the batch's output by tokens, not by floats), and a
reply of token vectors is as large as the texts anyway. Any other reply (a count that is not the batch's, vectors of
different lengths, a text with no token) is refused in one line naming the server.

Each batch is cached once, keyed by the endpoint's URL, the model and the batch's texts (never the key): the
catalog's batches as its cache entry's checkpoints (``cache.py``: ``chunk_done`` / ``skip``), every other batch (a
benchmark's queries) as ``<cache>/embeddings/requests/<sha256>.npy``. A run killed half-way, or stopped by a dead
endpoint, resumes where it stopped and a rerun sends no request for a batch it has embedded before."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from toolsense.endpoints.client import EndpointStop
from toolsense.models.encoders.cache import _save_npy, cache_root
from toolsense.models.encoders.embedders import encode_batched
from toolsense.utils.io import sha256_text

log = logging.getLogger(__name__)


class OpenAIEmbedder:
    """``endpoint`` (:class:`~toolsense.endpoints.client.Endpoint`)'s embeddings of ``model``, ``batch_size`` texts a
    request; ``field`` is the config field that names the model (in refusals). The identity (the cache key) is the
    model name, plus the base URL when it is not OpenAI's."""

    def __init__(self, endpoint: Any, model: str, batch_size: int = 256, field: str = "baseline.encoder",
                 root: str | Path | None = None):
        self.endpoint, self.model, self.batch_size, self.field = endpoint, model, batch_size, field
        base = str(getattr(endpoint, "url", "") or "").rstrip("/")
        # another OpenAI-compatible server may serve a model of the same name: key it apart
        self.identity = f"openai:{model}" + (f"@{base}" if base and "api.openai.com" not in base else "")
        self.requests = cache_root(root) / "requests"
        self.sent = 0
        """Requests sent by this embedder (a rerun over cached batches sends none)."""
        self.per_token = False
        """The server answered one vector per token: it is asked one text a request from then on."""

    def encode(self, texts: Sequence[str], progress: bool = False, chunk_done=None, skip=None) -> np.ndarray:
        """``[len(texts), d]`` float32 rows in the input order (raw: normalising is the caller's). With
        ``chunk_done`` / ``skip`` (the catalog cache's checkpoints) the caller keeps each batch; without them each
        batch is kept under ``requests/``."""
        embed = self._request if chunk_done is not None or skip is not None else self._cached
        return encode_batched(texts, embed, self.batch_size, [len(t) for t in texts], progress, f"embed {self.model}",
                              chunk_done, skip)

    def _cached(self, batch: list[str]) -> np.ndarray:
        path = self.requests / f"{sha256_text(json.dumps([self.identity, batch]))[:32]}.npy"
        if path.is_file():
            try:
                rows = np.load(path)
                if rows.shape[0] == len(batch):
                    return rows
            except (OSError, ValueError) as e:
                log.warning("ignoring unreadable embedding batch %s: %s", path, e)
        rows = self._request(batch)
        path.parent.mkdir(parents=True, exist_ok=True)
        _save_npy(path, rows)
        return rows

    def _send(self, batch: list[str]) -> np.ndarray:
        import openai

        ep = self.endpoint
        try:
            resp = ep.send(lambda: ep.client.embeddings.create(model=self.model, input=batch, encoding_format="float"))
        except (openai.AuthenticationError, openai.PermissionDeniedError) as e:
            raise ep.key_refused(e) from None
        except openai.APIStatusError as e:
            hint = " (a llama.cpp server embeds only when started with --embedding)" if e.status_code in (404, 500, 501) else ""
            raise EndpointStop(f"{self.field}={self.model!r}: {ep.url} refused a request for {len(batch)} embeddings (HTTP "
                               f"{e.status_code}: {ep.short(e, 160)}); the batches embedded before it are cached for a "
                               f"rerun{hint}") from None
        except openai.APIConnectionError as e:
            raise EndpointStop(f"{ep.url} could not be reached (last: {ep.short(e, 80)}); the batches embedded before it "
                               "are cached for a rerun") from None
        self.sent += 1
        return self._vectors(resp.data, len(batch))

    def _request(self, batch: list[str]) -> np.ndarray:
        """One batch's rows: one request, or one a text from a server that answers per token (of a request of many
        texts, only the first text's token vectors are right from llama-cpp-python's server: see the module's doc)."""
        if self.per_token:
            return np.concatenate([self._send([t]) for t in batch])
        rows = self._send(batch)
        if self.per_token and len(batch) > 1:  # this reply was the first per token: keep its first text only
            rows = np.concatenate([rows[:1], *(self._send([t]) for t in batch[1:])])
        return rows

    def _vectors(self, data: Sequence[Any], n: int) -> np.ndarray:
        """One float32 row per text from a reply's ``data``: its vectors in ``index`` order, token vectors averaged."""
        url = self.endpoint.url
        if len(data) != n:
            raise EndpointStop(f"{url} answered {len(data)} embeddings for {n} texts; baseline=openai needs one per text")
        rows = []
        for d in sorted(data, key=lambda d: getattr(d, "index", 0) or 0):
            vec = d.embedding
            try:
                if len(vec) and isinstance(vec[0], (list, tuple)):  # one vector per token: mean pooling
                    if not self.per_token:
                        self.per_token = True
                        log.warning("%s answers one vector per token (a server without pooling): each text's token vectors "
                                    "are averaged, as the server's own --pooling mean would, and it is sent one text a "
                                    "request", url)
                    vec = np.asarray(vec, dtype=np.float64).mean(axis=0)
                rows.append(np.asarray(vec, dtype=np.float32))
            except (TypeError, ValueError) as e:
                raise EndpointStop(f"{url} answered an embedding that is neither a vector nor one vector per token ({e}); "
                                   "baseline=openai needs one of them per text") from None
        if len({r.shape for r in rows}) != 1 or rows[0].ndim != 1 or rows[0].size == 0:
            shapes = sorted({tuple(r.shape) for r in rows})
            raise EndpointStop(f"{url} answered embeddings of different or empty shapes {shapes[:4]} for one batch; "
                               "baseline=openai needs one vector of one length per text")
        return np.stack(rows)
