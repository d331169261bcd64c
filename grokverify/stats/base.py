"""Shared data types of the statistics layer.

Arms arrive as per-seed values of a metric, times to an event or signed values (`ArmSample`); a
criterion turns them into a `CriterionResult` that carries the estimate, its CI, the verdict,
the reason and its own per-arm rows, so that reports can be written without re-running any
statistics.

JSON convention (`CriterionResult.to_dict`): ``inf`` -> the string ``"inf"``, ``-inf`` -> ``"-inf"``
and NaN -> ``None``, because JSON has no infinities and an infinite median ("beyond the budget")
is a meaningful, common outcome that must survive a round trip.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

import numpy as np
from scipy import stats as sps

from grokverify.claim.criteria import CriterionSpec
from grokverify.claim.metrics import Kind
from grokverify.kinds import CRITERIA
from grokverify.numbers import format_number
from grokverify.stats.verdict import Verdict


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
    """Per-seed values of one arm's metric, of either metric kind.

    ``kind`` ``"time"``: ``values`` hold the step at which the event (threshold reached)
    happened, or the censoring step (the budget) when ``observed`` is False; they must be finite
    and >= 0. ``kind`` ``"value"``: signed per-seed numbers (a probe's mean over a window, ...),
    finite and all observed (a value metric is never censored). Arrays are coerced to float /
    bool so that the statistics never see integer or object arrays; ``eq=False`` because
    element-wise array comparison has no single truth value (identity equality and hashing
    instead).

    ``extra`` optionally holds further per-seed metrics of the *same* seeds, in the same order
    (label -> array of the same length), for criteria that relate two metrics
    (``correlation``). Values are floats; NaN marks a seed for which that metric is undefined.
    A key ``"<label>.observed"`` may carry that metric's observed mask (coerced to bool);
    without it every finite value of the metric counts as observed.
    """

    name: str
    values: np.ndarray
    observed: np.ndarray
    seeds: tuple[int, ...]
    excluded: dict[str, int] = field(default_factory=dict)
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    kind: Kind = "time"

    def __post_init__(self) -> None:
        values = np.asarray(self.values, dtype=float).reshape(-1)
        observed = np.asarray(self.observed, dtype=bool).reshape(-1)
        if values.shape != observed.shape:
            raise ValueError(f"arm {self.name!r}: values and observed differ in length")
        if len(self.seeds) != values.size:
            raise ValueError(f"arm {self.name!r}: {len(self.seeds)} seeds for {values.size} "
                             "values")
        if self.kind not in _KIND_RULES:
            raise ValueError(f"arm {self.name!r}: unknown metric kind {self.kind!r}")
        problem = _KIND_RULES[self.kind](values, observed)
        if problem:
            raise ValueError(f"arm {self.name!r}: {problem}")
        extra: dict[str, np.ndarray] = {}
        for key, column in dict(self.extra).items():
            dtype = bool if str(key).endswith(OBSERVED_SUFFIX) else float
            arr = np.asarray(column, dtype=dtype).reshape(-1)
            if arr.size != values.size:
                raise ValueError(f"arm {self.name!r}: extra metric {key!r} has {arr.size} values "
                                 f"for {values.size} seeds")
            extra[str(key)] = arr
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "observed", observed)
        object.__setattr__(self, "extra", extra)
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))

    @property
    def n(self) -> int:
        return int(self.values.size)

    @property
    def events(self) -> int:
        return int(self.observed.sum())


def _time_problem(values: np.ndarray, observed: np.ndarray) -> str | None:
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        return "times must be finite and >= 0"
    return None


def _value_problem(values: np.ndarray, observed: np.ndarray) -> str | None:
    if not np.all(np.isfinite(values)):
        return "values must be finite"
    if not np.all(observed):
        return "a value metric is never censored: every value must be observed"
    return None


_KIND_RULES: dict[str, Callable[[np.ndarray, np.ndarray], str | None]] = {
    "time": _time_problem, "value": _value_problem}


@dataclass
class ArmSummary:
    """One arm's row in the reports: its usable seeds, those left out, and the columns its
    criterion chose (ordered label -> value; a pair is a CI), because what describes an arm
    depends on the criterion and the metric kind (a Kaplan-Meier median for censored times, a
    mean for signed values, a share for a proportion). Values are NaN where undefined, inf where
    a median is beyond the budget."""

    name: str
    n: int
    excluded: dict[str, int]
    columns: dict[str, Any] = field(default_factory=dict)


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
    # One-sided p-values against the boundary θ of the claimed region, coherent with the CI
    # (`verdict_from_p` gives the CI's verdict) so that families can correct them across members:
    # small p_support = the effect lies inside the region; small p_refute = outside. None: no
    # estimate (the result is INCONCLUSIVE with its reason).
    p_support: float | None = None
    p_refute: float | None = None
    # What `p_value` tests, for the reports: most criteria report a test of no effect, which
    # never decides a verdict; one whose own p is against θ says so.
    p_value_label: str = "no-effect test p"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict: inf -> "inf", -inf -> "-inf", NaN -> None (see module docstring)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["arms"] = [asdict(a) for a in self.arms]
        return jsonable(out)


Region = Literal["less", "greater"]


P_TOL = 1e-9  # relative float tolerance of a p-value at the level alpha


def verdict_from_p(p_support: float | None, p_refute: float | None, alpha: float) -> Verdict:
    """The CI's verdict read off its one-sided p-values against θ at one-sided level `alpha`
    (``(1 - ci_level) / 2``): the boundary belongs to the claimed region, so a CI bound *at* θ
    supports (``p_support <= alpha``) but does not refute (``p_refute < alpha``). Bootstrap p's
    are multiples of 1 / n_boot and often equal alpha exactly, while ``(1 - 0.9) / 2`` is
    0.04999999999999999 in floats, so alpha is compared within a relative `P_TOL`."""
    if p_support is not None and p_support <= alpha * (1 + P_TOL):
        return Verdict.SUPPORTED
    if p_refute is not None and p_refute < alpha * (1 - P_TOL):
        return Verdict.REFUTED
    return Verdict.INCONCLUSIVE


def wald_p(estimate: float, se: float, boundary: float, region: Region) -> tuple[float, float]:
    """(p_support, p_refute) of a normal statistic against `boundary` for the claimed region
    ``{effect <= boundary}`` (``less``) or ``{effect >= boundary}`` (``greater``), on the scale
    where the CI is ``estimate -/+ z se``: the CI's bound passes the boundary at level
    ``1 - 2 p`` exactly, so the p's give the CI's verdict (`verdict_from_p`)."""
    with np.errstate(all="ignore"):
        z = (estimate - boundary) / se
    above, below = float(sps.norm.sf(z)), float(sps.norm.cdf(z))  # small: effect above / below
    return (above, below) if region == "greater" else (below, above)


def p_against_words(result: dict[str, Any]) -> str:
    """The p-values against θ in plain words (from `CriterionResult.to_dict`), for the reports
    to print next to the verdict: they decide it, at the CI's one-sided level."""
    p_support, p_refute = result.get("p_support"), result.get("p_refute")
    if result.get("verdict") == "FINDING":
        return "p against θ: — (an open question: no claimed region, nothing tested)"
    if p_support is None and p_refute is None:
        return "p against θ: — (no estimate)"
    alpha = (1.0 - float(result["ci_level"])) / 2.0
    n_boot = (result.get("details") or {}).get("n_boot")

    def shown(p: float | None) -> str:
        """A bootstrap p of 0 only says that no resample crossed θ: p < 1 / n_boot. One side
        alone is None where censored seeds make it invalid (the lower-bound rule)."""
        if p is None:
            return "withheld (censored seeds make it invalid)"
        p = float(p)
        return f"< {format_number(1 / n_boot)}" if p == 0 and n_boot else f"= {format_number(p)}"

    return (f"p(support) {shown(p_support)}, p(refute) {shown(p_refute)} against θ, the "
            f"boundary of the claimed region (one-sided; each decides at {alpha:.4g})")


def judge(params: CriterionSpec, arms: dict[str, ArmSample]) -> CriterionResult:
    """The registered criterion's statistics applied to the arms' samples."""
    return CRITERIA.of(params)(params, arms)
