"""The documents a retriever indexes for a tool, beyond :meth:`Tool.text` (registered in
:data:`TEXT_TEMPLATES` under the names the baselines' ``baseline.document`` and the embedding
cache's ``template`` take).

Which fields a document holds moves a lexical baseline by many points (docs/reference/paper_tables.md),
so each template states its fields:

==============  ================================================================================
``tool_text``   service title + service description + API title + API description + parameter
                names/types (``Tool.text``; our default)
``api_text``    API title + the API description (the service description when it has none)
``toolgen``     ToolGen's / ToolBench's retrieval document: category, tool name, API name, API
                description, required and optional parameters as JSON, return schema as JSON
``names``       the service and API names only (what every tool has, described or not)
==============  ================================================================================
"""

from __future__ import annotations

import json

from toolsense.catalog.tool import Parameter, Tool
from toolsense.models.encoders.cache import TEXT_TEMPLATES


def _params_json(params: tuple[Parameter, ...]) -> str:
    """ToolBench's parameter list (``[{"name", "type", "description"}, ...]``) as ``json.dumps``
    writes it by default (ASCII-escaped). ToolBench's records also carry ``default``, which our
    catalog records do not keep."""
    return json.dumps([{"name": p.name, "type": p.type, "description": p.description} for p in params])


@TEXT_TEMPLATES.register("toolgen")
def toolgen_document(t: Tool) -> str:
    """The document ToolGen's BM25 and dense evaluations index (Reason-Wang/ToolGen,
    ``evaluation/retrieval/eval_bm25.py`` and ``eval_encoder.py``, both built from ToolBench's
    ``corpus.tsv``): ``"<category>, <tool name>, <API name>, <API description>, required_params:
    <JSON>, optional_params: <JSON>, return_schema: <JSON>"``. It holds no service description
    and no titles. Our records have no ``template_response``, so the return schema is always
    ``""`` (ToolGen's when a record has none); tool and API names are the token's."""
    required = tuple(p for p in t.parameters if p.required)
    optional = tuple(p for p in t.parameters if not p.required)
    return (f"{t.category or ''}, {t.service}, {t.api}, {t.api_description or ''}, "
            f"required_params: {_params_json(required)}, optional_params: {_params_json(optional)}, "
            f"return_schema: {json.dumps('')}")


@TEXT_TEMPLATES.register("names")
def names_document(t: Tool) -> str:
    """``"<service> <API>"``: the floor every tool reaches, described or not."""
    return f"{t.service} {t.api}"
