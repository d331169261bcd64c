"""One run end to end (grokverify.run.pipeline): claim → trials → store → verdict → report on
the local executor; the store's reuse, records that do not depend on the chunk, the driver's
record writer (a failed write or fsync stops the run), the paper-scale warning on a CPU, and a
zero-step claim that measures the initialisation."""

from __future__ import annotations

import json
import math
import os
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console

from grokverify.claim.budget import CPU_WARN_S, scale_cpu_seconds
from grokverify.claim.load import LoadedClaim, load_claim
from grokverify.claim.yamlio import SpecError
from grokverify.cli import Terminated, _raise_terminated, main
from grokverify.engine.batched import BatchedModel
from grokverify.engine.models import DataShape
from grokverify.run.pipeline import RunOptions, _warn_paper_scale_on_cpu, run_claims
from grokverify.store import Store, StoreError, verify

ROOT = Path(__file__).resolve().parent.parent

QUIET = Console(quiet=True)


def _opts(tmp_path: Path, **kw: Any) -> RunOptions:
    return RunOptions(store=tmp_path / "store", reports=tmp_path / "reports", executor="local",
                      device="cpu", **kw)


def _records(store_dir: Path) -> list[Path]:
    return sorted((store_dir / "records").rglob("*.json"))


def test_local_run_writes_report_and_reuses_the_store(tmp_path: Path, tiny_claim: Path) -> None:
    loaded = load_claim(tiny_claim)
    (first,) = run_claims([loaded], _opts(tmp_path), QUIET)
    assert (first.trained, first.reused) == (6, 0)
    records = _records(tmp_path / "store")
    assert len(records) == 6
    stamps = {p: p.stat().st_mtime_ns for p in records}

    (second,) = run_claims([loaded], _opts(tmp_path), QUIET)
    assert (second.trained, second.reused) == (0, 6)
    assert {p: p.stat().st_mtime_ns for p in _records(tmp_path / "store")} == stamps
    assert second.result.to_dict() == first.result.to_dict()

    (third,) = run_claims([loaded], _opts(tmp_path, seeds=4), QUIET)
    assert (third.trained, third.reused) == (2, 6)  # only seed 3 of each arm is new
    assert len(_records(tmp_path / "store")) == 8

    out = tmp_path / "reports" / "tiny"
    result = json.loads((out / "result.json").read_text())
    # c1's KM median lies near the budget and some resamples never reach it: the computed CI
    # runs from 0 past θ = 0.8; with 4 seeds an arm it is set aside anyway: INCONCLUSIVE
    assert result["verdict"] == "INCONCLUSIVE"
    computed = result["result"]["details"]["ci_computed"]
    assert computed[0] == 0.0 and computed[1] > 0.8
    assert result["result"]["ci"] == ["-inf", "inf"]
    assert result["scale"] == {"name": "quick", "description": "test scale",
                               "paper_setting": False}
    assert {r["seed"] for r in result["per_seed"]} == {0, 1, 2, 3}
    for r in result["per_seed"]:  # the metric per seed: its val step, else the budget, censored
        reached = r["val_step"] is not None
        assert (r["metric"], r["metric_observed"]) == (
            r["val_step"] if reached else r["budget"], reached)
    assert len(result["arms"]["c10"]["store_keys"]) == 4
    assert result["provenance"]["seeds_trained_now"] == 2
    ci = result["result"]["ci"]
    assert len(ci) == 2 and result["result"]["p_value"] is not None
    report = (out / "report.md").read_text()
    assert "NOT THE PAPER'S SETTING" in report
    assert result["verdict"] in report and "KM median" in report
    assert (out / "curves.png").stat().st_size > 0 and (out / "survival.png").exists()


def test_records_hold_the_trained_curves(tmp_path: Path, tiny_claim: Path) -> None:
    loaded = load_claim(tiny_claim)
    (run,) = run_claims([loaded], _opts(tmp_path, seeds=1), QUIET)
    store = Store(tmp_path / "store")
    for plan in run.plans:
        rec = store.get(plan.keys[0])
        assert rec["seed"] == 0 and rec["key"] == plan.keys[0]
        assert rec["experiment"] == plan.experiment.model_dump(mode="json")
        val = rec["result"]["curves"]["val_acc"]
        assert val["steps"][0] == 0 and len(val["steps"]) == len(val["values"])


def test_results_do_not_depend_on_the_chunk_size(tmp_path: Path, tiny_claim: Path) -> None:
    """Seeds trained one per trial or all in one batch: the same records to the last bit (on a
    CPU), hence the same verdict, CI and p-value."""
    loaded = load_claim(tiny_claim)
    runs, results = [], []
    for chunk in (1, 16):
        base = tmp_path / f"chunk{chunk}"
        (run,) = run_claims([loaded], _opts(base, chunk_size=chunk), QUIET)
        runs.append(run)
        store = Store(base / "store")
        results.append({key: store.get(key)["result"] for plan in run.plans for key in plan.keys})
    assert results[0] == results[1] and len(results[0]) == 6
    assert runs[0].result.to_dict() == runs[1].result.to_dict()


def test_changing_a_setting_trains_afresh(tmp_path: Path, tiny_claim: Path) -> None:
    run_claims([load_claim(tiny_claim)], _opts(tmp_path, seeds=1), QUIET)
    changed = tmp_path / "changed.yaml"
    changed.write_text(tiny_claim.read_text().replace("lr: 0.002", "lr: 0.004"))
    (run,) = run_claims([load_claim(changed)], _opts(tmp_path, seeds=1), QUIET)
    assert run.trained == 2


def test_cli_run_prints_the_verdict_with_its_ci(tmp_path: Path, tiny_claim: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", str(tiny_claim), "--executor", "local", "--store",
                 str(tmp_path / "s"), "--reports", str(tmp_path / "r"), "--device", "cpu"])
    out = capsys.readouterr().out
    assert code == 0
    assert "95% CI" in out and "log-rank p" in out
    # the pinned golden report of this claim (tests/golden/claims.json, "tiny")
    line = next(ln for ln in out.splitlines() if "ratio of KM medians" in ln)
    for phrase in ("INCONCLUSIVE", "(c10 / c1) = 0.633", "95% CI [0, 0.84]"):
        assert phrase in line, line


def test_correlation_claim_gets_both_metrics_per_seed(tmp_path: Path, tiny_claim: Path) -> None:
    """A criterion that reads two metrics gets both for the same seeds (x tracks y)."""
    text = tiny_claim.read_text()
    start = text.index("criterion:")
    text = text[:start] + (
        "criterion: {name: correlation, arm: c10, x: train_threshold_step, "
        "y: val_threshold_step, method: spearman, direction: positive, min_effect: 0.1}\n")
    path = tmp_path / "corr.yaml"
    path.write_text(text)
    (run,) = run_claims([load_claim(path)], _opts(tmp_path, seeds=5), QUIET)
    sample = run.samples[""]["c10"]
    assert set(sample.extra) == {"train_threshold_step", "train_threshold_step.observed",
                                 "val_threshold_step", "val_threshold_step.observed"}
    assert len(sample.extra["val_threshold_step"]) == sample.n == 5
    assert run.result.criterion == "correlation"
    # Spearman r over 5 seeds; its Fisher-z CI by hand (Bonett-Wright se) is far too wide
    r = run.result.estimate
    se = math.sqrt((1 + r * r / 2) / (5 - 3))
    assert run.result.ci == pytest.approx(
        (math.tanh(math.atanh(r) - 1.959964 * se), math.tanh(math.atanh(r) + 1.959964 * se)),
        rel=1e-6)
    assert run.result.ci[0] < 0.1 < run.result.ci[1]
    assert run.result.verdict.value == "INCONCLUSIVE"


def test_value_metric_claim_reports_its_values_not_survival(tmp_path: Path,
                                                            tiny_claim: Path) -> None:
    """A signed value metric (mean validation loss over steps 100-300) judged by scalar_compare:
    each seed's value is the mean of its own record's curve, the arms' rows carry the criterion's
    columns (no censoring, no KM median), and the figure is a strip of values, not KM curves."""
    text = tiny_claim.read_text().replace(
        "metric: {name: val_threshold_step}",
        "metric: {name: curve_mean, curve: val_loss, start: 100, end: 300}")
    text = text[:text.index("criterion:")] + (
        "criterion: {name: scalar_compare, baseline: c1, treated: c10, direction: less, "
        "effect: difference, min_effect: 0.01, statistic: mean, n_boot: 200, paired: false}\n")
    path = tmp_path / "value.yaml"
    path.write_text(text)
    (run,) = run_claims([load_claim(path)], _opts(tmp_path, seeds=3), QUIET)
    store = Store(tmp_path / "store")
    out = tmp_path / "reports" / "tiny"
    result = json.loads((out / "result.json").read_text())
    for plan in run.plans:
        want = []
        for key in plan.keys:
            curve = store.get(key)["result"]["curves"]["val_loss"]
            window = [v for s, v in zip(curve["steps"], curve["values"], strict=True)
                      if 100 <= s <= 300]
            want.append(sum(window) / len(window))
        got = [r["metric"] for r in result["per_seed"] if r["arm"] == plan.arm]
        assert got == pytest.approx(want)
        assert run.samples[""][plan.arm].values.tolist() == pytest.approx(want)
    assert result["metric"]["kind"] == "value"
    assert result["figures"] == {"curves": "curves.png", "values": "values.png"}
    assert (out / "values.png").stat().st_size > 0 and not (out / "survival.png").exists()
    assert [list(a["columns"]) for a in result["result"]["arms"]] == [["seeds", "mean"]] * 2
    report = (out / "report.md").read_text()
    assert "curve_mean(curve=val_loss, start=100, end=300)" in report
    assert "values.png" in report and "KM median" not in report


# ---------------------------------------------------------------- the record writer


@pytest.mark.parametrize("fails", ["put", "sync"])
def test_a_failed_write_or_sync_stops_the_run(fails: str, tiny_claim: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Records are written as their trials return and synced on the driver's threads; the
    first write or fsync that fails is raised from the run (not lost on a thread), and every
    lock is released."""
    def broken(self: Store, *args: Any, **kwargs: Any) -> Path:
        raise StoreError("cannot write record: disk on fire")

    monkeypatch.setattr(Store, fails, broken)
    with pytest.raises(StoreError, match="disk on fire"):
        run_claims([load_claim(tiny_claim)], _opts(tmp_path, chunk_size=1), QUIET)
    assert not list((tmp_path / "store" / "locks").glob("*.lock")), "locks released"


def test_an_interrupted_run_whose_fsync_fails_still_stops_as_interrupted(
        tiny_claim: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while a record's fsync fails: the run stops as interrupted (the CLI's exit 130),
    not as the store's error (exit 1), and the failed fsync is still said."""
    def broken_sync(self: Store, paths: list[Path]) -> None:
        raise StoreError("cannot sync record: disk on fire")

    real_put = Store.put

    def put_then_interrupt(self: Store, *args: Any, **kwargs: Any) -> Path:
        real_put(self, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(Store, "sync", broken_sync)
    monkeypatch.setattr(Store, "put", put_then_interrupt)
    console = Console(record=True, width=200)
    with pytest.raises(KeyboardInterrupt):
        run_claims([load_claim(tiny_claim)], _opts(tmp_path, chunk_size=1), console)
    assert "disk on fire" in console.export_text()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_between_writing_and_logging_a_record_leaves_the_store_sound(
        signum: int, tiny_claim: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        python_sigint: None) -> None:
    """Ctrl-C (or SIGTERM) landing after a record's file is written but before its log line:
    the line and the lock's release still happen, then the run stops; `verify` finds nothing."""
    real_log = Store._log

    def signal_then_log(self: Store, entry: dict[str, Any]) -> None:
        os.kill(os.getpid(), signum)
        real_log(self, entry)

    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    monkeypatch.setattr(Store, "_log", signal_then_log)
    try:
        with pytest.raises((KeyboardInterrupt, Terminated)):
            run_claims([load_claim(tiny_claim)], _opts(tmp_path, chunk_size=1), QUIET)
    finally:
        signal.signal(signal.SIGTERM, previous)
    store = Store(tmp_path / "store")
    report = verify(store)
    assert report.ok == 1 and report.findings == []
    assert not list((tmp_path / "store" / "locks").glob("*.lock"))


# ---------------------------------------------------------------- paper scales on a CPU


def test_a_cheap_paper_setting_on_a_cpu_runs_without_the_gpu_warning(
        tmp_path: Path, tiny_claim: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The warning is about compute, not the label: a paper setting of seconds gets none."""
    text = tiny_claim.read_text().replace(
        "    description: test scale\n",
        "    description: test scale\n  paper:\n    description: the paper's\n"
        "    paper_setting: true\n")
    claim = tmp_path / "tiny_paper.yaml"
    claim.write_text(text)
    assert main(["run", str(claim), "--executor", "local", "--device", "cpu", "--seeds", "1",
                 "--scale", "paper", "--store", str(tmp_path / "s"),
                 "--reports", str(tmp_path / "r")]) == 0
    assert "sized for GPUs" not in capsys.readouterr().out


@pytest.mark.parametrize(("claim", "scale", "device", "warned"), [
    ("skeptic_sgd", "paper", "cpu", True),  # 50,000 steps at p = 97: GPU work
    ("skeptic_sgd", "paper", "cuda", False),
    ("skeptic_sgd", "quick", "cpu", False),
    ("referee_init_sigma_ratio", "quick", "cpu", False),  # the paper's sizes, zero steps
])
def test_an_expensive_paper_setting_on_a_cpu_warns_before_training(
        claim: str, scale: str, device: str, warned: bool) -> None:
    loaded = load_claim(ROOT / "claims" / f"{claim}.yaml")
    console = Console(record=True, width=400)
    _warn_paper_scale_on_cpu([loaded], scale, device, console)
    out = console.export_text()
    assert ("scale 'paper' is the paper's setting and is sized for GPUs" in out) is warned, out
    if warned:
        seconds = scale_cpu_seconds(loaded, scale)
        assert seconds > CPU_WARN_S
        hours = f"{seconds / 3600:.2g} hours of a 2-core CPU"
        assert f"20 seeds an arm to their budget are about {hours}" in out, out
        assert "--scale quick." in out, out


@pytest.mark.parametrize(("claim", "seeds", "measured_s"), [
    ("p1_c32_fails", 4, 1224.9),  # reports/reference/paper: 4 seeds, every one to its budget
    ("adam_lr", 4, 2500.7),
])
def test_the_cpu_estimate_is_near_a_measured_paper_scale_run(
        claim: str, seeds: int, measured_s: float) -> None:
    """The estimate is the run's: at its --seeds, within 1.5x of what these runs took on a
    2-core AMD EPYC, both under an hour, so no warning (it once said 9.7 hours for 20 min)."""
    loaded = load_claim(ROOT / "claims" / f"{claim}.yaml")
    estimated = scale_cpu_seconds(loaded, "paper", seeds)
    assert measured_s / 1.5 < estimated < measured_s * 1.5
    assert estimated < CPU_WARN_S
    console = Console(record=True, width=400)
    _warn_paper_scale_on_cpu([loaded], "paper", "cpu", console, seeds)
    assert "sized for GPUs" not in console.export_text()


def test_an_expensive_quick_paper_setting_does_not_suggest_itself() -> None:
    """A quick scale that is the paper's setting (paper 2's toys) warns without suggesting
    --scale quick, which is what was run."""
    loaded = load_claim(ROOT / "claims" / "skeptic_sgd.yaml")
    scales = dict(loaded.claim.scales)
    scales["quick"] = scales["paper"]
    claim = loaded.claim.model_copy(update={"scales": scales})
    paper_as_quick = LoadedClaim(claim, loaded.path,
                                 {**loaded.by_scale, "quick": loaded.by_scale["paper"]},
                                 loaded.lines)
    console = Console(record=True, width=400)
    _warn_paper_scale_on_cpu([paper_as_quick], "quick", "cpu", console)
    out = console.export_text()
    assert "scale 'quick' is the paper's setting and is sized for GPUs" in out, out
    assert "Use --address with a GPU cluster." in out and "--scale quick" not in out, out


# ---------------------------------------------------------------- a zero-step budget

INIT_CLAIM = """\
id: init_ratio
title: sigma_max ratio at initialisation
statement: At initialisation sigma_max(E) / sigma_max(W) is at least 2 (test fixture).
source: {arxiv: "2505.15624", where: test fixture, role: referee, quote: test fixture}
base:
  task: {op: add, p: 7, train_frac: 0.6, test_frac: 0.3}
  model: {kind: embed_mlp, d: 8, hidden: 16}
  optimizer: {name: adamw, lr: 0.02, weight_decay: 0.1}
  training: {steps: 0, eval_interval: 1}
  probes: [{name: sigma_max, every: 1}]
arms:
  init: {}
scales:
  quick: {description: test scale}
seeds: 6
metric: {name: curve_ratio, numerator: sigma_max.E, denominator: sigma_max.W, start: 0, end: 0}
criterion: {name: proportion, arm: init, outcome: value_above, cut: 2.0, threshold: 0.5,
            direction: greater}
"""


def test_a_zero_step_claim_measures_the_initialisation(tmp_path: Path) -> None:
    """Step 0 is evaluated and probed, nothing is trained, and a value metric reads it."""
    path = tmp_path / "init.yaml"
    path.write_text(INIT_CLAIM)
    loaded = load_claim(path)
    (run,) = run_claims([loaded], _opts(tmp_path), QUIET)
    store = Store(tmp_path / "store")
    (plan,) = run.plans
    records = [store.get(key)["result"] for key in plan.keys]
    assert [r["curves"]["sigma_max.E"]["steps"] for r in records] == [[0]] * 6
    assert [r["curves"]["val_acc"]["steps"] for r in records] == [[0]] * 6
    # the ratio, independently: numpy's SVD of each seed's initial E and W
    exp = loaded.resolved["quick"]["init"]
    model = BatchedModel(exp.model, DataShape(p=7, vocab=9, n_classes=7), list(range(6)))
    e, w = (np.linalg.svd(model.param(n).detach().double().numpy(), compute_uv=False)[:, 0]
            for n in ("embed.weight", "fc1.weight"))
    ratios = e / w
    got = [r["curves"]["sigma_max.E"]["values"][0] / r["curves"]["sigma_max.W"]["values"][0]
           for r in records]
    np.testing.assert_allclose(got, ratios, rtol=1e-6)
    share = float(np.mean(ratios >= 2.0))
    assert run.result.estimate == pytest.approx(share)
    assert run.result.details["counted_seeds"] == 6


def test_a_time_metric_with_a_zero_step_budget_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "init.yaml"
    path.write_text(INIT_CLAIM.replace(
        "metric: {name: curve_ratio, numerator: sigma_max.E, denominator: sigma_max.W, "
        "start: 0, end: 0}", "metric: {name: val_threshold_step}").replace(
        "criterion: {name: proportion, arm: init, outcome: value_above, cut: 2.0, "
        "threshold: 0.5,", "criterion: {name: proportion, arm: init, outcome: observed, "
        "threshold: 0.5,"))
    with pytest.raises(SpecError) as info:
        load_claim(path)
    (problem,) = info.value.problems
    assert problem.path == "base.training.steps" and problem.line == 9
    assert problem.message.startswith("a budget of 0 steps measures the initialisation only")
    assert "'val_threshold_step' is a time to an event" in problem.message


def test_a_log_gets_a_plain_progress_line_at_most_every_minute_with_an_eta_to_budget() -> None:
    """Output that is not a terminal (nohup, a cluster job's log) has no live bar: a plain line
    at most every `every` seconds, its ETA the rest of the seed-steps to budget at the rate
    model-steps were computed so far (an upper bound where seeds stop early)."""
    from grokverify.run.pipeline import PlainProgress

    now, said = [0.0], []
    plain = PlainProgress(1000, 40, 10, said.append, every=60.0, clock=lambda: now[0])
    now[0] = 30.0
    plain.update(100, 0, 0, 100)
    assert said == []  # not a minute yet
    now[0] = 600.0
    plain.update(250, 8, 2, 250)
    assert said == ["training: 8/40 seeds, 2/10 trials, 25% of the seed-steps to budget, "
                    "10 min elapsed, ETA at most 30 min"]
    now[0] = 630.0
    plain.update(300, 8, 2, 300)
    assert len(said) == 1
    now[0] = 7200.0
    plain.update(0, 8, 2, 0)
    assert said[-1].endswith("2.0 h elapsed, ETA —")


def test_seeds_that_stopped_early_do_not_shorten_the_eta() -> None:
    """Trials whose seeds stopped at a fifth of their budget count 500 seed-steps done but
    computed 100: the 500 left take 500 / (100 / 600 s) = 50 min, not the 10 min a rate from
    budget shares says (a paper-scale run once read 'ETA at most 4 min' for 25)."""
    from grokverify.run.pipeline import PlainProgress

    now, said = [0.0], []
    plain = PlainProgress(1000, 40, 10, said.append, every=60.0, clock=lambda: now[0])
    now[0] = 600.0
    plain.update(500, 8, 2, 100)
    assert said[-1].endswith("10 min elapsed, ETA at most 50 min")


def test_a_run_to_a_log_prints_its_progress_lines(tmp_path: Path, tiny_claim: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    import grokverify.run.pipeline as pipeline

    real = pipeline.PlainProgress
    monkeypatch.setattr(pipeline, "PlainProgress",
                        lambda *a, **k: real(*a, **{**k, "every": 0.0}))
    out = io.StringIO()
    opts = RunOptions(store=tmp_path / "s", reports=tmp_path / "r", executor="local")
    run_claims([load_claim(tiny_claim)], opts, Console(file=out, width=200))
    lines = [x for x in out.getvalue().splitlines() if x.startswith("training: ")]
    assert lines and "/6 seeds" in lines[-1] and "of the seed-steps to budget" in lines[-1]
