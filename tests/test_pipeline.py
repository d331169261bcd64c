"""End to end: claim → trials → store → verdict → report, through the local executor and Ray."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from rich.console import Console

from grokverify.claim.load import LoadedClaim, load_claim
from grokverify.cli import main
from grokverify.run.pipeline import (
    CPU_WARN_FLOPS,
    RunOptions,
    _warn_paper_scale_on_cpu,
    run_claims,
    scale_flops,
)
from grokverify.store import Store

ROOT = Path(__file__).resolve().parent.parent

QUIET = Console(quiet=True)


def _opts(tmp_path: Path, **kw) -> RunOptions:
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
    # c1's KM median lies near the budget and some resamples never reach it: the CI runs from
    # 0 past θ = 0.8, the verdict is INCONCLUSIVE
    assert result["verdict"] == "INCONCLUSIVE"
    assert result["result"]["ci"][0] == 0.0 and result["result"]["ci"][1] > 0.8
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
    assert "INCONCLUSIVE  ratio of KM medians (c10 / c1) = 0.633, 95% CI [0, 0.84]" in out


def test_unknown_scale_fails_cleanly(tmp_path: Path, tiny_claim: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", str(tiny_claim), "--executor", "local", "--scale", "paper",
                 "--store", str(tmp_path / "s")])
    assert code == 2  # a bad argument: found before anything starts
    assert "no scale 'paper'" in capsys.readouterr().err


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
        flops = scale_flops(loaded, scale)
        assert flops > CPU_WARN_FLOPS
        hours = f"{flops / CPU_WARN_FLOPS:.2g} hours of a 2-core CPU"
        assert f"its arithmetic is about {hours}" in out and "--scale quick." in out, out


def test_an_expensive_quick_paper_setting_does_not_suggest_itself() -> None:
    """A quick scale that is the paper's setting (paper 2's toys) warns without suggesting
    --scale quick, which is what was run."""
    loaded = load_claim(ROOT / "claims" / "skeptic_sgd.yaml")
    scales = dict(loaded.claim.scales)
    scales["quick"] = scales["paper"]
    claim = loaded.claim.model_copy(update={"scales": scales})
    paper_as_quick = LoadedClaim(claim, loaded.path,
                                 {**loaded.units, "quick": loaded.units["paper"]}, loaded.lines)
    console = Console(record=True, width=400)
    _warn_paper_scale_on_cpu([paper_as_quick], "quick", "cpu", console)
    out = console.export_text()
    assert "scale 'quick' is the paper's setting and is sized for GPUs" in out, out
    assert "Use --address with a GPU cluster." in out and "--scale quick" not in out, out


@pytest.mark.ray
def test_ray_run_matches_local_run(tmp_path: Path, tiny_claim: Path) -> None:
    loaded = load_claim(tiny_claim)
    (local,) = run_claims([loaded], _opts(tmp_path / "local"), QUIET)
    ray_opts = RunOptions(store=tmp_path / "ray" / "store", reports=tmp_path / "ray" / "reports",
                          executor="ray", device="cpu", chunk_size=2)
    (ray_run,) = run_claims([loaded], ray_opts, QUIET)
    assert ray_run.trained == 6
    # Chunks of 2 seeds on Ray vs one chunk of 3 locally: the same steps and verdict, losses
    # equal to float tolerance (the batch size changes the last bits of some kernels).
    assert ray_run.result.verdict == local.result.verdict
    assert ray_run.result.ci == pytest.approx(local.result.ci)
    local_store, ray_store = Store(tmp_path / "local" / "store"), Store(tmp_path / "ray" / "store")
    for plan in ray_run.plans:
        for key in plan.keys:
            got, want = ray_store.get(key)["result"], local_store.get(key)["result"]
            assert got["summary"]["train_step"] == want["summary"]["train_step"]
            assert got["summary"]["val_step"] == want["summary"]["val_step"]
            for name in ("train_acc", "val_acc"):
                assert got["curves"][name] == want["curves"][name]
            assert got["curves"]["val_loss"]["values"] == pytest.approx(
                want["curves"]["val_loss"]["values"], rel=1e-4)


@pytest.mark.ray
def test_ray_refuses_resources_the_cluster_lacks(tmp_path: Path, tiny_claim: Path) -> None:
    from grokverify.run.execute import ExecutionError, RayExecutor

    with pytest.raises(ExecutionError, match="GPU"):
        RayExecutor(device="cuda", gpus_per_task=1.0)


def test_dead_address_fails_fast(tmp_path: Path, tiny_claim: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", str(tiny_claim), "--address", "127.0.0.1:9", "--device", "cpu",
                 "--store", str(tmp_path / "s")])
    assert code == 1
    assert "cannot reach Ray at 127.0.0.1:9" in capsys.readouterr().out


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


def test_trials_are_cut_so_every_slot_has_one_when_the_seeds_allow(tiny_claim: Path) -> None:
    """`spread` halves the largest trial while there are fewer trials than slots; every seed
    stays in exactly one trial, with its own key."""
    from grokverify.run.trials import Trial, spread

    exp = next(iter(load_claim(tiny_claim).resolved["quick"].values()))
    one = Trial("c", "", "a", exp, tuple(range(10)), tuple(f"k{i}" for i in range(10)), ())
    two = Trial("c", "", "b", exp, (3,), ("j3",), ())
    for slots, sizes in ((1, [10, 1]), (2, [10, 1]), (3, [5, 5, 1]), (4, [5, 3, 2, 1]),
                         (64, [1] * 11)):
        got = spread([one, two], slots)
        assert sorted((len(t.seeds) for t in got), reverse=True) == sizes, slots
        pairs = sorted((s, k) for t in got for s, k in zip(t.seeds, t.keys, strict=True))
        assert pairs == sorted([*zip(one.seeds, one.keys, strict=True), (3, "j3")]), slots
