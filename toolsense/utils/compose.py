"""The one way toolsense composes a job's config outside its own ``@hydra.main``: evaluate.yaml
after training (and for the leakage refusal before it), the paper's rows, the exports and the
tests all come through :func:`compose`.

The configs ship inside the package (``toolsense/conf``, Hydra's ``pkg://toolsense.conf``), so an
installed wheel composes them from any working directory. A user's own config folder is added the
way Hydra adds one: ``--config-dir <dir>`` or ``hydra.searchpath=[file://<dir>]`` on a job's command
line; inside such a running job :func:`compose` composes with that job's search path.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Sequence

CONF_MODULE = "toolsense.conf"
"""The package holding the configs, found by import wherever toolsense is installed (``pkg://toolsense.conf``)."""


def conf_dir() -> Path:
    """The shipped configs as a folder on disk (in a checkout, an editable install or a wheel)."""
    return Path(str(files("toolsense").joinpath("conf")))


def compose(name: str, overrides: Sequence[str] = (), return_hydra_config: bool = False):
    """``<name>.yaml`` (train, evaluate, generate, audit, compare, annotate, reproduce) composed
    with ``overrides`` as the job's command line would compose it; a DictConfig. Inside a running
    Hydra app (train.py composing evaluate.yaml) the app's search path is used, so a user's
    ``--config-dir`` reaches this composition too. A list element that is itself an override
    needs no quotes (:func:`quote_list_overrides`). The caller registers the schema
    (``register_configs()``) first, as the job's entry module does at import."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    overrides = quote_list_overrides(overrides)
    if GlobalHydra.instance().is_initialized():
        return hydra_compose(name, overrides=overrides, return_hydra_config=return_hydra_config)
    with initialize_config_module(config_module=CONF_MODULE, version_base="1.3"):
        return hydra_compose(name, overrides=overrides, return_hydra_config=return_hydra_config)


def quote_list_overrides(args: Sequence[str]) -> list[str]:
    """Command-line overrides with each element of a ``[...]`` list that Hydra's grammar cannot
    read bare (one holding ``=``, or starting with ``~``: an override itself) quoted, so
    ``evaluate.overrides=[benchmark=rrb,baseline=bm25]`` reads as
    ``evaluate.overrides=['benchmark=rrb','baseline=bm25']``. Elements already quoted, nested
    lists inside an element and every other argument are left as they are."""
    return [_quote_lists(a) if "=" in a else a for a in args]


def _quote_lists(arg: str) -> str:
    key, sep, value = arg.partition("=")
    out, i = [], 0
    while i < len(value):
        if value[i] in "'\"":
            end = _closing_quote(value, i)
            out.append(value[i:end + 1])
            i = end + 1
        elif value[i] == "[" and (found := _list_items(value, i)) is not None:
            end, items = found
            out.append("[" + ",".join(_quoted(item) for item in items) + "]")
            i = end + 1
        else:
            out.append(value[i])
            i += 1
    return key + sep + "".join(out)


def _closing_quote(text: str, start: int) -> int:
    i = start + 1
    while i < len(text) and text[i] != text[start]:
        i += 2 if text[i] == "\\" else 1
    return min(i, len(text) - 1)


def _list_items(text: str, start: int) -> tuple[int, list[str]] | None:
    """The index of the ``]`` closing the list opened at ``start`` and its top-level elements;
    None when it is not closed (left to Hydra's parser, which names the error)."""
    items, depth, i, begin = [], 0, start + 1, start + 1
    while i < len(text):
        c = text[i]
        if c in "'\"" and not text[begin:i].strip():  # a quoted element (a quote inside a bare one is text)
            i = _closing_quote(text, i)
        elif c in "[{(":
            depth += 1
        elif c in ")}" or (c == "]" and depth):
            depth -= 1
        elif c == "]" or (c == "," and not depth):
            items.append(text[begin:i])
            if c == "]":
                return i, [] if items == [""] or (len(items) == 1 and not items[0].strip()) else items
            begin = i + 1
        i += 1
    return None


def _quoted(item: str) -> str:
    bare = item.strip()
    if not bare or bare[0] in "'\"" or not ("=" in bare or bare[0] == "~"):  # +key=v holds "=", +1 is a number
        return item
    return "'" + bare.replace("'", "\\'") + "'"  # Hydra reads a backslash as an escape only before a quote


def check_overrides(overrides: Sequence[str], where: str) -> None:
    """Each of ``overrides`` must be one Hydra override (``group=option``, ``key=value``, ``~key``,
    ``+key=value``): a ValueError names ``where[i]``, the element and Hydra's reason, before anything runs."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    parser = OverridesParser.create()
    for i, text in enumerate(overrides):
        try:
            if not isinstance(text, str):
                raise HydraException(f"a {type(text).__name__}, not an override string")
            parser.parse_overrides([text])
        except HydraException as e:
            reason = str(e).strip().splitlines()[0]
            raise ValueError(f"{where}[{i}]={text!r} is not one override ({reason}); write each as key=value, "
                             "group=option or ~key, e.g. evaluate.overrides=[benchmark=rrb,baseline=bm25]") from None
