"""Criteria a claim can name: each one's parameters (a pydantic model with its validators), the
arms and per-seed metrics it reads, and the metric kinds it accepts (`accepts`, `kinds`).

Each is registered with its `run` in `grokverify.stats` (one module per criterion), which this
module never imports, so a claim validates without scipy or statsmodels. What each computes, and
which kinds each takes: docs/verdicts.md.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, Strict, field_validator, model_validator

from grokverify.claim.base import Float, Int, RngSeed
from grokverify.claim.limits import MAX_N_BOOT, MIN_N_BOOT
from grokverify.claim.metrics import Kind, MetricSpec
from grokverify.kinds import CRITERIA, METRICS
from grokverify.numbers import format_number

Effect = Literal["ratio", "difference"]
# The fewest seeds an arm at which a bootstrap CI of medians holds its level (benchmarks/
# calibration.py, "few seeds"; docs/verdicts.md, "Intervals that do not hold").
MIN_MEDIAN_SEEDS = 8
# survival_compare's summary of each arm's KM curve: its median, or its restricted mean up to τ.
SurvivalSummary = Literal["median", "rmst"]
Statistic = Literal["mean", "median", "iqm"]
# How a criterion reads censored times (docs/verdicts.md, "Censoring and divergence").
CensoredPolicy = Literal["as_budget", "refuse", "restricted"]
P = TypeVar("P", bound=BaseModel)

DEFAULT_MIN_EFFECT = 0.2  # relative, for ratios
# Non-inferiority ("treated is not worse than baseline by more than a margin"): the claimed
# region's boundary moves to the other side of no effect, 1 + margin (ratio, direction less),
# 1 - margin (greater), +/- margin (difference). 0 (default): a superiority claim by min_effect.
Margin = Annotated[Float, Field(ge=0, description=(
    "non-inferiority margin: the claim is that treated is worse than baseline by at most this "
    "much (a fraction for a ratio, metric units for a difference); 0 = a superiority claim by "
    "min_effect. At most one of min_effect and margin may be above 0"))]
# The bounds every criterion's CI level and bootstrap size share, stated once.
CILevel = Annotated[Float, Field(gt=0, lt=1)]
NBoot = Annotated[Int, Field(ge=MIN_N_BOOT, le=MAX_N_BOOT)]
# Pair the arms by seed number (default): arms share seed i's split, initialisation and data
# order, so comparing within seed removes the spread both arms share (docs/verdicts.md, "Paired
# analysis"; arms without common seed numbers fall back to unpaired). False: the arms are
# analysed as independent samples.
Paired = Annotated[bool, Strict()]
# any registered metric, told apart by name (built here, once claim.metrics holds them all)
AnyMetric = METRICS.union()
TIME_ONLY: tuple[Kind, ...] = ("time",)
ANY_KIND: tuple[Kind, ...] = ("time", "value")
VALUE_ONLY: tuple[Kind, ...] = ("value",)


MIN_PAIRS = 4  # correlation: the fewest complete (x, y) pairs that give a CI


class CriterionSpec(BaseModel):
    """Base of every criterion's parameters: what the claim loader and the pipeline ask of a
    criterion, without its statistics (registered in `grokverify.kinds.CRITERIA`)."""

    model_config = ConfigDict(extra="forbid")

    accepts: ClassVar[tuple[Kind, ...]] = ANY_KIND  # the metric kinds it can take
    kinds_note: ClassVar[str] = ""  # says when `kinds` narrows `accepts`
    # its results carry p_support/p_refute against θ, so a family can combine its members
    family_ok: ClassVar[bool] = True
    reads_codes: ClassVar[bool] = False  # it reads a phase code per seed (metric `phase`)
    name: str

    def min_seeds(self) -> int:
        """The fewest seeds an arm from which its interval can decide (0: no floor); a scale
        with fewer can only be INCONCLUSIVE (claim/reach.py says so before a run)."""
        return 0

    def arms(self) -> list[str]:
        """The arms it compares, in order."""
        raise NotImplementedError

    def kinds(self) -> tuple[Kind, ...]:
        """The metric kinds it takes with these params."""
        return self.accepts

    def metrics_needed(self) -> list[MetricSpec]:
        """Per-seed metrics it reads besides the claim's own (`ArmSample.extra`)."""
        return []

    def sequential_refusal(self) -> str:
        """Why these params cannot be judged at sequential looks' strict levels ("" if they
        can): such a claim with sequential seeds is refused at load."""
        return ""

    def judged(self) -> bool:
        """Whether they declare what is claimed; an open question's give an estimate only."""
        return True

    def information(self, n: int) -> float:
        """The statistic's information in n seeds per arm (1 / its variance, up to a constant):
        sets the information fractions of sequential looks."""
        return float(n)


class _TwoArms(CriterionSpec):
    baseline: str
    treated: str

    def arms(self) -> list[str]:
        return [self.baseline, self.treated]


class _OneArm(CriterionSpec):
    arm: str

    def arms(self) -> list[str]:
        return [self.arm]


def expect_params(params: BaseModel, cls: type[P]) -> P:
    """The params, checked to be of the criterion's own model (a wiring error otherwise)."""
    if not isinstance(params, cls):
        raise TypeError(f"expected {cls.__name__}, got {type(params).__name__}")
    return params


def check_two_arm_effect(baseline: str, treated: str, effect: Effect, direction: str,
                         min_effect: float, margin: float = 0.0) -> None:
    """Validation shared by the two-arm effect criteria (survival_compare, scalar_compare,
    cox_hazard_ratio through its time ratio): distinct arms, at most one of min_effect and
    margin above 0, and a ratio boundary above 0."""
    if baseline == treated:
        raise ValueError("baseline and treated must be different arms")
    if min_effect > 0 and margin > 0:
        raise ValueError(
            f"give min_effect (superiority: treated beats baseline by at least that much) or "
            f"margin (non-inferiority: treated trails baseline by at most that much), not both: "
            f"min_effect is {min_effect:g} and margin {margin:g}; set the other to 0")
    if effect == "ratio" and direction == "less" and min_effect >= 1:
        raise ValueError("a ratio cannot fall by 100% or more: min_effect must be < 1")
    if effect == "ratio" and direction == "greater" and margin >= 1:
        raise ValueError("a ratio cannot fall by 100% or more: with direction greater the "
                         "non-inferiority margin must be < 1 (the claimed region is ratio >= "
                         "1 - margin)")


def resolve_min_effect(min_effect: float | None, margin: float, default: float | None,
                       what: str) -> float:
    """min_effect as declared; when omitted, 0 under a non-inferiority margin (the margin is
    the claim), else the criterion's default (None: it must be stated, `what` says why)."""
    if min_effect is not None:
        return float(min_effect)
    if margin > 0:
        return 0.0
    if default is None:
        raise ValueError(what)
    return default


def effect_threshold(effect: Effect, direction: str, min_effect: float,
                     margin: float = 0.0) -> float:
    """Boundary of the claimed region: 1 -/+ m for a ratio, -/+ m (metric units) for a
    difference, m = min_effect (superiority); with a non-inferiority margin the boundary moves
    to the other side of 1 (or 0) by the margin: 1 +/- margin, +/- margin."""
    sign = -1.0 if direction == "less" else 1.0
    return (1.0 if effect == "ratio" else 0.0) + sign * (min_effect - margin)


def boundary_words(margin: float, effect: Effect) -> str:
    """What the threshold is, for a verdict's reason (`grokverify.stats.verdict.decide`)."""
    if margin > 0:
        size = f"{margin * 100:g}%" if effect == "ratio" else format_number(margin)
        return f"the non-inferiority bound (margin {size})"
    return "the boundary of the claimed effect"


def effect_words(effect: Effect, min_effect: float, margin: float, treated: str,
                 baseline: str, worse: str, better: str, unit: str = "") -> str:
    """The claimed region in words: "<treated> at least 20% <better>" or "non-inferiority:
    <treated> at most 25% <worse> than <baseline>"; `better`/`worse` name the claimed direction
    and its opposite (faster/slower for a time claimed less)."""
    def size(m: float) -> str:
        if effect == "ratio":
            return f"{m * 100:g}%"
        return f"{format_number(m)}{' ' + unit if unit else ''}"
    if margin > 0:
        return f"non-inferiority: {treated} at most {size(margin)} {worse} than {baseline}"
    return f"{treated} at least {size(min_effect)} {better}"


# ---------------------------------------------------------------- survival_compare


@CRITERIA.register("grokverify.stats.survival:run_survival_compare")
class SurvivalCompareParams(_TwoArms):
    """Claim: treated's time-to-threshold beats/trails baseline's by min_effect, compared through
    a summary of each arm's Kaplan-Meier curve; or, with ``margin`` (non-inferiority), is worse
    than baseline's by at most the margin (``direction: less``, margin 0.25: ratio <= 1.25).
    ``min_effect`` must be stated unless a margin is (it is then 0).

    ``summary: median`` (default): the KM median time-to-threshold. ``summary: rmst``: the
    restricted mean time to threshold up to τ (the area under the KM curve from 0 to τ), which
    stays finite and informative when the median is beyond the budget (heavy censoring). τ is
    ``tau`` when given (the training budget, in steps), else the largest time of either arm's
    seeds (the budget whenever a seed is censored at it); both arms and every bootstrap resample
    share it. ``effect``: ratio (treated / baseline) or difference of the summaries; the claimed
    region and θ are the same for both summaries.

    CI: percentile bootstrap of the effect; ``paired`` (default) resamples seed indices jointly
    across the arms (seeds both arms have), ``false`` each arm on its own."""

    name: Literal["survival_compare"]
    accepts: ClassVar[tuple[Kind, ...]] = TIME_ONLY
    baseline: str
    treated: str
    summary: SurvivalSummary = "median"
    effect: Effect = "ratio"
    direction: Literal["less", "greater"]
    min_effect: Float | None = Field(None, ge=0)
    margin: Margin = 0.0
    tau: Float | None = Field(None, gt=0)
    ci_level: CILevel = 0.95
    n_boot: NBoot = 2000
    bootstrap_seed: RngSeed = 0
    paired: Paired = True

    @model_validator(mode="after")
    def _check(self) -> SurvivalCompareParams:
        self.min_effect = resolve_min_effect(
            self.min_effect, self.margin, None,
            "survival_compare needs min_effect (the smallest effect claimed, 0 = any) or margin "
            "(non-inferiority: the largest shortfall allowed)")
        check_two_arm_effect(self.baseline, self.treated, self.effect, self.direction,
                             self.min_effect, self.margin)
        check_survival_summary(self.summary, self.tau)
        return self

    def min_seeds(self) -> int:
        """KM medians' bootstrap holds its level from MIN_MEDIAN_SEEDS an arm (calibration)."""
        return MIN_MEDIAN_SEEDS if self.summary == "median" else 0

    def sequential_refusal(self) -> str:
        """``summary: rmst`` is calibrated at a fixed seed count only."""
        if self.summary != "rmst":
            return ""
        return ("summary: rmst is calibrated at a fixed number of seeds only: its bootstrap "
                "interval gave false verdicts of 0.032 / 0.038 against the nominal 0.025 at the "
                "strict levels of early sequential looks (benchmarks/calibration.py); give "
                "`seeds` as a number, or use summary: median")

    @property
    def threshold(self) -> float:
        return effect_threshold(self.effect, self.direction, float(self.min_effect or 0.0),
                                self.margin)


def check_survival_summary(summary: SurvivalSummary, tau: float | None) -> None:
    """``tau`` (the restriction time of the RMST) applies to ``summary: rmst`` only."""
    if tau is not None and summary != "rmst":
        raise ValueError("tau (the restriction time) applies to summary: rmst only")


# ---------------------------------------------------------------- cox_hazard_ratio


@CRITERIA.register("grokverify.stats.cox:run_cox")
class CoxHazardRatioParams(_TwoArms):
    """Claim: treated's time-to-threshold is shorter (``less``) or longer (``greater``) than
    baseline's, as a hazard ratio HR = hazard(treated) / hazard(baseline) from a Cox model.

    ``min_effect`` m is the relative change of *time* the claim commits to, as in
    ``survival_compare`` (0.2: "at least 20% faster / slower"), turned into a hazard ratio by the
    constant-hazard (exponential) correspondence HR = 1 / time ratio:

    * ``less``    (treated faster): claimed region ``HR >= 1 / (1 - m)`` (m = 0.2: HR >= 1.25);
    * ``greater`` (treated slower): claimed region ``HR <= 1 / (1 + m)`` (m = 0.2: HR <= 0.833).

    ``margin`` (non-inferiority, then min_effect defaults to 0): treated's time is worse by at
    most the margin, HR = 1 / (the time ratio's boundary): ``less`` ``HR >= 1 / (1 + margin)``
    (0.25: HR >= 0.8), ``greater`` ``HR <= 1 / (1 - margin)``.

    The boundary belongs to the claimed region (as in `grokverify.stats.verdict.decide`).
    """

    name: Literal["cox_hazard_ratio"]
    accepts: ClassVar[tuple[Kind, ...]] = TIME_ONLY
    baseline: str
    treated: str
    direction: Literal["less", "greater"]
    min_effect: Float | None = Field(None, ge=0)
    margin: Margin = 0.0
    ci_level: CILevel = 0.95

    @model_validator(mode="after")
    def _check(self) -> CoxHazardRatioParams:
        self.min_effect = resolve_min_effect(self.min_effect, self.margin, DEFAULT_MIN_EFFECT,
                                             "")
        check_two_arm_effect(self.baseline, self.treated, "ratio", self.direction,
                             self.min_effect, self.margin)
        return self

    @property
    def threshold(self) -> float:
        """Boundary of the claimed region on the HR scale: 1 / the time ratio's boundary, i.e.
        1/(1-m) (less) or 1/(1+m) (greater); 1/(1+margin), 1/(1-margin) under a margin."""
        return 1.0 / effect_threshold("ratio", self.direction, float(self.min_effect or 0.0),
                                      self.margin)


# ---------------------------------------------------------------- scalar_compare


@CRITERIA.register("grokverify.stats.scalar:run_scalar_compare")
class ScalarCompareParams(_TwoArms):
    """Claim: a statistic (mean | median | iqm) of a per-seed scalar is lower (``less``) or
    higher (``greater``) in treated than in baseline, by at least ``min_effect``.

    ``effect: ratio`` compares ``stat(treated) / stat(baseline)`` with ``1 -/+ min_effect``
    (default min_effect 0.2, i.e. 20%); ``effect: difference`` compares
    ``stat(treated) - stat(baseline)`` with ``-/+ min_effect`` in the metric's units (no default:
    it must be stated). The boundary belongs to the claimed region. ``censored`` (time
    metrics): ``as_budget`` (default) enters censored values at the budget under the
    lower-bound rule; ``refuse`` gives INCONCLUSIVE when any value is censored; ``restricted``
    compares the restricted times min(T, τ) (τ: the smallest censoring step), exact for every
    seed. For a value metric (signed) a ratio is judged only when every value is > 0 (else
    INCONCLUSIVE: use ``effect: difference``). ``margin`` (non-inferiority; min_effect then
    defaults to 0): treated is worse than baseline by at most the margin, the claimed region
    ``ratio <= 1 + margin`` / ``>= 1 - margin`` (``difference <= +margin`` / ``>= -margin``).

    ``paired`` (default): the effect is the statistic of the per-seed differences
    ``treated_i - baseline_i`` (difference) or ``exp`` of the statistic of the per-seed log
    ratios (ratio), seeds both arms have; ``false``: the statistic of each arm. CI: a bootstrap
    of ``n_boot`` resamples seeded by ``bootstrap_seed`` (how, per statistic: docs/verdicts.md,
    ``scalar_compare``).
    """

    name: Literal["scalar_compare"]
    baseline: str
    treated: str
    statistic: Statistic = "median"
    effect: Effect = "ratio"
    direction: Literal["less", "greater"]
    min_effect: Float | None = Field(None, ge=0)
    margin: Margin = 0.0
    ci_level: CILevel = 0.95
    n_boot: NBoot = 2000
    bootstrap_seed: RngSeed = 0
    censored: CensoredPolicy = "as_budget"
    paired: Paired = True

    def min_seeds(self) -> int:
        """Two medians resampled arm by arm hold their level from MIN_MEDIAN_SEEDS an arm."""
        return MIN_MEDIAN_SEEDS if self.statistic == "median" and not self.paired else 0

    @model_validator(mode="after")
    def _check(self) -> ScalarCompareParams:
        self.min_effect = resolve_min_effect(
            self.min_effect, self.margin,
            DEFAULT_MIN_EFFECT if self.effect == "ratio" else None,
            "effect 'difference' needs min_effect in the metric's units (or a non-inferiority "
            "margin)")
        check_two_arm_effect(self.baseline, self.treated, self.effect, self.direction,
                             self.min_effect, self.margin)
        return self

    @property
    def threshold(self) -> float:
        return effect_threshold(self.effect, self.direction, float(self.min_effect or 0.0),
                                self.margin)


# ---------------------------------------------------------------- equivalence


@CRITERIA.register("grokverify.stats.equivalence:run_equivalence")
class EquivalenceParams(CriterionSpec):
    """Claim: two arms (or one arm and a reference value) do not differ beyond ``margin``.

    Give either ``baseline`` + ``treated`` (two-arm form) or ``arm`` (+ ``reference``, default 0;
    one-arm form). ``margin_kind: absolute`` (metric units) or ``relative`` (a fraction < 1, on
    the ratio scale ``[1 - margin, 1 / (1 - margin)]``, values must be > 0). CI at ``1 - 2
    alpha``. ``usevar``: Welch (``unequal``, default) or pooled variance, two-arm form only.
    ``censored`` (time metrics): ``refuse`` (default; censored values make "equal" unjudgeable),
    ``as_budget`` under the lower-bound rule (the mean is never determined with censoring, so
    SUPPORTED is then always withheld), or ``restricted``: the arms' restricted times min(T, τ)
    (τ: the smallest censoring step), exact for every seed. ``paired`` (two-arm form,
    default): TOST on the per-seed differences (logs for a relative margin) of the seeds both
    arms have (one-sample t); ``false``: the two-sample TOST. With ``restricted`` and seeds at
    τ the one-sample form's CI is a bootstrap-t (``n_boot`` resamples from ``bootstrap_seed``).
    """

    name: Literal["equivalence"]
    baseline: str | None = None
    treated: str | None = None
    arm: str | None = None
    reference: Float | None = None
    margin: Float = Field(gt=0)
    margin_kind: Literal["absolute", "relative"] = "absolute"
    usevar: Literal["unequal", "pooled"] = "unequal"
    alpha: Float = Field(0.05, gt=0, lt=0.5)
    censored: CensoredPolicy = "refuse"
    paired: Paired = True
    n_boot: NBoot = 2000
    bootstrap_seed: RngSeed = 0

    @model_validator(mode="after")
    def _one_form(self) -> EquivalenceParams:
        two = self.baseline is not None or self.treated is not None
        if two and self.arm is not None:
            raise ValueError("give either baseline + treated (two arms) or arm (+ reference), "
                             "not both")
        if two:
            if self.baseline is None or self.treated is None:
                raise ValueError("the two-arm form needs both baseline and treated")
            if self.baseline == self.treated:
                raise ValueError("baseline and treated must be different arms")
            if self.reference is not None:
                raise ValueError("reference applies to the one-arm form (arm:) only")
        elif self.arm is None:
            raise ValueError("give baseline + treated (two arms) or arm (+ reference)")
        elif self.reference is None:
            self.reference = 0.0
        if self.margin_kind == "relative":
            if self.margin >= 1:
                raise ValueError("a relative margin must be < 1 (ratio in [1-m, 1/(1-m)])")
            if self.arm is not None and not (self.reference or 0) > 0:
                raise ValueError("a relative margin needs reference > 0")
        return self

    def arms(self) -> list[str]:
        """[baseline, treated] (two-arm form) or [arm] (one-arm form)."""
        return [self.arm] if self.arm is not None else [str(self.baseline), str(self.treated)]

    @property
    def ci_level(self) -> float:
        return 1.0 - 2.0 * self.alpha

    @property
    def region(self) -> tuple[float, float]:
        m = self.margin
        centre = 0.0 if self.arm is None else float(self.reference or 0.0)
        if self.margin_kind == "absolute":
            return centre - m, centre + m
        scale = 1.0 if self.arm is None else centre
        return scale * (1 - m), scale / (1 - m)


# ---------------------------------------------------------------- proportion


@CRITERIA.register("grokverify.stats.proportion:run_proportion")
class ProportionParams(_OneArm):
    """Claim: the share of ``arm``'s seeds with ``outcome`` is >= (``greater``) or <= (``less``)
    ``threshold``. ``cut`` is required for (and only for) ``value_below`` / ``value_above``;
    ``method``: ``beta`` (Clopper-Pearson, default: it never under-covers) or ``wilson``
    (Wilson score, shorter, but its coverage dips below nominal for some n and shares). The
    boundary belongs to the claimed region; ``greater`` with threshold 1 or ``less`` with 0
    could never be supported by a CI and are rejected. ``observed`` needs a time metric."""

    name: Literal["proportion"]
    kinds_note: ClassVar[str] = "value metrics with outcome value_below or value_above only"
    arm: str
    outcome: Literal["observed", "value_below", "value_above"] = "observed"
    cut: Float | None = None
    method: Literal["wilson", "beta"] = "beta"
    direction: Literal["greater", "less"]
    threshold: Float = Field(ge=0, le=1)
    ci_level: CILevel = 0.95

    @model_validator(mode="after")
    def _check(self) -> ProportionParams:
        if (self.outcome == "observed") != (self.cut is None):
            raise ValueError("cut is required for value_below/value_above and only for them")
        if (self.direction, self.threshold) in (("greater", 1.0), ("less", 0.0)):
            edge = "at or above 1" if self.threshold else "at or below 0"
            raise ValueError(f"a CI can never lie wholly {edge}: choose a threshold strictly "
                             "inside (0, 1)")
        return self

    def kinds(self) -> tuple[Kind, ...]:
        """``observed`` counts events (time metrics); a cut applies to a value of either kind."""
        return TIME_ONLY if self.outcome == "observed" else ANY_KIND


# ---------------------------------------------------------------- correlation


@CRITERIA.register("grokverify.stats.correlation:run_correlation")
class CorrelationParams(_OneArm):
    """Claim: in ``arm``, metric ``y`` rises (``positive``: r >= min_effect) or falls
    (``negative``: r <= -min_effect) with metric ``x`` across seeds. ``min_effect`` is the
    smallest |r| the claim commits to (required; 0 = any correlation of that sign). The boundary
    belongs to the claimed region. ``x``/``y`` are per-seed metrics: a name for a metric without
    parameters (``val_threshold_step``), else a metric mapping
    (``{name: curve_mean, curve: val_loss, start: 0, end: 1000}``); `metrics_needed` tells the
    pipeline which to compute."""

    name: Literal["correlation"]
    arm: str
    x: AnyMetric
    y: AnyMetric
    method: Literal["spearman", "pearson"] = "spearman"
    direction: Literal["positive", "negative"]
    min_effect: Float = Field(ge=0, lt=1)
    ci_level: CILevel = 0.95
    censored: CensoredPolicy = "as_budget"

    @field_validator("x", "y", mode="before")
    @classmethod
    def _name_alone(cls, v: Any) -> Any:
        """A bare name stands for the metric with its defaults (one without parameters)."""
        if not isinstance(v, str):
            return v
        spec = METRICS.specs.get(v)
        required = [k for k, f in spec.model_fields.items()
                    if f.is_required() and k != "name"] if spec else []
        if required:
            raise ValueError(f"metric {v!r} has parameters ({', '.join(required)}): give it as "
                             f"a mapping {{name: {v}, {', '.join(f'{k}: ...' for k in required)}}}")
        return {"name": v}

    @model_validator(mode="after")
    def _distinct(self) -> CorrelationParams:
        if self.x == self.y:
            raise ValueError("x and y must be different metrics")
        return self

    def metrics_needed(self) -> list[MetricSpec]:
        """The per-seed metrics the pipeline must compute for this claim: [x, y]."""
        return [self.x, self.y]

    def information(self, n: int) -> float:
        """A Fisher-z statistic's information from n pairs, 1 / se² = n - 3; looks with fewer
        than MIN_PAIRS pairs cannot decide and get a small share that still increases."""
        return float(n - 3) if n >= MIN_PAIRS else n / (2.0 * MIN_PAIRS)

    @property
    def threshold(self) -> float:
        return self.min_effect if self.direction == "positive" else -self.min_effect


# ---------------------------------------------------------------- value


@CRITERIA.register("grokverify.stats.scalar:run_value")
class ValueParams(_OneArm):
    """Claim: an arm's per-seed quantity lies within ``tol`` of a paper's number ``target``.

    Estimate: the mean (CI: bootstrap-t) or the median (CI: exact distribution-free
    order-statistic interval) over seeds. Claimed region ``[target - tol, target + tol]``, both
    ends included: SUPPORTED when the CI lies within it, REFUTED when wholly outside, else
    INCONCLUSIVE. ``censored`` (time metrics): ``refuse`` (default: a lower bound cannot place a
    value in an interval), ``as_budget`` under the lower-bound rule, or ``restricted`` (the
    restricted time min(T, τ), τ the smallest censoring step).
    """

    name: Literal["value"]
    arm: str
    target: Float
    tol: Float = Field(ge=0)
    statistic: Literal["mean", "median"] = "mean"
    ci_level: CILevel = 0.95
    n_boot: NBoot = 2000
    bootstrap_seed: RngSeed = 0
    censored: CensoredPolicy = "refuse"


# ---------------------------------------------------------------- crossing


class _PercentileBootstrap(CriterionSpec):
    """A bootstrap CI's settings (CI level, resamples, generator seed)."""

    ci_level: CILevel = 0.95
    n_boot: NBoot = 2000
    bootstrap_seed: RngSeed = 0


@CRITERIA.register("grokverify.stats.crossing:run_crossing")
class CrossingParams(_PercentileBootstrap):
    """Claim: the x at which the arms' mean per-seed value crosses ``level`` lies in
    ``region`` [low, high] (paper 2: P(n0 = 2) against the training fraction crosses 1/2 near
    0.4). ``points`` maps each arm to its x, written in increasing x (the arms of a grid, e.g.
    ``{f0.3: 0.3, f0.35: 0.35}``); the metric is a value in [0, 1] per seed (a share's
    indicator or a probability).

    Monotonicity is assumed: the arm means rise with x (``direction: rising``, default) or fall
    (``falling``), so the crossing is located by linear interpolation between the first
    adjacent pair of points whose means bracket the level (rising: m_i < level <= m_(i+1)).
    No bracket (the first mean already at or past the level, or the last short of it) leaves
    the crossing outside the points: censored, INCONCLUSIVE. CI: percentile bootstrap over
    seeds within each arm (``n_boot`` resamples from ``bootstrap_seed``; docs/verdicts.md,
    ``crossing``). SUPPORTED when the CI lies within the region, REFUTED when it lies wholly
    outside it.

    ``x`` (optional): a per-seed metric whose mean over each arm's seeds is that arm's x in
    place of the declared one (paper 2's realised training fraction k/N, which differs from a
    nominal train_frac by up to 1/(2N) and depends on p); the declared x then only orders the
    arms, and the realised means must increase in that order. ``region`` may be left out only
    by an open question (role ``open_question``): the crossing and its CI are then a FINDING,
    nothing is judged."""

    name: Literal["crossing"]
    accepts: ClassVar[tuple[Kind, ...]] = VALUE_ONLY
    points: dict[str, Float] = Field(min_length=2, description=(
        "arm -> its x (e.g. the arm's train_frac), in strictly increasing x"))
    x: AnyMetric | None = Field(None, description=(
        "per-seed metric whose arm mean is the arm's x instead of the declared one (e.g. "
        "{name: curve_at, curve: sample_fraction, step: 0})"))
    level: Float = Field(0.5, gt=0, lt=1, description="the mean value whose crossing is sought")
    direction: Literal["rising", "falling"] = "rising"
    region: list[Float] | None = Field(None, min_length=2, max_length=2, description=(
        "[low, high]: the claimed x of the crossing, both ends included (left out: an open "
        "question's finding, not judged)"))

    @field_validator("points")
    @classmethod
    def _increasing(cls, v: dict[str, float]) -> dict[str, float]:
        pairs = list(v.items())
        for (a, x0), (b, x1) in zip(pairs, pairs[1:], strict=False):
            if not x1 > x0:
                raise ValueError(f"x must increase strictly in the order written: {b!r} has "
                                 f"x = {x1:g} after {a!r} with x = {x0:g}")
        return v

    @field_validator("region")
    @classmethod
    def _interval(cls, v: list[float] | None) -> list[float] | None:
        if v is not None and not v[0] < v[1]:
            raise ValueError(f"region [low, high] needs low < high, got [{v[0]:g}, {v[1]:g}]")
        return v

    def arms(self) -> list[str]:
        """The arms of ``points``, in increasing x."""
        return list(self.points)

    def metrics_needed(self) -> list[MetricSpec]:
        """[x] when the arms' x is read from a metric."""
        return [] if self.x is None else [self.x]

    def judged(self) -> bool:
        """A crossing without a region is an open question's estimate."""
        return self.region is not None

    @property
    def xs(self) -> list[float]:
        return [float(x) for x in self.points.values()]


@CRITERIA.register("grokverify.stats.phase_order:run_phase_order")
class PhaseOrderParams(_PercentileBootstrap):
    """Claim: over a phase diagram (paper 2's Fig. 6: decoder lr × decoder weight decay), the
    phases are ordered comprehension < grokking < memorization along ``x`` within each value of
    ``y`` ("grokking lies between comprehension and memorization"; ``direction: falling``: the
    order runs the other way as x rises), and each phase in ``shown`` is the most common phase
    of at least ``min_cells`` cells. ``cells`` maps each arm (a cell, usually generated by a
    grid) to its [x, y] (one y for a one-setting sweep); the metric is ``phase`` (Table 1's
    phase per seed).

    Effect: Goodman & Kruskal's γ between x and the phase's rank (0 comprehension, 1 grokking,
    2 memorization; confusion left out) over pairs of seeds in cells of the same y, pooled over
    the y's: (concordant − discordant) / (concordant + discordant), ties in x or phase left
    out, its sign turned for ``falling``. γ = 1: every such pair is ordered as claimed. CI:
    BCa bootstrap over seed ids (docs/verdicts.md, ``phase_order``).
    SUPPORTED when every phase in ``shown`` leads enough cells and the CI lies within
    [min_gamma, 1]; REFUTED when a phase in ``shown`` leads fewer cells (the diagram does not
    show it), or the CI lies below ``min_gamma``; otherwise INCONCLUSIVE. The map itself (each
    cell's phase counts) is kept in the result."""

    name: Literal["phase_order"]
    accepts: ClassVar[tuple[Kind, ...]] = VALUE_ONLY
    family_ok: ClassVar[bool] = False
    reads_codes: ClassVar[bool] = True
    cells: dict[str, tuple[Float, Float]] = Field(min_length=2, description=(
        "arm -> [x, y]: its setting along the ordering axis and the other axis (or grid_axes)"))
    grid_axes: dict[Literal["x", "y"], str] | None = Field(None, description=(
        "instead of cells: the claim's grid axes that are x and y ({x: lr, y: wd}; y left out: "
        "one row), and every arm the grid generates is a cell at its settings"))
    x_label: str = Field("x", min_length=1, max_length=60,
                         description="what x is, for reports (e.g. decoder lr)")
    y_label: str = Field("y", min_length=1, max_length=60,
                         description="what y is, for reports (e.g. decoder weight decay)")
    min_gamma: Float = Field(0.5, gt=-1, lt=1, description=(
        "γ the claim needs at least (0.5: three in four ordered pairs run the claimed way)"))
    direction: Literal["rising", "falling"] = Field(
        "rising", description="rising: comprehension at small x, memorization at large x")
    shown: list[Literal["comprehension", "grokking", "memorization", "confusion"]] = Field(
        default_factory=lambda: ["comprehension", "grokking", "memorization"], description=(
            "the phases the claim says the diagram shows"))
    min_cells: Int = Field(1, ge=1, le=64 * 64, description=(
        "cells in which each phase of `shown` must be the most common phase"))

    @field_validator("cells")
    @classmethod
    def _distinct(cls, v: dict[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
        seen: dict[tuple[float, float], str] = {}
        for arm, xy in v.items():
            if xy in seen:
                raise ValueError(f"arms {seen[xy]!r} and {arm!r} are both at [{xy[0]:g}, "
                                 f"{xy[1]:g}]: each cell once")
            seen[xy] = arm
        return v

    def arms(self) -> list[str]:
        """The cells' arms, in the order written."""
        return list(self.cells)
