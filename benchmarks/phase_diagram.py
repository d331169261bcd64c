"""A 10 × 10 phase diagram of paper 2's toy, 4 seeds a cell, 10,000 full-batch steps each
(target: <= 15 minutes on the 2-core CPU; the official code's Fig. 5a-style
grid takes ~30 minutes on 8 CPUs), against the peer-style per-run loop, in one run.

    python benchmarks/phase_diagram.py            # ~10-15 minutes on 2 cores (quiet machine)
    python benchmarks/phase_diagram.py --quick    # smoke run: a 2 × 2 corner, 500 steps

(a) grokverify: `grokverify run` on claims/p2_phase_lr_wd_regression.yaml (its quick scale:
    decoder lr × decoder weight decay, 100 cells × 4 seeds) with early stopping turned off, so
    every run trains all 10,000 steps as the target says, into an empty store, with the
    default local executor: the whole command (Ray start, planning, training, store, report)
    is timed: `phase_diagram_s`.
(b) peer: the official notebook's way, one run per loop (tests/reference.py's PlainTrainer:
    a plain model and torch's AdamW, one seed at a time, one thread), with training and
    validation accuracy after every step as the notebook computes them (its per-step RQI
    loop, pure Python over parallelograms, is left out: the peer's best case), on a sample of
    the same cells, timed for `--peer-s` seconds; its time for the whole diagram is
    projected as 400 runs × 10,000 steps over its rate, with two processes at twice the rate
    (a multiprocessing pool as the notebook's, perfect scaling assumed: the peer's best
    case). Also its rate without the per-step evaluation (`peer_train_only`).

All in the pinned numerics (grokverify.engine.numerics). Model-steps/s = runs × steps / s. The
last line is `phase_diagram_s=... engine_model_steps_per_s=... peer_model_steps_per_s=...
peer_projected_s=... speedup=...`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import torch  # noqa: E402
from reference import PlainTrainer  # noqa: E402

from grokverify.engine.numerics import pin_environment  # noqa: E402

pin_environment()  # before torch computes anything
from grokverify.claim.experiment import ExperimentSpec  # noqa: E402
from grokverify.claim.load import LoadedClaim, load_claim  # noqa: E402

CLAIM = REPO / "claims" / "p2_phase_lr_wd_regression.yaml"


def claim_text(quick: bool) -> str:
    """The claim with early stopping off (and, --quick, a 2 × 2 corner and 500 steps)."""
    text = CLAIM.read_text(encoding="utf-8").replace("early_stop: true", "early_stop: false")
    if quick:
        text = text.replace("num: 10, scale: log", "num: 2, scale: log")
        text = text.replace("values: [0, 1, 2, 3, 4, 5, 6, 8, 10, 20]", "values: [0, 20]")
        text = text.replace("steps: 10000,", "steps: 500,")
    return text


def load(text: str) -> LoadedClaim:
    with tempfile.TemporaryDirectory() as tmp:
        claim = Path(tmp) / "c.yaml"
        claim.write_text(text, encoding="utf-8")
        return load_claim(claim)


def engine_run(text: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        claim = Path(tmp) / "phase_diagram.yaml"
        claim.write_text(text, encoding="utf-8")
        start = time.perf_counter()
        done = subprocess.run(
            [str(Path(sys.executable).parent / "grokverify"), "run", str(claim), "--store",
             str(Path(tmp) / "store"), "--reports", str(Path(tmp) / "reports")],
            capture_output=True, text=True)
        wall = time.perf_counter() - start
        report = Path(tmp) / "reports" / "p2_phase_lr_wd_regression" / "result.json"
        if not report.is_file():  # exit 1 is also a verdict other than SUPPORTED
            sys.exit(f"grokverify run wrote no report (exit {done.returncode}):\n"
                     f"{done.stdout}\n{done.stderr}")
    return wall


def peer_rate(arms: list[ExperimentSpec], budget_s: float, evaluate: bool) -> float:
    """Model-steps/s of the per-run loop over a sample of the cells (one thread)."""
    torch.set_num_threads(1)
    sample = [arms[i] for i in range(0, len(arms), max(1, len(arms) // 8))][:8]
    steps, total = 0, 0.0
    for exp in sample:
        trainer = PlainTrainer(exp, 0)
        trainer.train(3)  # warm-up
        start = time.perf_counter()
        while time.perf_counter() - start < budget_s / len(sample):
            for _ in range(50):
                trainer.train(1)
                if evaluate:
                    trainer.evaluate()
            steps += 50
        total += time.perf_counter() - start
    return steps / total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run (a 2 × 2 corner)")
    parser.add_argument("--peer-s", type=float, default=None,
                        help="seconds the peer loop is timed for (default 60; --quick 10)")
    args = parser.parse_args()
    peer_s = args.peer_s or (10.0 if args.quick else 60.0)
    text = claim_text(args.quick)
    loaded = load(text)
    arms = list(loaded.resolved["quick"].values())
    cells, seeds, steps = len(arms), int(loaded.scale_seeds("quick")), arms[0].training.steps
    runs = cells * seeds
    print(f"phase diagram: {cells} cells × {seeds} seeds × {steps} full-batch steps "
          f"({runs * steps:,} model-steps)", flush=True)
    peer_eval = peer_rate(arms, peer_s, evaluate=True)
    peer_train = peer_rate(arms, peer_s / 2, evaluate=False)
    print(f"peer per-run loop, 1 thread: {peer_eval:,.0f} model-steps/s with per-step "
          f"accuracy, {peer_train:,.0f} training only", flush=True)
    wall = engine_run(text)
    engine = runs * steps / wall
    peer_projected = runs * steps / (2 * peer_eval)
    print(f"grokverify run: {wall:.1f} s for the diagram ({engine:,.0f} model-steps/s, whole "
          f"command); peer projected with 2 processes: {peer_projected:.0f} s")
    print(f"phase_diagram_s={wall:.1f} engine_model_steps_per_s={engine:.0f} "
          f"peer_model_steps_per_s={peer_eval:.0f} peer_train_only={peer_train:.0f} "
          f"peer_projected_s={peer_projected:.0f} speedup={peer_projected / wall:.2f}")


if __name__ == "__main__":
    main()
