"""Whether a claim's region can be reached at a scale's budget whatever the seeds: a ratio of
two accuracy-event times can show nothing below (treated's first evaluation / baseline's
budget) or above (treated's budget / baseline's first evaluation); docs/verdicts.md, "Bounded
by the budget"."""

from __future__ import annotations

from typing import Any

from grokverify.numbers import format_number

EVENT_TIMES = ("val_threshold_step", "train_threshold_step")


def unreachable(loaded: Any) -> list[str]:
    """One sentence per scale and member whose claimed ratio no data at its budget can show,
    naming the budget that could; none where the claim is not a ratio of event times."""
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
