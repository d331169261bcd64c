"""Grids: a sweep over one or two settings written once, expanded into named arms (or family
members) before the claim is validated, so criteria, families, scales and reports see ordinary
arms."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from grokverify.claim.base import Float, Int, Name, StrictModel, kind_of
from grokverify.claim.limits import NAME_PATTERN, NAME_WORDS

_PATH = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*")
Value = bool | Int | Float | str


class Span(StrictModel):
    """`num` settings from `low` to `high` (both included), evenly spaced on a linear or a log
    scale, each rounded to `digits` significant digits (so the generated names stay short:
    10^-3.667 is named 0.000215, not 0.00021544346900318823)."""

    low: Float
    high: Float
    num: Int = Field(ge=2, le=64)
    scale: Literal["linear", "log"] = "linear"
    digits: Int = Field(3, ge=1, le=15, description="significant digits kept of each setting")

    @model_validator(mode="after")
    def _range(self) -> Span:
        if not self.low < self.high:
            raise ValueError(f"low < high needed, got low {self.low:g}, high {self.high:g}")
        if self.scale == "log" and self.low <= 0:
            raise ValueError(f"a log scale needs low > 0, got {self.low:g}")
        return self

    def points(self) -> list[float]:
        lo, hi = (math.log10(self.low), math.log10(self.high)) if self.scale == "log" else (
            self.low, self.high)
        raw = [lo + (hi - lo) * i / (self.num - 1) for i in range(self.num)]
        return [float(f"{10 ** v if self.scale == 'log' else v:.{self.digits}g}") for v in raw]


class GridAxis(StrictModel):
    path: str = Field(description="dotted field of the experiment, e.g. optimizer.lr")
    values: list[Any] | None = Field(None, min_length=2, max_length=64,
                                     description="the settings (numbers, strings or "
                                                 "true/false), each becoming one entry")
    span: Span | None = Field(None, description="or evenly spaced numbers: {low, high, num, "
                                                "scale: linear | log}")

    @field_validator("path")
    @classmethod
    def _dotted(cls, v: str) -> str:
        if not _PATH.fullmatch(v):
            raise ValueError("expected a dotted field path such as optimizer.lr")
        return v

    @field_validator("values")
    @classmethod
    def _distinct(cls, v: list[Any] | None) -> list[Value] | None:
        return None if v is None else _checked(v)

    @model_validator(mode="after")
    def _one_way(self) -> GridAxis:
        if (self.values is None) == (self.span is None):
            raise ValueError("give the settings one way: values (a list) or span")
        _checked(self.settings)  # a span's rounded settings must still name distinct entries
        return self

    @property
    def settings(self) -> list[Value]:
        """The values as listed, or the span's."""
        if self.values is not None:
            return self.values
        assert self.span is not None  # one of the two: _one_way
        return list(self.span.points())


def _checked(v: list[Any]) -> list[Value]:
    for i, x in enumerate(v):  # checked here: a union's errors would say nothing useful
        if not isinstance(x, bool | int | float | str) or (
                isinstance(x, float) and not math.isfinite(x)):
            what = repr(x) if isinstance(x, float) else kind_of(x)  # nan, inf: by value
            raise ValueError(f"each value is a number, a string or true/false; item {i} is "
                             f"{what}")
    names = [value_name(x) for x in v]
    if len(set(names)) != len(names):
        raise ValueError(f"each value once (got {names})")
    return v


class GridSpec(StrictModel):
    """A sweep over one or two settings, each combination one arm (or family member): ``axes:
    {c: {path: optimizer.emb_lr_mult, values: [1, 2, 10]}}`` with ``name: "c{c}"`` generates
    arms c1, c2 and c10, each ``base`` deep-merged with ``{optimizer: {emb_lr_mult: v}}``. Two
    axes give their product in the order written (the first varies slowest); ``span`` gives
    evenly spaced numbers instead of ``values``. A number is named as Python's ``g`` format
    writes it (0.01 -> "0.01", 1e-05 -> "1e-05"; a "+" is dropped)."""

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
        for made, _ in _combinations(name, axes):
            if not NAME_PATTERN.fullmatch(made):
                raise ValueError(f"{name!r} generates {made!r}, not a name: expected "
                                 f"{NAME_WORDS}")
        return name

    def entries(self) -> dict[str, list[Setting]]:
        """Generated name -> its setting on each axis, in order (the claim loader deep-merges
        them over `base`: `grokverify.claim.load.deep_merge`)."""
        return dict(_combinations(self.name, self.axes))


@dataclass(frozen=True)
class Setting:
    """One axis's value in one generated entry; `index` is the value's place in the axis's
    list (problems in the entry point at its line)."""

    axis: str
    path: str
    index: int
    value: Value

    def partial(self) -> dict[str, Any]:
        """"optimizer.lr", 0.1 -> {"optimizer": {"lr": 0.1}}."""
        node: Any = self.value
        for key in reversed(self.path.split(".")):
            node = {key: node}
        return node


def _combinations(template: str,
                  axes: dict[str, GridAxis]) -> Iterator[tuple[str, list[Setting]]]:
    """(entry name, its settings) for every combination of the axes' values, first axis
    slowest."""
    for combo in itertools.product(*(enumerate(ax.settings) for ax in axes.values())):
        settings = [Setting(name, ax.path, i, v)
                    for (name, ax), (i, v) in zip(axes.items(), combo, strict=True)]
        made = template
        for st in settings:
            made = made.replace("{" + st.axis + "}", value_name(st.value))
        yield made, settings


def value_name(value: Value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}".replace("+", "")
    return str(value)
