"""Group-sequential seeding (``seeds: {min, max, step}``): judge the arms at n = min, min +
step, ..., max seeds; the first SUPPORTED or REFUTED verdict is final, else the last look's
stands. Look k judges at CI level 1 - alpha_k, from a Lan-DeMets alpha-spending function of the
information fraction t_k = I(n_k) / I(n_max) (`CriterionSpec.information`: n, or n - 3 for a
Fisher-z correlation); `nominal_levels` solves for alpha_k by recursive numerical integration
for a statistic with Brownian-motion correlation between looks: exact for means, approximate for
bootstrap and exact-binomial CIs, whose error rates benchmarks/calibration.py measures. One
boundary pair serves both verdicts, each side's error at most alpha / 2. The formulas, the level
of each look and the caveats: docs/verdicts.md, "Sequential seeding".
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pydantic
from scipy import optimize, special
from scipy import stats as sps

from grokverify.claim.criteria import CriterionSpec
from grokverify.stats.base import ArmSample, CriterionResult, Verdict, judge

SpendingKind = Literal["obrien_fleming", "pocock"]
SPENDING_KINDS: tuple[str, ...] = ("obrien_fleming", "pocock")
DECIDED = (Verdict.SUPPORTED, Verdict.REFUTED)


# ---------------------------------------------------------------- looks and spending


def looks(min: int, max: int, step: int) -> list[int]:  # the names of `seeds:`
    """Seed counts at each look: min, min + step, ... below max, then max (always last)."""
    lo, hi, st = int(min), int(max), int(step)
    if lo < 1 or st < 1 or hi < lo:
        raise ValueError(f"seeds needs 1 <= min <= max and step >= 1, got min={min}, "
                         f"max={max}, step={step}")
    out = list(range(lo, hi, st))
    return [*out, hi]


def information_fractions(look_sizes: Sequence[int],
                          information: Callable[[int], float] = float) -> list[float]:
    """t_k = I(n_k) / I(n_max) for strictly increasing positive seed counts, I the criterion's
    information in n seeds (`Criterion.information`; n by default, so t_k = n_k / n_max)."""
    sizes = [int(n) for n in look_sizes]
    if not sizes or sizes[0] < 1 or any(b <= a for a, b in zip(sizes, sizes[1:], strict=False)):
        raise ValueError(f"looks must be strictly increasing positive seed counts, got {sizes}")
    info = [float(information(n)) for n in sizes]
    if info[0] <= 0 or any(b <= a for a, b in zip(info, info[1:], strict=False)):
        raise ValueError(f"the information at looks {sizes} must be positive and increasing, "
                         f"got {info}")
    return [i / info[-1] for i in info]


def spending(t: float | np.ndarray, alpha: float, kind: SpendingKind) -> Any:
    """Two-sided alpha spent by information fraction t in [0, 1] (Lan-DeMets): O'Brien-Fleming
    type (strict early looks) or Pocock type (nearly equal levels); 0 at t = 0, alpha at 1."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    tt = np.clip(np.asarray(t, dtype=float), 0.0, 1.0)
    if kind == "obrien_fleming":
        z = sps.norm.isf(alpha / 2)
        with np.errstate(divide="ignore"):
            out = 2.0 * sps.norm.sf(z / np.sqrt(tt))
    elif kind == "pocock":
        out = alpha * np.log1p((math.e - 1.0) * tt)
    else:
        raise ValueError(f"unknown spending kind {kind!r}; known: {', '.join(SPENDING_KINDS)}")
    out = np.where(tt >= 1.0, alpha, out)
    return float(out) if out.ndim == 0 else out


# ---------------------------------------------------------------- recursive integration


_GL_X, _GL_W = np.polynomial.legendre.leggauss(8)


def _nodes(half_width: float, step_sd: float) -> tuple[np.ndarray, np.ndarray]:
    """Composite 8-point Gauss-Legendre nodes/weights on (-h, h), with panels no wider than
    half the sd of the Gaussian kernel they integrate against (smooth on each panel)."""
    panels = int(min(1000, max(4, math.ceil(4.0 * half_width / step_sd))))
    edges = np.linspace(-half_width, half_width, panels + 1)
    mid = (edges[1:] + edges[:-1]) / 2.0
    half = (edges[1] - edges[0]) / 2.0
    x = (mid[:, None] + half * _GL_X[None, :]).ravel()
    w = np.tile(half * _GL_W, panels)
    return x, w


class _Continuation:
    """Sub-density of B(t_k) on the continuation region (-b_k, b_k), B a standard Brownian
    motion, on quadrature nodes: integrating it gives P(no crossing at looks 1..k)."""

    def __init__(self) -> None:
        self.t = 0.0
        self.x: np.ndarray | None = None  # None: B(0) = 0, a point mass
        self.w = np.ones(1)
        self.f = np.ones(1)

    def cross(self, t: float, b: float) -> float:
        """P(continue through the previous looks and |B(t)| >= b)."""
        s = math.sqrt(t - self.t)
        x = np.zeros(1) if self.x is None else self.x
        tails = special.ndtr((-b - x) / s) + special.ndtr((x - b) / s)
        return float(np.sum(self.w * self.f * tails))

    def advance(self, t: float, b: float) -> None:
        """Move to look t with continuation region (-b, b)."""
        s = math.sqrt(t - self.t)
        x = np.zeros(1) if self.x is None else self.x
        y, wy = _nodes(b, s)
        z = (y[:, None] - x[None, :]) / s
        kernel = np.exp(-0.5 * z * z) / (s * math.sqrt(2.0 * math.pi))
        self.f = kernel @ (self.w * self.f)
        self.x, self.w, self.t = y, wy, t


def _check_fractions(fractions: Sequence[float]) -> tuple[float, ...]:
    t = tuple(float(x) for x in fractions)
    increasing = all(b > a for a, b in zip(t, t[1:], strict=False))
    if not t or t[0] <= 0 or t[-1] > 1 + 1e-12 or not increasing:
        raise ValueError(f"information fractions must increase within (0, 1], got {list(t)}")
    return t


def _excess(b: float, state: _Continuation, t: float, target: float) -> float:
    return state.cross(t, b) - target


@functools.lru_cache(maxsize=256)
def _nominal_levels_cached(fractions: tuple[float, ...], alpha: float,
                           kind: str) -> tuple[float, ...]:
    spent = [float(spending(t, alpha, kind)) for t in fractions]  # type: ignore[arg-type]
    state = _Continuation()
    levels: list[float] = []
    previous = 0.0
    for t, cum in zip(fractions, spent, strict=True):
        increment = cum - previous
        previous = cum
        if increment <= 0:
            b = math.inf
        else:
            target = increment
            hi = 1.0
            while state.cross(t, hi) > target:
                hi *= 2.0
            if state.cross(t, 0.0) <= target:
                b = 0.0
            else:
                b = optimize.brentq(_excess, 0.0, hi, args=(state, t, target), xtol=1e-12,
                                    rtol=1e-12)
        levels.append(float(2.0 * sps.norm.sf(b / math.sqrt(t))))
        # beyond 10 sd of B(t) the continuation density is negligible
        state.advance(t, max(min(b, 10.0 * math.sqrt(t)), 1e-9))
    return tuple(levels)


def nominal_levels(information_fractions: Sequence[float], alpha: float = 0.05,
                   kind: SpendingKind = "obrien_fleming") -> list[float]:
    """Per-look nominal two-sided levels alpha_k (cached): under the null, with correlation
    ``sqrt(t_i / t_j)`` between looks, P(``|Z_j| >= z_{alpha_j / 2}`` at some look j <= k) is
    ``spending(t_k, alpha, kind)`` for every k."""
    t = _check_fractions(information_fractions)
    return list(_nominal_levels_cached(t, float(alpha), str(kind)))


# ---------------------------------------------------------------- the looks of a claim


@dataclass(frozen=True)
class Look:
    """One planned look: seeds per arm, and the CI level to judge at (None: the criterion's
    own, for a fixed number of seeds)."""

    n: int
    ci_level: float | None
    information_fraction: float = 1.0
    alpha_spent: float | None = None
    nominal_alpha: float | None = None


class Rounds:
    """The looks of a seeding design and how far a claim has got: judge at `next_look()`,
    `record()` the verdict, `done` at the first SUPPORTED or REFUTED or after the last look; one
    object for `grokverify run` and `run_sequential`, so the benchmark checks the users' rule."""

    def __init__(self, looks: Sequence[Look], kind: SpendingKind | None = None,
                 alpha: float | None = None):
        if not looks:
            raise ValueError("a seeding design needs at least one look")
        self.looks = list(looks)
        self.kind, self.alpha = kind, alpha
        self.verdicts: list[Verdict] = []

    @classmethod
    def fixed(cls, n: int) -> Rounds:
        """One look at `n` seeds per arm, at the criterion's own CI level."""
        return cls([Look(int(n), None)])

    @classmethod
    def with_spending(cls, sizes: Sequence[int], alpha: float,
                      kind: SpendingKind = "obrien_fleming",
                      information: Callable[[int], float] = float) -> Rounds:
        """Looks at `sizes` seeds per arm, each at the nominal level of the spending rule for an
        overall two-sided `alpha` (information fraction I(n_k) / I(n_max), see
        `information_fractions`)."""
        fractions = information_fractions(sizes, information)
        levels = nominal_levels(fractions, alpha, kind)
        looks = [Look(int(n), 1.0 - a, t, float(spending(t, alpha, kind)), a)
                 for n, t, a in zip(sizes, fractions, levels, strict=True)]
        return cls(looks, kind, float(alpha))

    @property
    def sequential(self) -> bool:
        return self.kind is not None

    @property
    def decided(self) -> bool:
        """Whether the last recorded verdict was SUPPORTED or REFUTED (final)."""
        return bool(self.verdicts) and self.verdicts[-1] in DECIDED

    @property
    def done(self) -> bool:
        return self.decided or len(self.verdicts) == len(self.looks)

    def next_look(self) -> Look | None:
        """The look to judge next, or None when the rounds are done."""
        return None if self.done else self.looks[len(self.verdicts)]

    def record(self, verdict: Verdict) -> None:
        """The verdict at the current look."""
        if self.done:
            raise RuntimeError("every look has been judged or a verdict is final already")
        self.verdicts.append(Verdict(verdict))

    @staticmethod
    def params_at(params: pydantic.BaseModel, look: Look) -> pydantic.BaseModel:
        """The criterion params to judge `look` with."""
        return params if look.ci_level is None else at_level(params, look.ci_level)

    def schedule(self) -> list[dict[str, Any]]:
        """Every planned look with its spending (for the result's details)."""
        return [{"n": k.n, "information_fraction": k.information_fraction,
                 "alpha_spent": k.alpha_spent, "nominal_alpha": k.nominal_alpha,
                 "ci_level": k.ci_level} for k in self.looks]


# ---------------------------------------------------------------- running a sequential claim


@dataclass(frozen=True)
class Round:
    """One look: seeds per arm so far, the CI level used, the estimate, CI and verdict."""

    n: int
    information_fraction: float
    ci_level: float
    estimate: float
    ci: tuple[float, float]
    verdict: Verdict


@dataclass
class SequentialOutcome:
    """The rounds run (up to the deciding look) and ``result``, the criterion's result at the
    last of them, whose ``details["sequential"]`` describes the design and the rounds."""

    criterion: str
    kind: str
    alpha: float
    looks: list[int]
    nominal_levels: list[float]
    rounds: list[Round]
    result: CriterionResult
    schedule: list[dict[str, Any]] = field(default_factory=list)

    @property
    def verdict(self) -> Verdict:
        return self.result.verdict

    @property
    def n_used(self) -> int:
        """Seeds per arm at the look where the verdict became final."""
        return self.rounds[-1].n

    @property
    def stopped_early(self) -> bool:
        return len(self.rounds) < len(self.looks)


def own_alpha(params: pydantic.BaseModel) -> float:
    """The criterion's own two-sided alpha: 1 - its CI level (equivalence: 2 alpha)."""
    level = getattr(params, "ci_level", None)
    if level is None:
        raise ValueError(f"{type(params).__name__} has no ci_level; pass alpha explicitly")
    return 1.0 - float(level)


def at_level(params: pydantic.BaseModel, ci_level: float) -> pydantic.BaseModel:
    """The params with their CI at `ci_level`: ``ci_level`` where it is a field, else (as in
    equivalence, CI level ``1 - 2 alpha``) ``alpha = (1 - ci_level) / 2``."""
    fields = type(params).model_fields
    if "ci_level" in fields:
        out = params.model_copy(update={"ci_level": float(ci_level)})
    elif "alpha" in fields:
        out = params.model_copy(update={"alpha": (1.0 - float(ci_level)) / 2.0})
    else:
        raise ValueError(f"{type(params).__name__} has neither ci_level nor alpha")
    got = float(getattr(out, "ci_level", math.nan))
    if not math.isclose(got, ci_level, rel_tol=0, abs_tol=1e-12):
        raise ValueError(f"could not set the CI level of {type(params).__name__} to {ci_level}")
    return out


def run_sequential(params: CriterionSpec,
                   draw_arms: Callable[[int], dict[str, ArmSample]],
                   looks: Sequence[int], alpha: float | None = None,
                   kind: SpendingKind = "obrien_fleming") -> SequentialOutcome:
    """Run a claim group-sequentially through `Rounds`, judging ``draw_arms(n_k)`` (the arms
    with their first n_k seeds) at each look's level; ``alpha``: the overall two-sided level
    (default the criterion's own, `own_alpha`)."""
    total = own_alpha(params) if alpha is None else float(alpha)
    design = Rounds.with_spending([int(n) for n in looks], total, kind, params.information)
    rounds: list[Round] = []
    result: CriterionResult | None = None
    while (look := design.next_look()) is not None:
        result = judge(design.params_at(params, look), draw_arms(look.n))
        design.record(result.verdict)
        rounds.append(Round(look.n, look.information_fraction, float(look.ci_level or 0.0),
                            float(result.estimate), (float(result.ci[0]), float(result.ci[1])),
                            result.verdict))
    assert result is not None
    sizes = [k.n for k in design.looks]
    schedule = design.schedule()
    final = rounds[-1]
    result.details["sequential"] = {
        "design": f"group-sequential, Lan-DeMets {kind.replace('_', '-')}-type alpha spending, "
                  f"two-sided alpha {total:g} (both verdict sides), information fractions "
                  f"{[round(k.information_fraction, 4) for k in design.looks]}",
        "looks": sizes,
        "schedule": schedule,
        "rounds": [{"n": r.n, "ci_level": r.ci_level, "estimate": r.estimate,
                    "ci": list(r.ci), "verdict": r.verdict.value} for r in rounds],
        "stopped_at": final.n,
        "stopped_early": len(rounds) < len(sizes),
    }
    return SequentialOutcome(params.name, kind, total, sizes,
                             [float(k.nominal_alpha or 0.0) for k in design.looks], rounds,
                             result, schedule)
