"""Family claims ("c = 10 accelerates all four tasks"): one criterion result per member and one
verdict for the family, from the members' p-values against θ by what the family claims
(docs/verdicts.md, "Families"). A family never makes a member's verdict stronger than its own
result's, and an open question's family is not combined (its verdict is FINDING)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from statsmodels.stats.multitest import multipletests

from grokverify.stats.base import CriterionResult, Verdict, jsonable, verdict_from_p


@dataclass
class MemberVerdict:
    """One member: its result, its p-values against θ, and the p-values that decide (after the
    correction that applies to each direction under the family's claim; equal to the raw ones
    where none applies)."""

    member: str
    result: CriterionResult
    p_support: float | None
    p_refute: float | None
    p_support_adj: float | None
    p_refute_adj: float | None
    verdict: Verdict


@dataclass
class FamilyResult:
    """The family's verdict, what it claims (all | any), the correction and the one-sided
    level, and every member's row."""

    claims: str
    correction: str
    alpha_one_sided: float
    members: list[MemberVerdict]
    verdict: Verdict
    reason: str
    trend: dict[str, Any] | None = None  # `grokverify.stats.trend.fit_trend`, when declared

    def to_dict(self) -> dict[str, Any]:
        return jsonable({
            "claims": self.claims, "correction": self.correction,
            "alpha_one_sided": self.alpha_one_sided, "verdict": self.verdict,
            "reason": self.reason, "trend": self.trend,
            "members": [{
                "member": m.member, "verdict": m.verdict, "p_support": m.p_support,
                "p_refute": m.p_refute, "p_support_adj": m.p_support_adj,
                "p_refute_adj": m.p_refute_adj, "result": m.result.to_dict(),
            } for m in self.members],
        })


def _adjust(p: list[float | None], method: str, alpha: float) -> list[float | None]:
    """Adjust p-values across members; a member without one enters as p = 1 (it counts as a
    hypothesis with no evidence) and stays None."""
    if method == "none":
        return list(p)
    values = np.array([1.0 if v is None else v for v in p], dtype=float)
    adjusted = multipletests(values, alpha=alpha, method=method)[1]
    return [None if v is None else float(a) for v, a in zip(p, adjusted, strict=True)]


def _names(members: list[MemberVerdict], verdict: Verdict) -> list[str]:
    return [m.member for m in members if m.verdict == verdict]


def _standing(members: list[MemberVerdict]) -> str:
    """Which members are supported, refuted and inconclusive, e.g. "supported for add, mul;
    inconclusive for div (no p against θ)"."""
    parts = []
    for word, verdict in (("supported", Verdict.SUPPORTED), ("refuted", Verdict.REFUTED),
                          ("inconclusive", Verdict.INCONCLUSIVE)):
        names = [m.member + _note(m) for m in members if m.verdict == verdict]
        if names:
            parts.append(f"{word} for {', '.join(names)}")
    return "; ".join(parts)


def _note(m: MemberVerdict) -> str:
    """Why an inconclusive member has no say: no p-values, or a verdict its criterion withheld."""
    if m.p_support is None and m.p_refute is None:
        return " (no p against θ)"
    own = verdict_from_p(m.p_support, m.p_refute, (1.0 - m.result.ci_level) / 2.0)
    withheld = own != Verdict.INCONCLUSIVE or None in (m.p_support, m.p_refute)
    if m.result.verdict == Verdict.INCONCLUSIVE and withheld:
        return " (verdict withheld by its criterion: see its reason)"
    return ""


def _adjusted(correction: str) -> str:
    return "unadjusted" if correction == "none" else f"{correction}-adjusted"


def _all(members: list[MemberVerdict], correction: str, alpha: float) -> tuple[Verdict, str]:
    """Intersection-union: every member supported (unadjusted) supports; any member refuted
    (after the correction) refutes."""
    rules = (f"claims: all; a member is supported at unadjusted one-sided p(support) <= "
             f"{alpha:g} and refuted at {_adjusted(correction)} p(refute) < {alpha:g}")
    if _names(members, Verdict.REFUTED):
        return Verdict.REFUTED, f"Not every member has the effect: {_standing(members)} ({rules})."
    if len(_names(members, Verdict.SUPPORTED)) == len(members):
        return Verdict.SUPPORTED, (f"Every member is supported at unadjusted one-sided "
                                   f"p(support) <= {alpha:g}, the intersection-union test of a "
                                   f"claim about all members.")
    return Verdict.INCONCLUSIVE, (f"Not every member is supported and none is refuted: "
                                  f"{_standing(members)} ({rules}).")


def _any(members: list[MemberVerdict], correction: str, alpha: float) -> tuple[Verdict, str]:
    """Every member judged after the correction; PARTIAL names the supported ones."""
    how = (f"claims: any; {_adjusted(correction)} one-sided p against θ: p(support) <= "
           f"{alpha:g} supports, p(refute) < {alpha:g} refutes")
    supported = _names(members, Verdict.SUPPORTED)
    if len(supported) == len(members):
        return Verdict.SUPPORTED, f"Every member is supported ({how})."
    if supported:
        return Verdict.PARTIAL, f"Only some members are supported: {_standing(members)} ({how})."
    if len(_names(members, Verdict.REFUTED)) == len(members):
        return Verdict.REFUTED, f"Every member is refuted ({how})."
    return Verdict.INCONCLUSIVE, f"No member is supported: {_standing(members)} ({how})."


def _capped(verdict: Verdict, result: CriterionResult) -> Verdict:
    """A family never strengthens a member's own verdict: where its criterion withheld one that
    its CI gives (the lower-bound rule under censoring), the member stays INCONCLUSIVE."""
    return verdict if verdict == result.verdict else Verdict.INCONCLUSIVE


# claims -> (is the support p corrected across members?, the family rule)
_RULES: dict[str, tuple[bool, Callable[[list[MemberVerdict], str, float],
                                       tuple[Verdict, str]]]] = {
    "all": (False, _all), "any": (True, _any)}


def _findings(results: dict[str, CriterionResult], claims: str, correction: str,
              alpha: float) -> FamilyResult:
    """An open question's members: each its own estimate, nothing combined or judged."""
    members = [MemberVerdict(n, r, None, None, None, None, r.verdict) for n, r in results.items()]
    missing = [m.member for m in members if m.verdict != Verdict.FINDING]
    reason = ("An open question: each member's estimate and CI are reported and nothing is "
              "judged" + (f"; no estimate for {', '.join(missing)} (see each reason)"
                          if missing else "") + ".")
    return FamilyResult(claims, correction, alpha, members, Verdict.FINDING, reason)


def _untested(results: dict[str, CriterionResult], names: list[str], claims: str,
              correction: str, alpha: float, untested: str) -> FamilyResult | None:
    """The family when members (`names`) are NOT TESTED: NOT TESTED (``not_tested``, or every
    member untested), else None and the tested members are judged alone (``leave_out``)."""
    if not names or (untested == "leave_out" and len(names) < len(results)):
        return None
    members = [MemberVerdict(n, r, r.p_support, r.p_refute, None, None, r.verdict)
               for n, r in results.items()]
    return FamilyResult(claims, correction, alpha, members, Verdict.NOT_TESTED,
                        f"Not tested: the checks of {', '.join(names)} failed (see each "
                        f"member's reason), and a family with an untested member is not tested "
                        f"(untested: {untested}).")


def combine(results: dict[str, CriterionResult], correction: str,
            claims: str = "all", untested: str = "not_tested") -> FamilyResult:
    """The family's verdict from its members' results, by what it claims (all | any); members
    whose checks failed count by `untested` (not_tested | leave_out)."""
    if claims not in _RULES:
        raise ValueError(f"a family claims 'all' or 'any', not {claims!r}")
    if untested not in ("not_tested", "leave_out"):
        raise ValueError(f"untested members are 'not_tested' or 'leave_out', not {untested!r}")
    names = list(results)
    alpha = (1.0 - results[names[0]].ci_level) / 2.0
    if any(r.verdict == Verdict.FINDING for r in results.values()):
        return _findings(results, claims, correction, alpha)
    left_out = [n for n in names if results[n].verdict == Verdict.NOT_TESTED]
    if (whole := _untested(results, left_out, claims, correction, alpha, untested)) is not None:
        return whole
    family = _judge(results={n: results[n] for n in names if n not in left_out},
                    correction=correction, claims=claims, alpha=alpha)
    if left_out:
        family.members += [MemberVerdict(n, results[n], results[n].p_support,
                                         results[n].p_refute, None, None, Verdict.NOT_TESTED)
                           for n in left_out]
        family.members.sort(key=lambda m: names.index(m.member))
        family.reason += (f" Left out as not tested (untested: leave_out): "
                          f"{', '.join(left_out)}.")
    return family


def _judge(results: dict[str, CriterionResult], correction: str, claims: str,
           alpha: float) -> FamilyResult:
    correct_support, rule = _RULES[claims]
    names = list(results)
    p_s = [results[n].p_support for n in names]
    p_r = [results[n].p_refute for n in names]
    adj_s = _adjust(p_s, correction, alpha) if correct_support else list(p_s)
    adj_r = _adjust(p_r, correction, alpha)
    members = [MemberVerdict(n, results[n], p_s[i], p_r[i], adj_s[i], adj_r[i],
                             _capped(verdict_from_p(adj_s[i], adj_r[i], alpha), results[n]))
               for i, n in enumerate(names)]
    verdict, reason = rule(members, correction, alpha)
    return FamilyResult(claims, correction, alpha, members, verdict, reason)
