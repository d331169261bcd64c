"""Shared data types of the statistics layer: the per-seed samples a criterion takes
(`ArmSample`), the result it gives (`CriterionResult`, which a report reads without re-running
any statistics) and the rule that reads a verdict off p-values against θ."""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal

import numpy as np
from scipy import stats as sps

from grokverify.claim.criteria import CriterionSpec
from grokverify.claim.metrics import Kind
from grokverify.kinds import CRITERIA
from grokverify.numbers import format_number
from grokverify.stats.verdict import Verdict


def jsonable(value: Any) -> Any:
    """Recursively convert to JSON-safe values: inf -> "inf", -inf -> "-inf", NaN -> None (JSON
    has no infinities, and a median beyond the budget is a common outcome that must survive)."""
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


@dataclass(frozen=True, eq=False)  # eq=False: array equality has no single truth value
class ArmSample:
    """Per-seed values of one arm's metric, of either kind (docs/verdicts.md, "Metrics and their
    kinds"), coerced to float / bool arrays so that the statistics never see integer or object
    arrays."""

    name: str
    values: np.ndarray  # time: the event's step, or the censoring step (budget) if not observed
    observed: np.ndarray  # a value metric is never censored: all True
    seeds: tuple[int, ...]
    excluded: dict[str, int] = field(default_factory=dict)  # reason -> seeds left out
    # further metrics of the same seeds (label -> array; NaN: undefined for that seed), e.g. a
    # correlation's x and y; "<label>.observed" carries a mask, else every value is observed
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
    """One arm's row in the reports: usable seeds, those left out, and the columns its
    criterion chose (ordered label -> value, a pair being a CI; NaN where undefined, inf where a
    median is beyond the budget), since what describes an arm depends on the criterion."""

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
    # one-sided p's against θ that give the CI's verdict (`verdict_from_p`), so that a family
    # can correct them (docs/verdicts.md, "p-values against θ"); None: no estimate
    p_support: float | None = None
    p_refute: float | None = None
    p_value_label: str = "no-effect test p"  # what `p_value` tests, for the reports

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict: inf -> "inf", -inf -> "-inf", NaN -> None (`jsonable`)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["arms"] = [asdict(a) for a in self.arms]
        return jsonable(out)


Region = Literal["less", "greater"]


P_TOL = 1e-9  # relative float tolerance of a p-value at the level alpha


def verdict_from_p(p_support: float | None, p_refute: float | None, alpha: float) -> Verdict:
    """The CI's verdict from its p's against θ at one-sided level `alpha`: ``<=`` supports and
    ``<`` refutes (the boundary belongs to the claimed region), within `P_TOL`, since bootstrap
    p's often equal alpha exactly while ``(1 - 0.9) / 2`` is 0.04999999999999999."""
    if p_support is not None and p_support <= alpha * (1 + P_TOL):
        return Verdict.SUPPORTED
    if p_refute is not None and p_refute < alpha * (1 - P_TOL):
        return Verdict.REFUTED
    return Verdict.INCONCLUSIVE


def wald_p(estimate: float, se: float, boundary: float, region: Region) -> tuple[float, float]:
    """(p_support, p_refute) of a normal statistic against `boundary` for the claimed region
    ``effect <= boundary`` (``less``) or ``>=`` (``greater``), on the scale where the CI is
    ``estimate -/+ z se``, so that they give that CI's verdict."""
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


# A criterion's details name, under this key, why its interval method does not hold for the
# data at hand (docs/verdicts.md, "Intervals that do not hold"); `judge` then decides nothing.
INTERVAL_FAILS = "interval_fails"


def judge(params: CriterionSpec, arms: dict[str, ArmSample]) -> CriterionResult:
    """The registered criterion's statistics applied to the arms' samples; a result whose
    interval method does not hold for them is INCONCLUSIVE, saying why."""
    return interval_held(CRITERIA.of(params)(params, arms))


def interval_held(result: CriterionResult) -> CriterionResult:
    """`result` unless its details say its interval does not hold: then INCONCLUSIVE with an
    unbounded CI and no p against θ (a family counts it as no evidence); the computed CI and
    verdict are kept in details."""
    why = result.details.get(INTERVAL_FAILS)
    if not why or result.verdict == Verdict.FINDING:
        return result
    details = {**result.details, "ci_computed": list(result.ci),
               "p_computed": [result.p_support, result.p_refute],
               "verdict_if_interval_held": result.verdict.value}
    reason = (f"No verdict: the interval method does not hold for these data ({why}); the "
              f"{result.effect_label}'s point estimate is {format_number(result.estimate)}, "
              "and more seeds or a method that holds for such data are needed.")
    return replace(result, verdict=Verdict.INCONCLUSIVE, reason=reason,
                   ci=(-math.inf, math.inf), p_support=None, p_refute=None, details=details)
