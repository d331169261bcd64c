"""Shared data types of the statistics layer.

Arms arrive as per-seed time-to-event data (`ArmSample`); a criterion turns them into a
`CriterionResult` that carries the estimate, its CI, the verdict and the reason, so that reports
can be written without re-running any statistics.

JSON convention (`CriterionResult.to_dict`): ``inf`` -> the string ``"inf"``, ``-inf`` -> ``"-inf"``
and NaN -> ``None``, because JSON has no infinities and an infinite median ("beyond the budget")
is a meaningful, common outcome that must survive a round trip.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np
import pydantic


class Verdict(str, enum.Enum):
    """Outcome for one claim; PARTIAL is for claims judged by several criteria."""

    SUPPORTED = "SUPPORTED"
    REFUTED = "REFUTED"
    PARTIAL = "PARTIAL"
    INCONCLUSIVE = "INCONCLUSIVE"


def jsonable(value: Any) -> Any:
    """Recursively convert to JSON-safe values: inf -> "inf", -inf -> "-inf", NaN -> None."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return _json_float(float(value))
    return value


def _json_float(x: float) -> float | str | None:
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


OBSERVED_SUFFIX = ".observed"


@dataclass(frozen=True, eq=False)
class ArmSample:
    """Per-seed time-to-event data for one arm.

    ``times`` holds the step at which the event (threshold reached) happened, or the censoring
    step (the budget) when ``observed`` is False. Arrays are coerced to float / bool so that the
    statistics never see integer or object arrays; ``eq=False`` because element-wise array
    comparison has no single truth value (identity equality and hashing instead).

    ``extra`` optionally holds further per-seed metrics of the *same* seeds, in the same order
    (name -> array of the same length), for criteria that relate two metrics (``correlation``).
    Values are floats; NaN marks a seed for which that metric is undefined. A key
    ``"<metric>.observed"`` may carry that metric's observed mask (coerced to bool); without it
    every finite value of the metric counts as observed.
    """

    name: str
    times: np.ndarray
    observed: np.ndarray
    seeds: tuple[int, ...]
    excluded: dict[str, int] = field(default_factory=dict)
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        times = np.asarray(self.times, dtype=float).reshape(-1)
        observed = np.asarray(self.observed, dtype=bool).reshape(-1)
        if times.shape != observed.shape:
            raise ValueError(f"arm {self.name!r}: times and observed differ in length")
        if len(self.seeds) != times.size:
            raise ValueError(f"arm {self.name!r}: {len(self.seeds)} seeds for {times.size} times")
        if not np.all(np.isfinite(times)) or np.any(times < 0):
            raise ValueError(f"arm {self.name!r}: times must be finite and >= 0")
        extra: dict[str, np.ndarray] = {}
        for key, values in dict(self.extra).items():
            kind = bool if str(key).endswith(OBSERVED_SUFFIX) else float
            arr = np.asarray(values, dtype=kind).reshape(-1)
            if arr.size != times.size:
                raise ValueError(f"arm {self.name!r}: extra metric {key!r} has {arr.size} values "
                                 f"for {times.size} seeds")
            extra[str(key)] = arr
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "observed", observed)
        object.__setattr__(self, "extra", extra)
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))

    @property
    def n(self) -> int:
        return int(self.times.size)

    @property
    def events(self) -> int:
        return int(self.observed.sum())


@dataclass
class ArmSummary:
    """Descriptive per-arm numbers; math.inf where the median is not reached / CI unbounded.

    ``median``/``median_ci`` are always the Kaplan-Meier median of the arm's per-seed values
    (censored seeds right-censored); ``stats`` holds the numbers the criterion itself used for
    this arm (e.g. ``{"mean": ..., "censored_as_budget": ...}``), NaN where undefined.
    """

    name: str
    n: int
    events: int
    censored: int
    excluded: dict[str, int]
    median: float
    median_ci: tuple[float, float]
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass
class CriterionResult:
    """Everything a report needs about one criterion applied to one claim."""

    criterion: str
    effect_label: str
    estimate: float
    ci: tuple[float, float]
    ci_level: float
    p_value: float | None
    test: str
    threshold: float
    claimed_region: str
    verdict: Verdict
    reason: str
    arms: list[ArmSummary]
    details: dict[str, Any]
    # One-sided p-values against the boundary of the claimed region, for families (multiplicity
    # correction): small p_support = the effect lies inside the region; small p_refute = outside.
    p_support: float | None = None
    p_refute: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict: inf -> "inf", -inf -> "-inf", NaN -> None (see module docstring)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["arms"] = [asdict(a) for a in self.arms]
        return jsonable(out)


@dataclass(frozen=True)
class Criterion:
    """A named, parameterised statistical test that yields a verdict for a claim.

    ``metrics_of`` (optional) names the per-seed metrics the criterion reads (e.g.
    ``correlation``'s ``[x, y]``); the pipeline should put each into ``ArmSample.extra[name]``
    (with ``"<name>.observed"``). A name missing from ``extra`` is read from ``ArmSample.times``,
    which is right only when it is the claim's own ``metric``. None: the claim's metric only.
    """

    name: str
    params_model: type[pydantic.BaseModel]
    run: Callable[[pydantic.BaseModel, dict[str, ArmSample]], CriterionResult]
    arms_of: Callable[[pydantic.BaseModel], list[str]]
    metrics_of: Callable[[pydantic.BaseModel], list[str]] | None = None
