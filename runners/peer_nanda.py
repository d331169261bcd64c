"""Peer check for the Nanda et al. 2023 claims: train their released model
(mechanistic-interpretability-grokking/progress-measures-paper, transformers.py) with their
optimizer, schedule, split and loss, and compare its steps to generalise with this engine's.

Their module is imported from a checkout or a bare mirror (`--code`); only `wandb` (never
called here) is stubbed, and `helpers` is reduced to their own `cross_entropy_high_precision`,
read from their helpers.py, so that plotly and pandas are not needed. The loop is their
Trainer.do_a_training_step without its logging (the test loss they log each epoch has no effect
on training: no dropout, no random draw). Prints one JSON object; with `--engine RESULT.json
--arm ARM` also the comparison (reports/README.md, Peer checks)."""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np
import torch

from grokverify.stats.base import ArmSample
from grokverify.stats.survival import bootstrap_median_effect, km_median, logrank


def _source(code: Path, name: str) -> str:
    """A file of their repository, from a work tree or (a bare mirror) its HEAD commit."""
    if (code / name).exists():
        return (code / name).read_text()
    return subprocess.run(["git", f"--git-dir={code}", "show", f"HEAD:{name}"], check=True,
                          capture_output=True, text=True).stdout


def load_peer(code: Path) -> types.ModuleType:
    """Their transformers.py as the module `peer.transformers`."""
    root = Path(tempfile.mkdtemp()) / "peer"
    root.mkdir()
    helpers = ast.parse(_source(code, "helpers.py"))
    [loss] = [n for n in helpers.body
              if isinstance(n, ast.FunctionDef) and n.name == "cross_entropy_high_precision"]
    (root / "__init__.py").write_text("")
    (root / "helpers.py").write_text("import torch\nimport torch.nn.functional as F\n\n\n"
                                     + ast.unparse(loss) + "\n")
    (root / "transformers.py").write_text(_source(code, "transformers.py"))
    sys.modules.setdefault("wandb", types.ModuleType("wandb"))
    sys.path.insert(0, str(root.parent))
    return importlib.import_module("peer.transformers")


def train_seed(peer: types.ModuleType, args: argparse.Namespace, seed: int) -> dict:
    """One seed their way; accuracy every `eval_every` epochs, as the engine evaluates."""
    config = peer.Config(lr=args.lr, weight_decay=args.wd, p=args.p, d_model=args.d,
                         frac_train=args.frac, num_epochs=args.epochs, seed=seed,
                         d_vocab=args.p + 1, d_mlp=args.mlp, device=torch.device("cpu"))
    torch.manual_seed(seed)
    model = peer.Transformer(config, use_cache=False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr,
                                  weight_decay=config.weight_decay, betas=(0.9, 0.98))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(step / 10, 1))
    train, test = peer.gen_train_test(config)
    answers = {name: torch.tensor([config.fn(a, b) for a, b, _ in data])
               for name, data in (("train", train), ("test", test))}
    train_step = val_step = None
    for epoch in range(args.epochs + 1):
        if epoch % args.eval_every == 0:
            with torch.no_grad():
                acc = {name: float((model(data)[:, -1].argmax(-1) == answers[name])
                                   .float().mean())
                       for name, data in (("train", train), ("test", test))}
            if train_step is None and acc["train"] >= args.threshold:
                train_step = epoch
            if acc["test"] >= args.threshold:
                val_step = epoch
                break
        if epoch == args.epochs:
            break
        loss = peer.full_loss(config, model, train)
        loss.backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
    return {"seed": seed, "train_step": train_step, "val_step": val_step,
            "final_val_acc": acc["test"], "n_train": len(train), "n_test": len(test)}


def _sample(name: str, rows: list[dict], budget: int) -> ArmSample:
    """Per-seed steps to generalise, censored at the budget."""
    values = np.array([r["val_step"] if r["val_step"] is not None else budget for r in rows],
                      dtype=float)
    observed = np.array([r["val_step"] is not None for r in rows])
    return ArmSample(name, values, observed, tuple(r["seed"] for r in rows))


def compare_samples(base: ArmSample, other: ArmSample) -> dict:
    """KM medians of two runs, the median ratio other / base with a 95% bootstrap CI, and a
    log-rank p."""
    ratio, ci, _ = bootstrap_median_effect(base, other, "ratio", 10_000, 0, 0.95)
    return {f"{base.name}_median": km_median(base.values, base.observed)[0],
            f"{base.name}_generalised": f"{int(base.observed.sum())}/{base.n}",
            f"{other.name}_median": km_median(other.values, other.observed)[0],
            f"{other.name}_generalised": f"{int(other.observed.sum())}/{other.n}",
            f"ratio_{other.name}_over_{base.name}": ratio, "ratio_ci95": list(ci),
            "logrank_p": logrank(base, other)[1]}


def compare(peer_rows: list[dict], engine: dict, arm: str, budget: int) -> dict:
    """The peer's seeds against the engine's seeds of `arm` in its result.json."""
    rows = [r for r in engine["per_seed"] if r["arm"] == arm]
    return compare_samples(_sample("engine", rows, rows[0]["budget"]),
                           _sample("peer", peer_rows, budget))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=Path, required=True,
                        help="progress-measures-paper: a checkout or a bare git mirror")
    parser.add_argument("--p", type=int, default=113)
    parser.add_argument("--frac", type=float, default=0.3)
    parser.add_argument("--d", type=int, default=128)
    parser.add_argument("--mlp", type=int, default=512)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--wd", type=float, default=1.0)
    parser.add_argument("--epochs", type=int, default=40_000, help="the budget (full batch)")
    parser.add_argument("--eval-every", type=int, default=100)
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--engine", type=Path, help="an engine result.json to compare with")
    parser.add_argument("--arm", help="its arm")
    args = parser.parse_args()
    torch.set_num_threads(1)
    peer = load_peer(args.code)
    start = time.perf_counter()
    rows = [train_seed(peer, args, s) for s in args.seeds]
    out: dict = {"setting": {k: v for k, v in vars(args).items()
                             if k not in ("code", "engine", "arm")},
                 "seconds": round(time.perf_counter() - start, 1), "seeds": rows}
    if args.engine:
        out["comparison"] = compare(rows, json.loads(args.engine.read_text()), args.arm,
                                    args.epochs)
    print(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
