"""Validity checks measured from the stored records (nothing is trained), and the NOT TESTED
verdict they give a result when one fails (docs/verdicts.md, "NOT TESTED and validity checks")."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from grokverify.claim.checks import EVENT_FIELD, CheckSpec
from grokverify.claim.load import arm_label
from grokverify.kinds import CHECKS
from grokverify.numbers import format_number
from grokverify.stats.base import CriterionResult, jsonable
from grokverify.stats.verdict import Verdict

Record = dict[str, Any]


def _median(values: Sequence[float]) -> float:
    finite = [v for v in values if v is not None and not math.isnan(v)]
    return float(np.median(finite)) if finite else math.nan


def _curve(record: Record, name: str) -> tuple[list[int], list[float | None]]:
    curve = record["result"]["curves"].get(name, {"steps": [], "values": []})
    return curve["steps"], curve["values"]


def event_share(spec: Any, records: list[Record], experiment: Any) -> float:
    field = EVENT_FIELD[spec.event]
    return sum(r["result"]["summary"][field] is not None for r in records) / len(records)


def value_within(spec: Any, records: list[Record], experiment: Any) -> float:
    def pick(values: list[float | None]) -> float:
        known = [v for v in values if v is not None]
        if not known:
            return math.nan
        return float(known[0] if spec.at == "first" else known[-1])
    return _median([pick(_curve(r, spec.curve)[1]) for r in records])


def probe_resolution(spec: Any, records: list[Record], experiment: Any) -> float:
    """NaN when no seed reaches the event: a probe cannot time an event that never happens."""
    steps = [s for r in records for s in [_curve(r, spec.curve)[0]] if len(s) > 1]
    if not steps:
        return math.nan
    interval = float(np.median([b - a for s in steps for a, b in zip(s, s[1:], strict=False)]))
    at = _median([float(v) for r in records
                  if (v := r["result"]["summary"][EVENT_FIELD[spec.event]]) is not None])
    if math.isnan(at):
        return math.nan
    return interval / at if at > 0 else math.inf


def _splits(records: list[Record], task: Any) -> Iterator[Any]:
    """The dataset of each seed the records hold, in seed order (splits follow from the seed)."""
    from grokverify.engine.tasks import build_dataset

    for seed in sorted({int(r["result"]["seed"]) for r in records}):
        yield build_dataset(task, seed)


def rare_value_coverage(spec: Any, records: list[Record], experiment: Any) -> float:
    task = experiment.task
    shares = []
    for data in _splits(records, task):
        every = np.bincount(data.a, minlength=task.p)
        trained = np.bincount(data.a[data.train_idx], minlength=task.p)
        present = np.flatnonzero(every > 0)
        rare = present[np.argsort(trained[present], kind="stable")][
            :max(1, math.ceil(spec.rarest * len(present)))]
        shares.append(float(trained[rare].sum() / every[rare].sum()))
    return _median(shares)


def reachable_split(spec: Any, records: list[Record], experiment: Any) -> float:
    reachable = []
    for data in _splits(records, experiment.task):
        shown = np.isin(data.y[data.val_idx], data.y[data.train_idx])
        reachable.append(float(shown.mean() if shown.size else 1.0)
                         >= experiment.training.val_threshold)
    return float(np.mean(reachable)) if reachable else math.nan


def init_sigma_ratio(spec: Any, records: list[Record], experiment: Any) -> float:
    """The seeds' models as training builds them (initial weights follow from the seed)."""
    import torch

    from grokverify.engine.loop import Shard
    from grokverify.engine.probes import sigma_max_of

    seeds = sorted({int(r["result"]["seed"]) for r in records})
    model = Shard(experiment, seeds, torch.device("cpu")).model
    with torch.no_grad():
        ratio = sigma_max_of(model.role_param("E")) / sigma_max_of(model.role_param("W"))
    return _median(ratio[:len(seeds)].tolist())


@dataclass(frozen=True)
class CheckResult:
    """One check on one arm: what it measured against what the test needs."""

    check: str
    arm: str
    what: str
    measured: float
    needed: str
    passes: bool
    why: str = ""

    def words(self) -> str:
        """e.g. "event_share on c1: 0.1 (share of seeds ...), needed >= 0.5"."""
        return (f"{self.check} on {self.arm}: {format_number(self.measured)} ({self.what}), "
                f"needed {self.needed}")

    def to_dict(self) -> dict[str, Any]:
        return jsonable(dataclasses.asdict(self))


def run_checks(checks: Sequence[CheckSpec], member: str, arms: dict[str, tuple[Any, list[Record]]]
               ) -> list[CheckResult]:
    """Every check on every arm it reads (arm name -> (experiment, records))."""
    out = []
    for check in checks:
        for arm, (experiment, records) in arms.items():
            if check.arm not in (None, arm) or not records:
                continue
            value = float(CHECKS.of(check)(check, records, experiment))
            out.append(CheckResult(check.kind, arm_label(member, arm),  # type: ignore[attr-defined]
                                   check.describe(), value, check.needed(), check.passes(value),
                                   check.why))
    return out


def not_tested(result: CriterionResult, checks: list[CheckResult]) -> CriterionResult:
    """The result NOT TESTED when a check failed, saying which, measured what, needed what;
    the verdict the criterion alone gives is kept in its details. Unchanged when all pass."""
    failed = [c for c in checks if not c.passes]
    if not failed:
        return result
    # arms that fail one check with the same value are named together, its why said once
    groups: dict[tuple[str, float, str, str, str], list[CheckResult]] = {}
    for c in failed:
        groups.setdefault((c.check, c.measured, c.what, c.needed, c.why), []).append(c)
    named = [dataclasses.replace(cs[0], arm=", ".join(c.arm for c in cs))
             for cs in groups.values()]
    parts = [c.words() + (f" — {c.why.strip().rstrip('.')}" if c.why else "") for c in named]
    reason = ("Not tested: " + "; ".join(parts)
              + f". The criterion alone would say {result.verdict.value}.")
    details = {**result.details, "verdict_if_tested": result.verdict.value,
               "reason_if_tested": result.reason}
    return dataclasses.replace(result, verdict=Verdict.NOT_TESTED, reason=reason,
                               details=details)
