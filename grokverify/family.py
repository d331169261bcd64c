"""Family claims ("c = 10 accelerates all four tasks"): one criterion result per member, a
multiplicity correction across members, and one verdict for the family.

Each member's criterion reports two one-sided p-values against the boundary of its claimed
region: `p_support` (small when the effect lies inside the region, beyond the minimum effect)
and `p_refute` (small when it lies outside). For a single claim, SUPPORTED at CI level 1 - α is
`p_support <= α/2`; a family applies the same rule to the p-values adjusted across members with
statsmodels' `multipletests` (Holm by default). The family is SUPPORTED only when every member
is, PARTIAL when some are, REFUTED when every member is refuted, and INCONCLUSIVE otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from statsmodels.stats.multitest import multipletests

from grokverify.stats import CriterionResult, Verdict
from grokverify.stats.base import jsonable


@dataclass
class MemberVerdict:
    member: str
    result: CriterionResult
    p_support: float | None
    p_refute: float | None
    p_support_adj: float | None
    p_refute_adj: float | None
    verdict: Verdict


@dataclass
class FamilyResult:
    correction: str
    alpha_one_sided: float
    members: list[MemberVerdict]
    verdict: Verdict
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return jsonable({
            "correction": self.correction, "alpha_one_sided": self.alpha_one_sided,
            "verdict": self.verdict, "reason": self.reason,
            "members": [{
                "member": m.member, "verdict": m.verdict, "p_support": m.p_support,
                "p_refute": m.p_refute, "p_support_adj": m.p_support_adj,
                "p_refute_adj": m.p_refute_adj, "result": m.result.to_dict(),
            } for m in self.members],
        })


def _adjust(p: list[float | None], method: str, alpha: float) -> list[float | None]:
    """Adjust the available p-values across members; members without one stay None."""
    idx = [i for i, v in enumerate(p) if v is not None]
    out: list[float | None] = [None] * len(p)
    if not idx:
        return out
    values = np.array([p[i] for i in idx], dtype=float)
    adjusted = values if method == "none" else multipletests(values, alpha=alpha,
                                                             method=method)[1]
    for i, v in zip(idx, adjusted, strict=True):
        out[i] = float(v)
    return out


def combine(results: dict[str, CriterionResult], correction: str) -> FamilyResult:
    names = list(results)
    first = results[names[0]]
    alpha = (1.0 - first.ci_level) / 2.0
    p_s = [results[n].p_support for n in names]
    p_r = [results[n].p_refute for n in names]
    adj_s, adj_r = _adjust(p_s, correction, alpha), _adjust(p_r, correction, alpha)
    members = []
    for i, name in enumerate(names):
        # The same rule as a single claim's CI: inside-the-region p <= α/2 supports,
        # outside-the-region p < α/2 refutes (strict, as the CI's far bound must pass θ).
        if adj_s[i] is not None and adj_s[i] <= alpha:
            verdict = Verdict.SUPPORTED
        elif adj_r[i] is not None and adj_r[i] < alpha:
            verdict = Verdict.REFUTED
        else:
            verdict = Verdict.INCONCLUSIVE
        members.append(MemberVerdict(name, results[name], p_s[i], p_r[i], adj_s[i], adj_r[i],
                                     verdict))
    supported = [m.member for m in members if m.verdict == Verdict.SUPPORTED]
    refuted = [m.member for m in members if m.verdict == Verdict.REFUTED]
    how = f"{correction}-adjusted one-sided p <= {alpha:g}" if correction != "none" else \
        f"unadjusted one-sided p <= {alpha:g}"
    if len(supported) == len(members):
        verdict, reason = Verdict.SUPPORTED, f"Every member is supported ({how})."
    elif supported:
        verdict = Verdict.PARTIAL
        reason = (f"Supported for {', '.join(supported)} but not for "
                  f"{', '.join(m.member for m in members if m.member not in supported)} ({how}).")
    elif len(refuted) == len(members):
        verdict, reason = Verdict.REFUTED, f"Every member is refuted ({how})."
    else:
        verdict = Verdict.INCONCLUSIVE
        detail = f"; refuted for {', '.join(refuted)}" if refuted else ""
        reason = f"No member is supported ({how}){detail}."
    return FamilyResult(correction, alpha, members, verdict, reason)
