"""Simulators with known true parameters, for the calibration benchmark, the seed planner
(`grokverify.stats.power`) and the tests. Each takes a ``numpy.random.Generator`` and draws
whole batches (a leading ``size``), so a thousand simulated claims cost one call. Times are
rounded up to an evaluation grid (the harness sees a threshold only at evaluations, which makes
ties) and censored at a budget; the truth a criterion estimates is then that of the observed
distribution (`observed_median`, inf at or beyond the budget, where it is not identified):
docs/verdicts.md, "Simulated truths".
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats as sps

from grokverify.claim.metrics import Kind
from grokverify.stats.base import OBSERVED_SUFFIX, ArmSample
from grokverify.stats.common import take_seeds

Size = int | tuple[int, ...]


# ---------------------------------------------------------------- times to threshold


def budget_for_censoring(median: float, sigma: float, censored_fraction: float) -> float:
    """The budget at which a log-normal(median, sigma) arm has `censored_fraction` censored."""
    if not 0 <= censored_fraction < 1:
        raise ValueError("censored_fraction must be in [0, 1)")
    if censored_fraction == 0:
        return math.inf
    return float(median * math.exp(sigma * sps.norm.isf(censored_fraction)))


def censored_fraction(median: float, sigma: float, budget: float,
                      eval_interval: float | None = None) -> float:
    """True share of a log-normal(median, sigma) arm censored at `budget` (after rounding)."""
    if math.isinf(budget):
        return 0.0
    # a rounded time t' = h ceil(t / h) is observed when t' <= budget, i.e. t <= h floor(b / h)
    edge = budget if not eval_interval else eval_interval * math.floor(budget / eval_interval)
    if edge <= 0:
        return 1.0
    return float(sps.norm.sf(math.log(edge / median) / sigma))


def discretize(times: np.ndarray, eval_interval: float | None) -> np.ndarray:
    """Round times up to the next multiple of the evaluation interval (None: unchanged)."""
    t = np.asarray(times, dtype=float)
    if not eval_interval:
        return t
    return np.ceil(t / eval_interval) * eval_interval


def observed_median(median: float, eval_interval: float | None = None,
                    budget: float = math.inf) -> float:
    """Median of the observed (rounded-up) time distribution, inf when not below the budget:
    ``h ceil(m / h)`` for a continuous median m between grid points, and on a grid point (S = 0.5
    exactly) the midpoint of it and the next, as the KM convention of `stats.survival`."""
    m = float(median)
    if eval_interval:
        k = math.ceil(m / eval_interval)
        on_grid = math.isclose(k * eval_interval, m, rel_tol=1e-12, abs_tol=0.0)
        m = (k + 0.5 * on_grid) * eval_interval
    return m if m <= budget else math.inf


def _censor(times: np.ndarray, budget: float) -> tuple[np.ndarray, np.ndarray]:
    observed = times <= budget
    return np.where(observed, times, budget), observed


def censored_lognormal(rng: np.random.Generator, size: Size, median: float, sigma: float,
                       budget: float = math.inf, eval_interval: float | None = None,
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Log-normal steps (true median `median`, log-sd `sigma`), rounded up to the eval interval,
    right-censored at `budget`: (times, observed), each of shape `size`."""
    return lognormal_times(rng.standard_normal(size), median, sigma, budget, eval_interval)


def lognormal_times(z: np.ndarray, median: float, sigma: float, budget: float = math.inf,
                    eval_interval: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`censored_lognormal` from given standard normal draws `z` (log time = log median +
    sigma z), so that paired arms can take correlated draws (`correlated_pair`: a Gaussian
    copula on log times)."""
    raw = median * np.exp(sigma * np.asarray(z, dtype=float))
    return _censor(discretize(raw, eval_interval), budget)


def weibull_times(rng: np.random.Generator, size: Size, median: float, shape: float,
                  budget: float = math.inf, eval_interval: float | None = None,
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Weibull steps with true median `median` and shape k (hazard ~ t^(k-1)), rounded up and
    censored as `censored_lognormal`. Two arms with the same shape have proportional hazards:
    HR(treated / baseline) = (median_b / median_t)^k."""
    scale = median / math.log(2.0) ** (1.0 / shape)
    raw = scale * rng.weibull(shape, size)
    return _censor(discretize(raw, eval_interval), budget)


def weibull_median_ratio_for_hr(hazard_ratio: float, shape: float) -> float:
    """Time ratio (treated / baseline medians) of two Weibull arms with this hazard ratio."""
    return float(hazard_ratio ** (-1.0 / shape))


# ---------------------------------------------------------------- arms


def make_arm(name: str, values: np.ndarray | Sequence[float],
             observed: np.ndarray | Sequence[bool] | None = None,
             extra: dict[str, np.ndarray] | None = None, kind: Kind = "time",
             seeds: Sequence[int] | None = None,
             excluded: dict[str, int] | None = None) -> ArmSample:
    """An ArmSample (seeds 0..n-1 unless given; observed defaults to all True)."""
    v = np.asarray(values, dtype=float)
    obs = np.ones(v.shape, dtype=bool) if observed is None else np.asarray(observed, dtype=bool)
    return ArmSample(name, v, obs, tuple(range(v.size)) if seeds is None else tuple(seeds),
                     excluded=dict(excluded or {}), extra=dict(extra or {}), kind=kind)


def first_seeds(arms: dict[str, ArmSample], n: int) -> dict[str, ArmSample]:
    """The arms restricted to their first `n` seeds (extra metrics included), for sequential
    designs: ``draw_arms = functools.partial(first_seeds, all_arms)``."""
    return {k: take_seeds(a, np.arange(min(n, a.n))) for k, a in arms.items()}


def two_arm_times(rng: np.random.Generator, n: int | tuple[int, int], base_median: float,
                  ratio: float = 1.0, sigma: float = 0.5, budget: float = math.inf,
                  eval_interval: float | None = None, names: Sequence[str] = ("baseline",
                                                                              "treated"),
                  weibull_shape: float | None = None) -> dict[str, ArmSample]:
    """Two arms of times to threshold, treated's true median = ratio x baseline's (``n`` seeds
    per arm, or (n_baseline, n_treated)): log-normal with a common `sigma`, or Weibull with a
    common shape (proportional hazards) when `weibull_shape` is given."""
    nb, nt = (n, n) if isinstance(n, int) else n
    out = {}
    for name, size, med in ((names[0], nb, base_median), (names[1], nt, base_median * ratio)):
        if weibull_shape is None:
            t, o = censored_lognormal(rng, size, med, sigma, budget, eval_interval)
        else:
            t, o = weibull_times(rng, size, med, weibull_shape, budget, eval_interval)
        out[name] = make_arm(name, t, o)
    return out


def true_median_ratio(base_median: float, ratio: float, eval_interval: float | None = None,
                      budget: float = math.inf) -> float:
    """True ratio of the observed arms' medians (after rounding; NaN if a median is beyond the
    budget: then the ratio is not identified)."""
    b = observed_median(base_median, eval_interval, budget)
    t = observed_median(base_median * ratio, eval_interval, budget)
    return t / b if math.isfinite(b) and math.isfinite(t) else math.nan


# ---------------------------------------------------------------- per-seed scalars


def normal_values(rng: np.random.Generator, size: Size, mean: float, sd: float) -> np.ndarray:
    """Normal per-seed values (true mean = true median = `mean`)."""
    return mean + sd * rng.standard_normal(size)


def lognormal_values(rng: np.random.Generator, size: Size, median: float,
                     sigma: float) -> np.ndarray:
    """Log-normal per-seed values: true median = geometric mean = `median`, true mean =
    median * exp(sigma^2 / 2)."""
    return median * np.exp(sigma * rng.standard_normal(size))


def bernoulli_outcomes(rng: np.random.Generator, size: Size, share: float) -> np.ndarray:
    """Per-seed successes (True) with a known true share."""
    return rng.random(size) < share


def outcome_arm(name: str, success: np.ndarray, budget: float = 10_000.0,
                step: float = 1_000.0) -> ArmSample:
    """An arm for ``proportion`` (outcome ``observed``): a success reached the threshold at
    `step`; a failure is censored at `budget`."""
    s = np.asarray(success, dtype=bool)
    return make_arm(name, np.where(s, step, budget), s)


def spearman_of_pearson(rho: float) -> float:
    """Population Spearman correlation of a bivariate normal with Pearson correlation rho."""
    return float(6.0 / math.pi * math.asin(rho / 2.0))


def pearson_for_spearman(rho_s: float) -> float:
    """Inverse of `spearman_of_pearson`."""
    return float(2.0 * math.sin(math.pi * rho_s / 6.0))


def correlated_pair(rng: np.random.Generator, size: Size, rho: float,
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Standard bivariate normal (x, y) with Pearson correlation rho."""
    x = rng.standard_normal(size)
    e = rng.standard_normal(size)
    return x, rho * x + math.sqrt(1.0 - rho * rho) * e


def correlation_arm(name: str, x: np.ndarray, y: np.ndarray, x_name: str,
                    y_name: str) -> ArmSample:
    """One arm for ``correlation``: both metrics in ``extra`` (all observed), `x` also as the
    arm's own values (shifted to be >= 0, as a time metric's must be; correlations are
    shift-free)."""
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    ones = np.ones(xs.shape, dtype=bool)
    return make_arm(name, xs - min(float(xs.min()), 0.0), ones,
                    extra={x_name: xs, y_name: ys, x_name + OBSERVED_SUFFIX: ones,
                           y_name + OBSERVED_SUFFIX: ones})
