"""Whether a two-arm time claim can be decided at its budget: with the baseline's median beyond
the budget, a ratio of medians is only bounded above by (treated median / budget), so a claim
whose bound misses its region stays INCONCLUSIVE whatever the seeds (docs/verdicts.md,
"Bounded by the budget")."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from grokverify.numbers import format_number
from grokverify.stats.base import ArmSample
from grokverify.stats.survival import estimate_bound
from grokverify.stats.verdict import Verdict


def budget_bound(params: Any, arms: dict[str, ArmSample]) -> str | None:
    """Why the claim cannot be SUPPORTED at the arms' budget, with the budget that could
    decide it; None when it can be (or the criterion is not a ratio of time medians: a mean
    or an RMST is not bounded that way)."""
    if (getattr(params, "effect", None) != "ratio" or getattr(params, "direction", None) != "less"
            or getattr(params, "summary", "median") != "median"
            or getattr(params, "statistic", "median") != "median"
            or not {getattr(params, "baseline", None), getattr(params, "treated", None)}
            <= arms.keys()):
        return None
    base, treat = arms[params.baseline], arms[params.treated]
    if base.kind != "time" or treat.kind != "time":
        return None
    found = estimate_bound(base, treat, "ratio")  # the bound the criterion's estimate reports
    if found is None or found[1] != "upper":
        return None
    bound, budget = found[0], float(base.values.max())
    treat_median = bound * budget
    theta = float(params.threshold)
    if bound <= theta:
        return None
    need = treat_median / theta
    return (f"Bounded by the budget: {params.baseline}'s median lies beyond the budget "
            f"({format_number(budget)} steps; {base.events} of {base.n} seeds reach the event), "
            f"so the ratio is only known to be at most {params.treated}'s median / budget = "
            f"{format_number(treat_median)} / {format_number(budget)} = {format_number(bound)}, "
            f"above θ = {format_number(theta)}: no number of seeds can support the claim at this "
            f"budget. A budget above {format_number(need)} steps (the treated median / θ, more "
            f"for its CI) could, if {params.baseline} does not reach the event by then.")


def say_bound(result: Any, params: Any, arms: dict[str, ArmSample]) -> Any:
    """An INCONCLUSIVE result bounded only by the budget says so first (and in its details)."""
    if result.verdict != Verdict.INCONCLUSIVE or not (why := budget_bound(params, arms)):
        return result
    return replace(result, reason=f"{why} {result.reason}",
                   details={**result.details, "budget_bound": why})


MORE_SEEDS_SIMS = 40
MORE_SEEDS_FACTORS = (2, 4, 8)


def more_seeds(params: Any, arms: dict[str, ArmSample]) -> dict[str, Any] | None:
    """For an undecided result: P(SUPPORTED) and P(REFUTED) at 2, 4 and 8 times its seeds per
    arm, by resampling its own seeds (`plan_seeds`); None where it cannot be estimated."""
    from grokverify.claim.limits import MAX_SEEDS
    from grokverify.stats.power import plan_seeds

    n = min(a.n for a in arms.values())
    sizes = sorted({min(f * n, MAX_SEEDS) for f in MORE_SEEDS_FACTORS if n})
    if not sizes or any(a not in arms for a in params.arms()):
        return None
    try:
        plan = plan_seeds(params, arms, candidates=sizes, n_sim=MORE_SEEDS_SIMS)
    except ValueError:
        return None
    except Exception as exc:  # an optional estimate: say it failed, never stop the run
        return {"seeds": sizes, "p_supported": None, "p_refuted": None, "n_sim": MORE_SEEDS_SIMS,
                "words": f"More seeds: not estimated ({type(exc).__name__}: {exc})."}
    decided = [s + r for s, r in zip(plan.power, plan.refuted, strict=True)]
    shown = "; ".join(f"{k} seeds per arm: P(SUPPORTED) {s:.2f}, P(REFUTED) {r:.2f}"
                      for k, s, r in zip(sizes, plan.power, plan.refuted, strict=True))
    if max(decided) == 0:
        words = (f"More seeds: in {MORE_SEEDS_SIMS} resamplings of these seeds at each of "
                 f"{', '.join(map(str, sizes))} seeds per arm, none decided the claim: more seeds "
                 "of this setting are unlikely to decide it (a longer budget or another setting "
                 "may).")
    else:
        words = (f"More seeds, by resampling these {n} seeds per arm ({MORE_SEEDS_SIMS} "
                 f"simulations a size): {shown}.")
    return {"seeds": sizes, "p_supported": plan.power, "p_refuted": plan.refuted,
            "n_sim": MORE_SEEDS_SIMS, "words": words}
