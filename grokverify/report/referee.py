"""The referee's sections of a claim's report (Setup, Reasoning, Caveats, Reproduce), shared by
report.md and a suite's sections. They restate what result.json holds and recompute nothing, so
the words cannot disagree with the verdict they explain.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from grokverify.claim.load import arm_label
from grokverify.numbers import format_number
from grokverify.report.escape import code, text
from grokverify.report.suite import (
    member_results,
    plan_command,
    rebuild_command,
    reproduce_command,
)


def _count(values: list[Any]) -> str:
    """"300" for one value, "300–1000" for several."""
    shown = sorted({v for v in values if v is not None})
    if not shown:
        return "—"
    return format_number(shown[0]) if len(shown) == 1 else \
        f"{format_number(shown[0])}–{format_number(shown[-1])}"


def _seed_words(seeds: list[list[int]]) -> str:
    counts = sorted({len(s) for s in seeds})
    each = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    first = seeds[0] if seeds else []
    numbers = f" (seeds {first[0]}–{first[-1]})" if first and all(s == first for s in seeds) \
        and first == list(range(first[0], first[-1] + 1)) and len(first) > 1 else ""
    return f"{each} seed(s) per arm{numbers}"


def setup_lines(res: dict[str, Any]) -> list[str]:
    """Arms, scale, seeds and budget in four lines (each arm's full experiment is further on)."""
    arms = res["arms"]
    names = list(arms)
    shown = ", ".join(code(n) for n in names[:12]) + (f" and {len(names) - 12} more"
                                                      if len(names) > 12 else "")
    members = sorted({a["member"] for a in arms.values() if a.get("member")})
    training = [a["experiment"]["training"] for a in arms.values()]
    scale = res["scale"]
    where = "the paper's setting" if scale["paper_setting"] else \
        "**not the paper's setting** (see the note above)"
    seeds = [a["seeds"] for a in arms.values()]
    seq = res.get("sequential")
    looks = f"; sequential: looks at {', '.join(map(str, seq['looks']))} seeds per arm" \
        if seq else ""
    return [
        f"- Arms ({len(names)}" + (f", across {len(members)} family members" if members else "")
        + f"): {shown}",
        f"- Scale: {code(scale['name'])}, {where}",
        f"- Seeds: {_seed_words(seeds)}, {len(res['per_seed'])} seed runs in all{looks}",
        f"- Budget: {_count([t.get('steps') for t in training])} training steps per seed, "
        f"evaluated every {_count([t.get('eval_interval') for t in training])} steps; thresholds: "
        f"training accuracy {_count([t.get('train_threshold') for t in training])}, validation "
        f"accuracy {_count([t.get('val_threshold') for t in training])}",
    ]


def _level_words(result: dict[str, Any]) -> str:
    level = float(result["ci_level"])
    alpha = (1.0 - level) / 2.0
    return (f"tested at the {level * 100:.4g}% CI: each side of the claimed region's boundary "
            f"at one-sided α = {format_number(alpha)}, so SUPPORTED is called, nominally, at "
            f"most {format_number(alpha * 100)}% of the time when the true effect lies on the "
            "boundary or outside the region (and REFUTED likewise from the other side); a "
            "bootstrap interval holds this approximately (docs/verdicts.md gives each "
            "criterion's measured rate)")


def region_terms(result: dict[str, Any]) -> str | None:
    """A decided result's CI in the claimed region's terms, e.g. "the data exclude a speed-up
    smaller than 25%"; None when undecided or unbounded."""
    verdict, (low, high) = result.get("verdict"), result.get("ci") or (None, None)
    if verdict not in ("SUPPORTED", "REFUTED") or low is None or high is None:
        return None
    low, high = float(low), float(high)
    region = str(result.get("claimed_region", ""))
    speed = region.startswith("ratio ") and result.get("criterion") == "survival_compare"

    def pct(x: float) -> str:
        return f"{abs(x) * 100:.3g}%"
    if speed and "<=" in region:
        if verdict == "SUPPORTED":
            return f"the data exclude a speed-up smaller than {pct(1 - high)}" if high < 1 else \
                f"the data exclude a slow-down larger than {pct(high - 1)}"
        return (f"the data exclude a speed-up larger than {pct(1 - low)}" if low < 1 else
                f"the data exclude any speed-up (the ratio is at least {format_number(low)})")
    if speed and ">=" in region:
        if verdict == "SUPPORTED":
            return f"the data exclude a slow-down smaller than {pct(low - 1)}" if low > 1 else \
                f"the data exclude a speed-up larger than {pct(1 - low)}"
        return f"the data exclude a slow-down larger than {pct(high - 1)}" if high > 1 else \
            f"the data exclude any slow-down (the ratio is at most {format_number(high)})"
    ci = f"[{format_number(low)}, {format_number(high)}]"
    if verdict == "SUPPORTED":
        return f"the data exclude every value outside {ci}, all inside the claimed region"
    return f"the data exclude the claimed region ({text(region)}): the effect lies in {ci}"


def reasoning_lines(res: dict[str, Any]) -> list[str]:
    """Why this verdict: the criterion's (or the family's) own reason, and its level."""
    from grokverify.stats.base import p_against_words

    fam, result = res.get("family"), res.get("result")
    crit = code(res["criterion"]["name"])
    out: list[str] = []
    if fam and res["verdict"] == "FINDING":
        level = fam["members"][0]["result"]["ci_level"] if fam["members"] else None
        out += [f"An open question: nothing is claimed, so no rule decides. {text(fam['reason'])} "
                f"Each member's estimate comes with its criterion's ({crit}) "
                + (f"{float(level) * 100:.4g}% CI." if level is not None else "CI.")]
    elif fam:
        out += [f"The family's rule (`claims: {text(fam.get('claims', 'all'))}`) decided: "
                f"{text(fam['reason'])}",
                "",
                f"Level: each member is tested by {crit} at one-sided α = "
                f"{format_number(float(fam['alpha_one_sided']))}, with the "
                f"`{text(fam['correction'])}` correction across members where the rule needs "
                "it (the table in Result gives every member's p's before and after it)."]
    elif result:
        out += [f"The criterion {crit} decided: {text(res['reason'])}", "",
                f"Level: {_level_words(result)}."]
        if terms := region_terms(result):
            out += ["", f"In the claim's terms: {terms}."]
        if result.get("p_support") is not None or result.get("p_refute") is not None:
            out += ["", f"In p-values: {text(p_against_words(result))}."]
    seq = res.get("sequential")
    if seq:
        out += ["", f"Sequential seeding: {len(seq['rounds'])} round(s) of looks at "
                f"{', '.join(map(str, seq['looks']))} seeds per arm, "
                f"{text(seq['spending'].replace('_', '-'))} alpha spending, so each round's CI is "
                "at its own nominal level (Sequential rounds, above) and the overall error rate "
                "stays at the planned level; the verdict is the last round's."]
    return out


def _by_arm(res: dict[str, Any], keep: Callable[[dict[str, Any]], bool]) -> Counter[str]:
    """Per-seed rows that `keep` accepts, counted by arm label ("arm" or "member/arm")."""
    return Counter(arm_label(r.get("member"), r["arm"]) for r in res["per_seed"] if keep(r))


def _listed(counts: Counter[str], totals: Counter[str], limit: int = 12) -> str:
    items = [f"{text(k)} {v} of {totals[k]}" for k, v in counts.items() if v]
    return "; ".join(items[:limit]) + (f"; and {len(items) - limit} more arms"
                                      if len(items) > limit else "")


def _results(res: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in member_results(res).values() if r]


def caveat_lines(res: dict[str, Any]) -> list[str]:
    """What limits the verdict: the scale, censored, diverged and left-out seeds, a crossing
    whose means do not move one way, and for an undecided verdict the power to settle it."""
    totals = _by_arm(res, lambda r: True)
    out = []
    if not res["scale"]["paper_setting"]:
        out.append(f"- Scale: the verdict is about scale {code(res['scale']['name'])}, not the "
                   "paper's setting.")
    if res["metric"]["kind"] == "time":
        cens = _by_arm(res, lambda r: not r.get("left_out") and r.get("metric_observed") is False)
        out.append(f"- Censoring: {sum(cens.values())} of {len(res['per_seed'])} seed run(s) "
                   "never reached the event within their budget (censored at it)"
                   + (f": {_listed(cens, totals)}." if any(cens.values()) else "."))
    else:
        out.append("- Censoring: none (a value metric is never censored).")
    diverged = {k: a["diverged"] for k, a in res["arms"].items() if a.get("diverged")}
    out.append(f"- Divergence: {sum(diverged.values())} seed run(s) diverged (non-finite loss)"
               + (": " + "; ".join(f"{text(k)} {v}" for k, v in diverged.items()) if diverged
                  else "") + f"; a diverged seed's metric: {text(res['metric']['on_diverged'])}.")
    left = Counter(str(r["left_out"]) for r in res["per_seed"] if r.get("left_out"))
    if left:
        out.append(f"- Left out: {sum(left.values())} seed run(s) without a usable value: "
                   + "; ".join(f"{v} × {text(k)}" for k, v in left.most_common(5)) + ".")
    for r in _results(res):
        d = r.get("details") or {}
        if d.get("monotone") is False:
            out.append(f"- The arm means do not move one way: {d.get('n_against_direction')} "
                       "step(s) against the direction; the first bracketing pair decides.")
            break
        if d.get("estimate_bound"):
            out.append(f"- The point estimate is an {text(d['estimate_bound'])} bound (an arm's "
                       "median lies beyond the budget).")
            break
    undecided = res["verdict"] in ("INCONCLUSIVE", "PARTIAL") or any(
        r.get("verdict") == "INCONCLUSIVE" for r in _results(res))
    if res["verdict"] == "FINDING":
        out.append("- Precision: an open question is estimated, not judged; its CIs are its "
                   "precision, and more seeds (`--seeds`) narrow them.")
    elif undecided and res.get("more_seeds"):
        for member, found in res["more_seeds"].items():
            out.append(f"- Power{f' ({text(member)})' if member else ''}: "
                       f"{text(found['words'])} (`grokverify plan` refines it: "
                       f"{code(plan_command(res))}).")
    elif undecided:
        out.append("- Power: the CI does not settle the claim at these seeds (an INCONCLUSIVE "
                   "verdict, or members). More seeds may: "
                   f"{code(plan_command(res))} resamples the stored seeds as a pilot and gives "
                   "P(SUPPORTED) by seeds per arm and the fewest that reach 80% power.")
    elif res["verdict"] == "NOT TESTED":
        out.append("- Power: not what decided; the run did not test the claim (the reason "
                   "above: a failed check, or a criterion the budget cannot meet), whatever "
                   "its CI.")
    else:
        out.append("- Power: not at issue; the CI settled the verdict at these seeds.")
    return out


def reproduce_lines(res: dict[str, Any]) -> list[str]:
    """The commands that train (or reuse) the records and write this report, that rebuild it
    from the store training nothing, and that plan the seeds for a target power."""
    return [f"- Train what is missing and write the report: {code(reproduce_command(res))}",
            f"- Rebuild it from the store, training nothing: {code(rebuild_command(res))}",
            f"- Seeds per arm for 80% power, from the stored seeds: {code(plan_command(res))}"]


__all__ = ["caveat_lines", "reasoning_lines", "reproduce_lines", "setup_lines"]
