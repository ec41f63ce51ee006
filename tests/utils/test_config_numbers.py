"""Every number of every job's config, fed a NaN, an inf, a negative and a fraction through the one
converter (``to_config``): each is refused naming its field, or accepted where its declaration
(``Annotated[..., Range(...)]``, a ``float`` type) says the value means something (issue 49).

The walk starts from the schemas the seven jobs register (``toolsense.utils.hydra.SCHEMAS``), so a
new job or a new numeric field is covered without touching this file; each field is fed inside
its job's composed default config, so a refusal is the field's own, not a neighbour's."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import math
import pkgutil
import typing
from typing import Annotated, Any, Iterator

import pytest

import toolsense.jobs
from toolsense.utils.compose import compose
from toolsense.utils.config import NON_NEGATIVE, Range, to_config, to_plain
from toolsense.utils.errors import ConfigError
from toolsense.utils.hydra import SCHEMAS

NaN, INF = math.nan, math.inf


def _schemas() -> dict[str, type]:
    for mod in pkgutil.iter_modules(toolsense.jobs.__path__):
        importlib.import_module(f"toolsense.jobs.{mod.name}")  # each registers its schema at import
    return dict(SCHEMAS)


EXAMPLE_KEYS = {"sweep_workers": ("grid",), "memorization.format_epochs": ("desc2tok",)}
"""Where a dict of numbers is empty by default: a key its own checks take, so the number is what is judged."""


def _leaves(hint: Any, data: Any, path: tuple, field: str, rng: Range | None = None) -> Iterator[tuple]:
    """(path into the plain config, the dotted field a refusal must name, int or float, declared
    range) for each numeric field reachable from ``data``; a list or dict of numbers is probed at
    its first element (or at an example key)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        inner, *meta = args
        yield from _leaves(inner, data, path, field, next((m for m in meta if isinstance(m, Range)), rng))
    elif origin is typing.Union:
        for m in args:
            if m is not type(None):
                yield from _leaves(m, data, path, field, rng)
    elif hint in (int, float):
        yield path, field, hint, rng or NON_NEGATIVE
    elif origin in (list, tuple) and args:
        elems = data if isinstance(data, list) else []
        if elems or not dataclasses.is_dataclass(args[0]):
            yield from _leaves(args[0], elems[0] if elems else None, path + (0,), field)
    elif origin is dict and len(args) == 2:
        items = data if isinstance(data, dict) else {}
        keys = (next(iter(items)),) if items else EXAMPLE_KEYS.get(field, ("probe",))
        if items or not dataclasses.is_dataclass(args[1]):
            yield from _leaves(args[1], items.get(keys[0]), path + keys[:1], field if not dataclasses.is_dataclass(args[1])
                               else f"{field}.{keys[0]}")
    elif dataclasses.is_dataclass(hint) and isinstance(data, dict):
        hints = typing.get_type_hints(hint, include_extras=True)
        for f in dataclasses.fields(hint):
            if f.init:
                yield from _leaves(hints[f.name], data.get(f.name), path + (f.name,), f"{field}.{f.name}".lstrip("."))


def _set(data: Any, path: tuple, value: Any) -> Any:
    data = copy.deepcopy(data)
    node = data
    for step, nxt in zip(path[:-1], path[1:]):
        want = list if isinstance(nxt, int) else dict
        if not isinstance(node[step] if isinstance(node, list) else node.get(step), want):
            node[step] = want()
        node = node[step]
    if isinstance(path[-1], int) and not node:
        node.append(value)
    node[path[-1]] = value
    return data


REQUIRED = {"audit": ["data.path=traces.jsonl"]}
"""What a job's defaults leave unset and its schema requires."""
EXAMPLES = {"generate": {"prices": {"some-model": {"input": 1.0, "output": 2.0}}}}
"""Where a dict of numbers is empty by default: one entry its own checks take."""


def _cases() -> list:
    out = []
    for name, cls in sorted(_schemas().items()):
        job = name.removesuffix("_schema")
        composed = compose(job, REQUIRED.get(job, []))
        if "output_dir" in composed:  # ${hydra:runtime.output_dir} outside a running app
            composed.output_dir = "/nonexistent/out"
        data = {**to_plain(composed), **EXAMPLES.get(job, {})}
        to_config(cls, data)  # the defaults themselves pass
        for path, field, kind, rng in _leaves(cls, data, (), ""):
            for label, value in (("nan", NaN), ("inf", INF), ("negative", -1), ("fraction", 2.5 if kind is int else 0.5)):
                out.append(pytest.param(cls, data, path, field, kind, rng, value, id=f"{job}:{'.'.join(map(str, path))}={label}"))
    return out


def _meaningful(kind: type, rng: Range, value: float) -> bool:
    """Whether the declaration says ``value`` is a value of this field."""
    if math.isnan(value):
        return False
    if math.isinf(value):
        return rng.inf and value > 0
    if kind is int and not float(value).is_integer():
        return False
    return rng.refusal(value) is None


CASES = _cases()


def test_the_walk_reaches_every_job_and_the_numbers_the_issue_names():
    fields = {(p.values[0].__name__, p.values[3]) for p in CASES}
    assert {c for c, _ in fields} == {"TrainConfig", "EvaluateConfig", "GenerateConfig", "AuditConfig", "CompareConfig",
                                      "AnnotateJobConfig", "StudyConfig"}
    for want in [("EvaluateConfig", "metrics.min_hits"), ("EvaluateConfig", "metrics.seed"), ("EvaluateConfig", "metrics.resamples"),
                 ("EvaluateConfig", "decoding.beam_width"), ("EvaluateConfig", "metrics.ks"), ("GenerateConfig", "seed"),
                 ("GenerateConfig", "writer.timeout_s"), ("AuditConfig", "stats.seed"), ("AuditConfig", "scorer.unparseable_score"),
                 ("TrainConfig", "trainer.seed"), ("TrainConfig", "stage1.max_steps")]:
        assert want in fields
    assert len(fields) >= 100


@pytest.mark.parametrize("cls, data, path, field, kind, rng, value", CASES)
def test_every_number_is_refused_naming_its_field_or_declared_meaningful(cls, data, path, field, kind, rng, value):
    bad = _set(data, path, value)
    if _meaningful(kind, rng, value):
        to_config(cls, bad)  # declared meaningful: accepted
        return
    with pytest.raises(ConfigError) as refused:
        to_config(cls, bad)
    assert field in str(refused.value)


def test_a_negative_or_inf_is_accepted_only_where_declared():
    """Besides fractions of float fields, the values accepted are the few declarations that say so."""
    accepted = sorted({f"{p.values[0].__name__}:{p.values[3]}={p.values[6]}" for p in CASES
                       if _meaningful(p.values[4], p.values[5], p.values[6]) and p.values[6] != 0.5})
    assert accepted == ["EvaluateConfig:decoding.length_penalty=-1", "TrainConfig:stage1.max_steps=-1",
                        "TrainConfig:stage2.max_queries=-1", "TrainConfig:stage2.max_steps=-1"]
