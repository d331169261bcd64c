"""`grokverify report`: every claim's report rebuilt from the store, training nothing.

The run's own analysis and report writer (`pipeline.run_claims` with `train=False`), claim by
claim, so a claim with seeds missing from the store is named with them and the others are
still rebuilt; a rebuilt report is the one `run` writes from the same records.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from grokverify.outcome import RunOptions
from grokverify.pipeline import MissingRecords, run_claims
from grokverify.spec import LoadedClaim


@dataclass(frozen=True)
class Rebuilt:
    """One claim's outcome: its result.json and verdict, or the seeds the store lacks in words
    (`MissingRecords`: "c1 seeds 3, 4; c10 seeds 3, 4"), in which case no report was written."""

    claim_id: str
    result_json: Path | None
    verdict: str | None
    seeds: int = 0
    missing: str = ""


def rebuild_claims(claims: list[LoadedClaim], opts: RunOptions,
                   console: Console) -> list[Rebuilt]:
    out = []
    for loaded in claims:
        try:
            (run,) = run_claims([loaded], opts, console, train=False)
        except MissingRecords as exc:
            out.append(Rebuilt(loaded.claim.id, None, None, missing=str(exc)))
            continue
        assert run.report_dir is not None  # a finished run has written its report
        out.append(Rebuilt(loaded.claim.id, run.report_dir / "result.json", run.verdict.value,
                           seeds=run.reused))
    return out
