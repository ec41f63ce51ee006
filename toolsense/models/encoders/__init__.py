"""One encoder service: local sentence encoders (torch / int8 / onnx backends) and OpenAI
embeddings behind one interface, and a disk cache of each catalog's tool-text embeddings."""

from toolsense.models.encoders import documents as _documents  # noqa: F401  (registers the toolgen / names templates)
from toolsense.models.encoders.cache import TEXT_TEMPLATES, cache_root, catalog_embeddings, encoder_embeddings
from toolsense.models.encoders.embedders import Embedder, SentenceEncoder, length_sorted_batches
from toolsense.models.encoders.loading import BACKENDS, EMBEDDED_MINILM, Backend, embedded_minilm_dir, encoder_identity, load_encoder
from toolsense.models.encoders.remote import OpenAIEmbedder

__all__ = ["BACKENDS", "EMBEDDED_MINILM", "TEXT_TEMPLATES", "Backend", "Embedder", "OpenAIEmbedder", "SentenceEncoder",
           "cache_root", "catalog_embeddings", "encoder_embeddings", "embedded_minilm_dir", "encoder_identity", "length_sorted_batches",
           "load_encoder"]
