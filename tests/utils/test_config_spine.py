"""The one converter (toolsense.utils.config.to_config) and schema registration: every entry
script binds its config through them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional, Union

import pytest
from omegaconf import OmegaConf

from toolsense.utils.choices import StrEnum
from toolsense.utils.config import as_plain, defaults_of, omegaconf_can_type, to_config


class Color(StrEnum):
    red = "red"
    blue = "blue"


@dataclass
class Leaf:
    n: int = 1
    color: Color = Color.red

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError(f"n must be >= 0, got {self.n}")


@dataclass
class Root:
    leaf: Leaf = field(default_factory=Leaf)
    leaves: list[Leaf] = field(default_factory=list)
    by_name: dict[str, Leaf] = field(default_factory=dict)
    maybe: Optional[Leaf] = None
    mode: Literal["a", "b"] = "a"
    order: Union[Literal["auto"], list[Union[str, int]]] = "auto"
    name: str = "x"


def test_nested_lists_dicts_optional_and_enums_are_built():
    cfg = to_config(Root, OmegaConf.create({"leaf": {"n": 2, "color": "blue"}, "leaves": [{"n": 3}],
                                            "by_name": {"k": {"color": "blue"}}, "maybe": {"n": 4}, "order": [3, "x"]}))
    assert cfg.leaf == Leaf(2, Color.blue) and cfg.leaf.color is Color.blue
    assert cfg.leaves == [Leaf(3)] and cfg.by_name == {"k": Leaf(1, Color.blue)} and cfg.maybe == Leaf(4)
    assert cfg.order == [3, "x"] and cfg.mode == "a" and cfg.name == "x"
    assert to_config(Root, None) == Root() and to_config(Root, cfg) is cfg


@pytest.mark.parametrize("data, message", [
    ({"leaf": {"m": 1}}, "leaf: unknown field(s) ['m']; known: ['color', 'n']"),
    ({"leaves": [{}, {"n": -1}]}, "leaves[1]: n must be >= 0, got -1"),
    ({"by_name": {"k": {"color": "green"}}}, "by_name.k.color='green': choose from ['red', 'blue']"),
    ({"mode": "c"}, "mode='c': choose from ['a', 'b']"),
    ({"order": "sideways"}, "order='sideways': expected one of"),
    ({"maybe": {"n": -2}}, "maybe: n must be >= 0, got -2"),
    ({"bogus": 1}, "config: unknown field(s) ['bogus']"),
])
def test_errors_name_the_dotted_field(data, message):
    with pytest.raises(ValueError) as e:
        to_config(Root, data)
    assert message in str(e.value)


def test_ignore_unknown_drops_keys_a_saved_config_may_carry():
    assert to_config(Leaf, {"n": 5, "old_key": 1}, "run.yaml: leaf", ignore_unknown=True) == Leaf(5)


def test_hydra_node_is_dropped_and_interpolations_resolved():
    node = OmegaConf.create({"hydra": {"x": 1}, "name": "${other}", "other": "y"})

    @dataclass
    class Two:
        name: str = ""
        other: str = ""

    assert to_config(Two, node) == Two("y", "y")


def test_defaults_and_typing_decide_how_a_schema_is_registered():
    assert defaults_of(Root)["leaf"] == {"n": 1, "color": "red"} and defaults_of(Root)["order"] == "auto"
    assert as_plain(Leaf(2, Color.blue)) == {"n": 2, "color": "blue"}
    assert omegaconf_can_type(Leaf) and not omegaconf_can_type(Root)
    from toolsense.audit.config import AuditConfig
    from toolsense.evaluation.config import EvaluateConfig
    from toolsense.generation.config import GenerateConfig
    from toolsense.training.config import TrainConfig

    assert omegaconf_can_type(TrainConfig) and omegaconf_can_type(GenerateConfig)
    assert not omegaconf_can_type(AuditConfig) and not omegaconf_can_type(EvaluateConfig)  # Literal / Union fields
