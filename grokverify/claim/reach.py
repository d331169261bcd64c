"""Whether a claim's region can be reached at a scale whatever the data: a ratio of two
accuracy-event times can show nothing below (treated's first evaluation / baseline's budget) or
above (treated's budget / baseline's first evaluation) (docs/verdicts.md, "Bounded by the
budget"), and a criterion whose interval holds only from some seeds an arm decides nothing with
fewer ("Intervals that do not hold")."""

from __future__ import annotations

from typing import Any

from grokverify.numbers import format_number

EVENT_TIMES = ("val_threshold_step", "train_threshold_step")


def undecidable_seeds(loaded: Any, scale: str, seeds: int | None = None) -> str:
    """The sentence saying that `seeds` an arm (default: the scale's most) are fewer than the
    criterion's interval needs to decide, naming the count that could; "" when they are not."""
    n, need = seeds or loaded.max_seeds(scale), loaded.claim.criterion.min_seeds()
    if n >= need:
        return ""
    name = loaded.claim.criterion.name
    return (f"scale {scale}: {n} seeds an arm, fewer than the {need} from which {name}'s "
            "interval of medians holds (docs/verdicts.md, \"Intervals that do not hold\"): "
            f"every run is INCONCLUSIVE; {need} seeds could decide")


def seed_warnings(claims: list[Any], scale: str, seeds: int | None = None) -> list[str]:
    """"<claim id>: <why>" for each claim a run at `scale` and `seeds` an arm cannot decide
    (`undecidable_seeds`): what `run` and its dry run print before anything trains."""
    return [f"{c.claim.id}: {why}" for c in claims if (why := undecidable_seeds(c, scale, seeds))]


def unreachable(loaded: Any) -> list[str]:
    """One sentence per scale and member whose claimed region no data at its budget and seeds
    can show, naming the budget or seed count that could."""
    few = [why for scale in loaded.by_scale if (why := undecidable_seeds(loaded, scale))]
    return few + _bounded(loaded)


def _bounded(loaded: Any) -> list[str]:
    """Scales and members whose claimed ratio of event times lies beyond what the budget can
    show; none where the claim is not a ratio of event times."""
    claim, crit = loaded.claim, loaded.claim.criterion
    if (getattr(claim.metric, "name", None) not in EVENT_TIMES
            or getattr(crit, "effect", None) != "ratio"
            or getattr(crit, "direction", None) not in ("less", "greater")):
        return []
    theta, out = float(crit.threshold), []
    for scale, members in loaded.by_scale.items():
        for member, arms in members.items():
            base, treat = arms.get(crit.baseline), arms.get(crit.treated)
            if base is None or treat is None or not base.training.steps:
                continue
            where = f"scale {scale}" + (f", member {member}" if member else "")
            b, t = base.training, treat.training
            if crit.direction == "less" and theta < (low := t.eval_interval / b.steps):
                out.append(
                    f"{where}: the ratio {crit.treated} / {crit.baseline} cannot show less than "
                    f"{t.eval_interval} / {b.steps} = {format_number(low)} ({crit.treated}'s "
                    f"first evaluation over {crit.baseline}'s budget), above θ = "
                    f"{format_number(theta)}: no seeds can support it; a {crit.baseline} budget "
                    f"above {format_number(t.eval_interval / theta)} steps could")
            if crit.direction == "greater" and theta > (high := t.steps / b.eval_interval):
                out.append(
                    f"{where}: the ratio {crit.treated} / {crit.baseline} cannot show more than "
                    f"{t.steps} / {b.eval_interval} = {format_number(high)} ({crit.treated}'s "
                    f"budget over {crit.baseline}'s first evaluation), below θ = "
                    f"{format_number(theta)}: no seeds can support it; a {crit.treated} budget "
                    f"above {format_number(theta * b.eval_interval)} steps could")
    return out
