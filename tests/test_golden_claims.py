"""Golden end-to-end claims: `grokverify run` on two tiny claims must give exactly the pinned
verdict, estimate, CI, p-values and every seed's metric value and censoring flag
(tests/golden/claims.json), under the pinned numerics that hold on any x86-64 CPU with AVX2
(docs/determinism.md). The pinned values were checked independently (the file's "checked"
entry); the hand computations below repeat those checks on every run, so a pinned value that
the statistics would not give is caught as well as a run that no longer gives it."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "golden"))

from claim_cases import CLAIMS, pinned_of, run_claim  # noqa: E402
from reference import train_plain  # noqa: E402

from grokverify.claim.load import load_claim  # noqa: E402
from grokverify.cli import main  # noqa: E402
from grokverify.engine import numerics  # noqa: E402
from grokverify.engine.version import RESULTS_VERSION  # noqa: E402
from grokverify.store import torch_version  # noqa: E402

GOLDEN = json.loads((Path(__file__).parent / "golden" / "claims.json").read_text())


def _usable() -> None:
    if numerics.native():
        pytest.skip("GROKVERIFY_NUMERICS=native: golden claims hold for the pinned numerics")
    if GOLDEN["torch"] != torch_version():
        pytest.skip(f"golden claims are for torch {GOLDEN['torch']}, this is {torch_version()}")


def test_the_golden_claims_are_for_this_results_version() -> None:
    assert GOLDEN["results_version"] == RESULTS_VERSION, (
        "RESULTS_VERSION changed: regenerate tests/golden/claims.json "
        "(python tests/golden/make_golden_claims.py) and check it as its 'checked' entry says")
    assert set(GOLDEN["claims"]) == set(CLAIMS)


@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_a_run_gives_exactly_the_pinned_report(name: str, tmp_path: Path) -> None:
    _usable()
    got = pinned_of(run_claim(main, CLAIMS[name], tmp_path))
    assert got == GOLDEN["claims"][name]


def _km_median(times: list[float], observed: list[bool]) -> float:
    """By the definition in docs/verdicts.md: the first event time with S(t) < 1/2; where S is
    exactly 1/2 the midpoint of that time and the next event time; inf when never below."""
    s, at_risk = 1.0, len(times)
    order = sorted(set(times))
    events = [t for t in order if any(x == t and o for x, o in zip(times, observed, strict=True))]
    for t in order:
        d = sum(1 for x, o in zip(times, observed, strict=True) if x == t and o)
        s *= 1 - d / at_risk
        at_risk -= sum(1 for x in times if x == t)
        if abs(s - 0.5) < 1e-9 and d:
            later = [e for e in events if e > t]
            return (t + later[0]) / 2 if later else (t + max(times)) / 2
        if s < 0.5:
            return t
    return math.inf


def _arm(name: str, pinned: dict) -> tuple[list[float], list[bool]]:
    rows = [r for r in pinned["per_seed"] if r[0] == name]
    return [r[2] for r in rows], [r[3] for r in rows]


def test_golden_fit_estimate_and_ci_by_hand() -> None:
    """The KM medians and the paired (joint) percentile bootstrap of their ratio, by loops over
    the pinned per-seed steps: seed indices drawn by default_rng(bootstrap_seed).integers(0, n,
    (n_boot, n)), inverted-CDF quantiles, p(support) = share of resampled ratios above θ."""
    pinned = GOLDEN["claims"]["golden_fit"]
    crit = load_claim(CLAIMS["golden_fit"]).claim.criterion
    b, bo = _arm("c1", pinned)
    t, to = _arm("c10", pinned)
    assert all(bo) and all(to)  # every seed an event: no unreached-median bounds
    assert pinned["estimate"] == pytest.approx(_km_median(t, to) / _km_median(b, bo), rel=1e-12)
    n = len(b)
    idx = np.random.default_rng(crit.bootstrap_seed).integers(0, n, size=(crit.n_boot, n))
    ratios = sorted(_km_median([t[i] for i in row], [True] * n)
                    / _km_median([b[i] for i in row], [True] * n) for row in idx)
    low = ratios[math.ceil(0.025 * crit.n_boot) - 1]
    high = ratios[math.ceil(0.975 * crit.n_boot) - 1]
    assert pinned["ci"] == pytest.approx([low, high], rel=1e-12)
    theta = 1 - crit.min_effect
    assert pinned["p_support"] == pytest.approx(sum(r > theta for r in ratios) / crit.n_boot)
    assert pinned["verdict"] == ("SUPPORTED" if high <= theta else "INCONCLUSIVE")


def test_tiny_estimate_is_the_bound_by_hand() -> None:
    pinned = GOLDEN["claims"]["tiny"]
    budget = load_claim(CLAIMS["tiny"]).claim.base.training.steps
    b, bo = _arm("c1", pinned)
    t, to = _arm("c10", pinned)
    assert _km_median(b, bo) == math.inf and max(b) == budget
    assert pinned["estimate_bound"] == "upper"
    assert pinned["estimate"] == pytest.approx(_km_median(t, to) / budget, rel=1e-12)


def test_golden_fit_steps_match_the_plain_reference_trainer() -> None:
    """Every pinned threshold step of golden_fit, retrained by tests/reference.py (one plain
    model per seed, its own evaluation and >= rule)."""
    _usable()
    loaded = load_claim(CLAIMS["golden_fit"])
    pinned = GOLDEN["claims"]["golden_fit"]
    experiments = {arm: exp for (_scale, _member, arm, exp) in loaded.experiments()}
    for arm, seed, value, observed in pinned["per_seed"]:
        rec = train_plain(experiments[arm], seed)
        assert (rec.train_step, True) == (value, observed), f"{arm} seed {seed}"
