"""Grids: a sweep over one or two settings written once, expanded into named arms (or family
members) before the claim is validated, so criteria, families, scales and reports see ordinary
arms.

    grid:
      into: arms                  # or members (of the claim's family)
      name: "c{c}"                # every axis once, in braces
      axes:
        c: {path: optimizer.emb_lr_mult, values: [1, 2, 4, 8, 10, 16, 32]}
      base: {}                    # optional partial experiment under every generated entry

generates arms c1, c2, ..., c32, each `base` deep-merged with {optimizer: {emb_lr_mult: v}};
two axes give their product, in the order written (the first axis varies slowest). A number is
named as Python's `g` format writes it (0.01 -> "0.01", 1e-05 -> "1e-05"; a "+" is dropped).
"""

from __future__ import annotations

import itertools
import math
import re
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from grokverify.catalog.limits import NAME_PATTERN, NAME_WORDS
from grokverify.specbase import Float, Int, Name, StrictModel

_PATH = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*")
Value = bool | Int | Float | str


class GridAxis(StrictModel):
    path: str = Field(description="dotted field of the experiment, e.g. optimizer.lr")
    values: list[Any] = Field(min_length=2, max_length=64,
                              description="the settings (numbers, strings or true/false), each "
                                          "becoming one entry")

    @field_validator("path")
    @classmethod
    def _dotted(cls, v: str) -> str:
        if not _PATH.fullmatch(v):
            raise ValueError("expected a dotted field path such as optimizer.lr")
        return v

    @field_validator("values")
    @classmethod
    def _distinct(cls, v: list[Any]) -> list[Value]:
        for i, x in enumerate(v):  # checked here: a union's errors would say nothing useful
            if not isinstance(x, bool | int | float | str) or (
                    isinstance(x, float) and not math.isfinite(x)):
                what = {dict: "a mapping", list: "a list", type(None): "null"}.get(
                    type(x), f"{x!r}")
                raise ValueError(f"each value is a number, a string or true/false; item {i} is "
                                 f"{what}")
        names = [value_name(x) for x in v]
        if len(set(names)) != len(names):
            raise ValueError(f"each value once (got {names})")
        return v


class GridSpec(StrictModel):
    into: Literal["arms", "members"] = Field(
        "arms", description="arms of the claim, or members of its family")
    axes: dict[Name, GridAxis] = Field(min_length=1, max_length=2,
                                       description="one or two settings to sweep")
    name: str = Field(min_length=1, description="entry name template: every axis once, "
                                                "in braces, e.g. \"c{c}\"")
    base: dict[str, Any] = Field(default_factory=dict,
                                 description="partial experiment under every generated entry")

    @field_validator("name")
    @classmethod
    def _template(cls, name: str, info: ValidationInfo) -> str:
        axes: dict[str, GridAxis] | None = info.data.get("axes")
        if axes is None:  # the axes' own problem is reported
            return name
        used = re.findall(r"\{([^{}]*)\}", name)
        if sorted(used) != sorted(axes):
            raise ValueError(f"{name!r} must use every axis once, in braces: "
                             f"{', '.join('{' + a + '}' for a in axes)}")
        for made in _names(name, axes):
            if not NAME_PATTERN.fullmatch(made):
                raise ValueError(f"{name!r} generates {made!r}, not a name: expected "
                                 f"{NAME_WORDS}")
        return name

    def entries(self) -> dict[str, list[dict[str, Any]]]:
        """Generated name -> the partial experiments to deep-merge over `base`, one per axis,
        in order (the claim loader merges them with its own rule, `spec.deep_merge`)."""
        combos = itertools.product(*(ax.values for ax in self.axes.values()))
        return {name: [nested(ax.path, value)
                       for ax, value in zip(self.axes.values(), combo, strict=True)]
                for name, combo in zip(_names(self.name, self.axes), combos, strict=True)}


def _names(template: str, axes: dict[str, GridAxis]) -> list[str]:
    """The entry names, first axis slowest."""
    out = []
    for combo in itertools.product(*(ax.values for ax in axes.values())):
        name = template
        for axis, value in zip(axes, combo, strict=True):
            name = name.replace("{" + axis + "}", value_name(value))
        out.append(name)
    return out


def value_name(value: Value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}".replace("+", "")
    return str(value)


def nested(path: str, value: Value) -> dict[str, Any]:
    """"optimizer.lr", 0.1 -> {"optimizer": {"lr": 0.1}}."""
    node: Any = value
    for key in reversed(path.split(".")):
        node = {key: node}
    return node
