"""``crossing``: where the arms' mean value crosses a level along a declared x (paper 2's
critical fraction: where P(n0 = 2) crosses ½ over the training fraction), with a percentile
bootstrap CI over seeds, against a claimed range of x or, without one, as an open question's
FINDING (docs/verdicts.md, "`crossing`")."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import BaseModel

from grokverify.claim.criteria import CrossingParams, expect_params
from grokverify.stats import verdict as verdict_rules
from grokverify.stats.base import P_TOL, ArmSample, CriterionResult
from grokverify.stats.common import Frame, arm_row, require_arms, too_few_seeds

NAME = "crossing"
CENSORING = ("a value metric is never censored (seeds without a value are left out and "
             "counted); a crossing outside the points is: no estimate (INCONCLUSIVE) when the "
             "arm means do not bracket the level, and -inf / +inf for a bootstrap resample "
             "that does not (crossed before the first x / not by the last)")


def crossings(xs: np.ndarray, means: np.ndarray, level: float, rising: bool) -> np.ndarray:
    """(B,) crossing x of each row of means (B, K) over increasing xs (K,), interpolated inside
    the first adjacent pair that brackets `level` (rising: m_i < level <= m_(i+1)); without one
    -inf where the first mean is already at or past the level, else +inf."""
    s = (means - level) if rising else (level - means)  # the crossing: s from < 0 to >= 0
    found, i = _first_bracket(s)
    rows = np.arange(len(s))
    s0, s1 = s[rows, i], s[rows, i + 1]
    with np.errstate(divide="ignore", invalid="ignore"):  # rows without a bracket: replaced
        x = xs[i] + (-s0 / (s1 - s0)) * (xs[i + 1] - xs[i])
    beyond = np.where(s[:, 0] >= 0, -math.inf, math.inf)
    return np.where(found, x, beyond)


def _first_bracket(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(found, i) per row of s (B, K), signed distances past the level: whether some pair
    has s_i < 0 <= s_(i+1), and the first such i (0 where none)."""
    bracket = (s[:, :-1] < 0) & (s[:, 1:] >= 0)
    return bracket.any(axis=1), np.argmax(bracket, axis=1)


def order_k(ci_level: float, n_boot: int) -> int:
    """Davison & Hinkley's order statistic k = floor(alpha/2 (B + 1)) of the percentile CI."""
    return int(math.floor((1.0 - ci_level) / 2.0 * (n_boot + 1) * (1 + P_TOL)))


def _columns(arm: ArmSample, x: float) -> dict[str, Any]:
    return {"x": x, "seeds": arm.n, "mean": float(arm.values.mean()) if arm.n else math.nan}


def _words(p: CrossingParams) -> tuple[str, str]:
    fmt = verdict_rules.format_number
    rises = "rises" if p.direction == "rising" else "falls"
    label = f"x at which the arm mean {rises} through {fmt(p.level)}"
    region = (f"crossing x within [{fmt(p.region[0])}, {fmt(p.region[1])}]" if p.region
              else "none: an open question's estimate")
    return label, region


def _arm_xs(p: CrossingParams, data: list[ArmSample]) -> tuple[np.ndarray, str]:
    """Each arm's x: declared, or (``x``) its seeds' mean of that metric; and why they cannot
    serve ("" when they can: finite and never decreasing in the declared order)."""
    if p.x is None:
        return np.asarray(p.xs, dtype=float), ""
    label = p.x.label()
    xs = np.array([a.extra[label].mean() if a.n else math.nan for a in data])
    if not np.isfinite(xs).all():
        bad = [a.name for a, x in zip(data, xs, strict=True) if not math.isfinite(x)]
        return xs, f"x ({label}) is undefined for arm(s) {', '.join(bad)}"
    if not (np.diff(xs) >= 0).all():
        i = int(np.argmax(np.diff(xs) < 0))
        fmt = verdict_rules.format_number
        return xs, (f"x ({label}) must increase in the order of points, but arm "
                    f"{data[i + 1].name!r} has x = {fmt(xs[i + 1])} after {data[i].name!r} "
                    f"with x = {fmt(xs[i])}")
    return xs, ""


def _pooled(data: list[ArmSample], xs: np.ndarray) -> tuple[list[ArmSample], np.ndarray]:
    """Arms of equal x merged into one (their seeds together, names joined by "+")."""
    out: list[ArmSample] = []
    distinct = np.unique(xs)
    for x in distinct:
        same = [a for a, ax in zip(data, xs, strict=True) if ax == x]
        out.append(same[0] if len(same) == 1 else ArmSample(
            "+".join(a.name for a in same), np.concatenate([a.values for a in same]),
            np.concatenate([a.observed for a in same]), sum((a.seeds for a in same), ()),
            kind="value"))
    return out, distinct


def run_crossing(params: BaseModel, arms: dict[str, ArmSample]) -> CriterionResult:
    """The interpolated crossing of the arm means, its percentile-bootstrap CI over seeds,
    and the verdict against the claimed region."""
    p = expect_params(params, CrossingParams)
    data = require_arms(NAME, p.arms(), arms, ("value",))
    xs, bad_x = _arm_xs(p, data)
    low, high = (float(p.region[0]), float(p.region[1])) if p.region else (math.nan, math.nan)
    rising = p.direction == "rising"
    label, region_words = _words(p)
    fmt = verdict_rules.format_number
    alpha = 1.0 - p.ci_level
    frame = Frame(NAME, label, "percentile bootstrap CI of the interpolated crossing, seeds "
                  "resampled within each arm (no test)", low, region_words, p.ci_level,
                  {"censoring": CENSORING, "level": p.level, "direction": p.direction,
                   "region": [low, high] if p.region else None,
                   "points": dict(zip(p.arms(), p.xs, strict=True)),
                   "x": "declared" if p.x is None else f"arm mean of {p.x.label()}",
                   "alpha": alpha, "alpha_one_sided": alpha / 2,
                   "monotonicity": f"assumed: the arm means {p.direction.replace('ing', 'e')} "
                                   "with x; the first bracketing pair decides"})
    rows = [arm_row(a, _columns(a, x)) for a, x in zip(data, xs, strict=True)]
    if why := too_few_seeds(data, 2) or bad_x:
        return frame.inconclusive(why, rows)
    out_of_range = {a.name: int(((a.values < 0) | (a.values > 1)).sum()) for a in data}
    outside = [f"arm {name!r} has {n} value(s) outside [0, 1]"
               for name, n in out_of_range.items() if n]
    if outside:
        return frame.inconclusive("; ".join(outside) + ", and the crossing criterion reads "
                                  "each arm's mean as a probability (values in [0, 1])", rows)
    data, xs = _pooled(data, xs)
    means = np.array([a.values.mean() for a in data])
    steps = np.diff(means) if rising else -np.diff(means)
    mean_details = {"means": means.tolist(), "monotone": bool((steps >= 0).all()),
                    "n_against_direction": int((steps < 0).sum())}
    estimate = float(crossings(xs, means[None], p.level, rising)[0])
    if math.isinf(estimate):
        side = (f"the first point's mean ({data[0].name}: {fmt(means[0])}) is already at or "
                f"past {fmt(p.level)}, so the crossing lies at or below x = {fmt(xs[0])}"
                if estimate < 0 else
                f"no adjacent pair of arm means brackets {fmt(p.level)} (means "
                f"{fmt(means.min())} to {fmt(means.max())}), so the crossing lies beyond "
                f"x = {fmt(xs[-1])}")
        return frame.inconclusive(f"{side}: censored, outside the points declared", rows,
                                  {**mean_details, "censored_estimate": "below the first x"
                                   if estimate < 0 else "beyond the last x"})
    rng = np.random.default_rng(p.bootstrap_seed)
    # arms resampled independently: a train_frac grid's arms share no randomness (arms that did
    # would need a joint resampling)
    boot_means = np.stack([a.values[rng.integers(0, a.n, size=(p.n_boot, a.n))].mean(axis=1)
                           for a in data], axis=1)  # (B, K), arms drawn in points order
    boot = np.sort(crossings(xs, boot_means, p.level, rising))
    k = order_k(p.ci_level, p.n_boot)
    ci = (boot[k - 1], boot[p.n_boot - k]) if k >= 1 else (-math.inf, math.inf)
    ci = (float(ci[0]), float(ci[1]))
    if p.region:
        verdict, reason = verdict_rules.decide_interval(ci, low, high, estimate, label,
                                                        p.ci_level)
    else:
        verdict = verdict_rules.Verdict.FINDING
        reason = (f"An open question, estimated and not judged: the {label} is "
                  f"{fmt(estimate)}, {p.ci_level:.0%} CI {verdict_rules.format_ci(ci)}.")
    lo_i = int(_first_bracket((means - p.level if rising else p.level - means)[None])[1][0])
    hi_i = lo_i + 1
    reason = (reason.rstrip(".") + f"; interpolated between {data[lo_i].name} (x = "
              f"{fmt(xs[lo_i])}, mean {fmt(means[lo_i])}) and {data[hi_i].name} (x = "
              f"{fmt(xs[hi_i])}, mean {fmt(means[hi_i])}).")
    below, above = int(np.isneginf(boot).sum()), int(np.isposinf(boot).sum())
    result = frame.result(estimate, ci, None, verdict, reason, rows, {
        **mean_details, "bracket": [data[lo_i].name, data[hi_i].name],
        "ci_method": "percentile bootstrap, order statistics [x*_(k), x*_(B+1-k)], "
                     "k = floor(alpha/2 (B + 1)) (Davison & Hinkley)",
        "bootstrap": "seeds resampled with replacement within each arm, arms independently "
                     "(np.random.default_rng(bootstrap_seed), arms drawn in points order)",
        "n_boot": p.n_boot, "bootstrap_seed": p.bootstrap_seed, "order_statistic_k": k,
        "resamples_crossing_below_first_x": below, "resamples_crossing_beyond_last_x": above,
        "p_method": "(c + 1) / (B + 1), c the resamples on the wrong side of a region end "
                    "(the order statistics the CI reads)"})
    if not p.region:
        return result
    n1 = p.n_boot + 1
    result.p_support = max(int((boot < low).sum()) + 1, int((boot > high).sum()) + 1) / n1
    result.p_refute = min(int((boot >= low).sum()) + 1, int((boot <= high).sum()) + 1) / n1
    return result


