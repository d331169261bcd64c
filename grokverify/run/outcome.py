"""What one `grokverify run` was asked for (`RunOptions`) and what one claim's run produced
(`ClaimRun`), as plain data: the pipeline fills them, the report and the CLI read them, and
neither of those imports the pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from grokverify.claim.load import SINGLE, LoadedClaim
from grokverify.run.trials import ArmPlan
from grokverify.stats.base import ArmSample, CriterionResult, Verdict
from grokverify.stats.checks import CheckResult
from grokverify.stats.family import FamilyResult
from grokverify.stats.sequential import Rounds


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class RunOptions:
    scale: str = "quick"
    seeds: int | None = None
    store: Path = Path(".grokverify/store")
    reports: Path = Path("reports")
    executor: str = "ray"
    address: str | None = None
    device: str = "auto"
    chunk_size: int = 16
    cpus_per_task: int = 1
    gpus_per_task: float | None = None  # None: each chunk's share (budget.gpu_share)
    gpu_memory_gib: float | None = None  # per GPU, for that share (None: budget's default)


@dataclass
class ClaimRun:
    """What one claim's run produced. `seeding` holds its looks (one for a fixed seed count) and
    the verdicts recorded so far; `rounds` one summary per look judged."""

    loaded: LoadedClaim
    scale: str
    plans: list[ArmPlan]
    seeding: Rounds
    trained: int = 0  # seeds trained in this run
    reused: int = 0  # seeds taken from the store
    results: dict[str, CriterionResult] = field(default_factory=dict)  # member -> result
    samples: dict[str, dict[str, ArmSample]] = field(default_factory=dict)  # member -> arm -> ...
    family: FamilyResult | None = None
    checks: dict[str, list[CheckResult]] = field(default_factory=dict)  # member -> its checks
    more_seeds: dict[str, dict[str, Any]] = field(default_factory=dict)  # undecided members
    rounds: list[dict[str, Any]] = field(default_factory=list)
    report_dir: Path | None = None
    wall_s: float = 0.0
    train_wall_s: float = 0.0
    started: str = field(default_factory=now)

    @property
    def result(self) -> CriterionResult:
        """The criterion result of a claim without a family."""
        return self.results[SINGLE]

    @property
    def verdict(self) -> Verdict:
        return self.family.verdict if self.family else self.result.verdict

    @property
    def reason(self) -> str:
        return self.family.reason if self.family else self.result.reason
