import numpy as np
import pytest

from tests.generation.scripted import FakeOpenAIServer
from toolsense.generation.pools import Neighbourhoods
from toolsense.generation.structured import SERVER_FORMATS


@pytest.fixture(autouse=True)
def _fresh_server_formats():
    """Each test negotiates from scratch: a fake server's port may be reused by a later one."""
    SERVER_FORMATS.forget()
    yield


@pytest.fixture(scope="session")
def nb(demo_catalog):
    """Neighbourhoods of the demo catalog by the embedded MiniLM (encoded once per session)."""
    from toolsense.models.encoders import load_encoder

    texts = [f"{t.api_title}: {t.api_description}" for t in demo_catalog]
    return Neighbourhoods(demo_catalog, embeddings=np.asarray(load_encoder(None).encode(texts, normalize_embeddings=True)))


@pytest.fixture
def server_factory():
    """Scripted OpenAI-compatible servers on 127.0.0.1 (tests/generation/scripted.py), closed after the test."""
    servers = []

    def make(**kw):
        servers.append(FakeOpenAIServer(**kw))
        return servers[-1]

    yield make
    for s in servers:
        s.close()
