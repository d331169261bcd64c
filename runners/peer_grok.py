"""Peer check for the Power et al. 2022 claims (arXiv 2201.02177): train openai/grok's own model
with their optimizer, schedule, data format, split, batch size and loss, and compare its steps
to 99% validation accuracy with this engine's.

Their code is read from a checkout or a bare mirror (`--code`) and run as written, built into a
temporary package `grok` (nothing of it is copied here):
- grok/transformer.py, as is: `Transformer(n_layers, n_heads, d_model, dropout,
  max_context_len, vocab_len, non_linearity, weight_noise)`: post-LayerNorm blocks, no biases,
  the FFN d_ff = 4 d_model (its `multiplier`), dropout after the FFN only, fixed sinusoidal
  positions, a causal mask, an untied output layer over the whole vocabulary. Its unused
  `import pytorch_lightning` is met by an empty module.
- grok/data.py, as is, with stand-ins only for what is not installed (`mod`, `blobfile`, `tqdm`:
  never reached for "+"): the vocabulary (<|eos|>, =, the operators, the numbers, the S5
  permutations: 239 tokens at p = 97), the equations `<|eos|> a + b = c <|eos|>`, make_data's
  np.random.RandomState(seed).shuffle (theirs always seed 0; here the run's seed, so seed 0 is
  their split) and the first round(p² train_pct / 100) rows for training, as `splits` does;
  ArithmeticIterator: batch min(512, ceil(n_train / 2)), a fresh torch.randperm every epoch,
  the last short batch kept, text = rows[:, :-1], target = rows[:, 1:]. MODULUS and NUMS are
  set to p (their code fixes 97).
- grok/training.py, extracted with `ast`: CustomAdamW (betas (0.9, 0.98), eps 1e-8, lr 1 scaled
  by LambdaLR, weight_decay_kind to_zero: p *= 1 - lr wd on every parameter before the Adam
  step), and of TrainableTransformer (on torch.nn.Module instead of LightningModule) its
  add_model_specific_args (the defaults: dropout 0.0, relu, max_context_len 50, warmup_steps
  10, no anneal, weight_decay 0, batchsize 0 = auto), train_dataloader, _scheduler_lr (linear
  from 0 over 10 steps to max_lr, then constant), configure_optimizers, _step (loss and
  accuracy on the targets after "=": c and the closing <|eos|>, all right to count) and forward.
The loop is Lightning's: per batch _step, backward, optimizer step, zero_grad, scheduler step;
accuracy every `--eval-every` steps in eval mode on the whole validation and training sets (their
full_train_acc). Prints one JSON object; `--engine RESULT.json --arm ARM` adds the comparison
with the engine, `--baseline PEER.json` the one with another of these runs (this run's steps over
its), and `--rows PEER.json` takes the seeds of an earlier run instead of training
(reports/README.md, Peer checks)."""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import json
import math
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import torch

RUNNERS = str(Path(__file__).resolve().parent)
if RUNNERS not in sys.path:  # runners/ is no package: `python runners/peer_grok.py`
    sys.path.insert(0, RUNNERS)
from peer_nanda import _sample, _source, compare, compare_samples  # noqa: E402

# What their imports need and this environment lacks: names the path taken never uses.
_STAND_INS = {
    "mod": "class Mod:\n    pass\n",
    "blobfile": "import os.path\nimport types\nbf = types.SimpleNamespace(join=os.path.join)\n",
    "tqdm": "def tqdm(iterable, **kwargs):\n    return iterable\n",
    "sympy": "class Permutation:\n    pass\n",
}
_DROPPED = ("pytorch_lightning", "grok.metrics", "grok.measure")  # training.py's, not used here
_METHODS = {"add_model_specific_args", "train_dataloader", "_scheduler_lr",
            "configure_optimizers", "_accuracy", "_step", "forward"}
_SHOWN = ("n_layers", "n_heads", "d_model", "dropout", "non_linearity", "weight_noise",
          "max_context_len", "batchsize", "max_lr", "warmup_steps", "anneal_lr",
          "weight_decay", "weight_decay_kind", "noise_factor", "train_data_pct", "max_steps")


def _imported(node: ast.Import | ast.ImportFrom) -> str:
    """The dotted module an import statement reads."""
    return node.module or "" if isinstance(node, ast.ImportFrom) else node.names[0].name


def _imports(body: list[ast.stmt]) -> list[ast.stmt]:
    """Their top-level imports, less the unused ones, with stand-ins for what is not installed."""
    out: list[ast.stmt] = []
    for node in body:
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        name = _imported(node)
        if any(name == d or name.startswith(d + ".") for d in _DROPPED):
            continue
        root = name.split(".")[0]
        if root != "grok" and importlib.util.find_spec(root) is None:
            if root not in _STAND_INS:
                raise ImportError(f"their code needs {name}, which is not installed")
            out += ast.parse(_STAND_INS[root]).body
        else:
            out.append(node)
    return out


def _training_source(code: Path) -> str:
    """Their training.py reduced to CustomAdamW, add_args and the TrainableTransformer methods
    that train, on torch.nn.Module (no Lightning)."""
    tree = ast.parse(_source(code, "grok/training.py"))
    body = _imports(tree.body)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "DEFAULT_LOG_DIR" for t in node.targets):
            body.append(node)
        elif isinstance(node, ast.ClassDef) and node.name == "TrainableTransformer":
            node.bases = [ast.parse("torch.nn.Module", mode="eval").body]
            node.body = [n for n in node.body
                         if isinstance(n, ast.FunctionDef) and n.name in _METHODS]
            body.append(node)
        elif (isinstance(node, ast.ClassDef) and node.name == "CustomAdamW"
              or isinstance(node, ast.FunctionDef) and node.name == "add_args"):
            body.append(node)
    return ast.unparse(ast.fix_missing_locations(ast.Module(body=body, type_ignores=[])))


def load_peer(code: Path) -> types.SimpleNamespace:
    """Their transformer.py, data.py and the training part of training.py as `grok.*`."""
    root = Path(tempfile.mkdtemp()) / "grok"
    root.mkdir()
    (root / "__init__.py").write_text("")  # theirs imports every module, Lightning's too
    (root / "transformer.py").write_text(_source(code, "grok/transformer.py"))
    data = ast.parse(_source(code, "grok/data.py"))
    data.body = _imports(data.body) + [n for n in data.body
                                       if not isinstance(n, (ast.Import, ast.ImportFrom))]
    (root / "data.py").write_text(ast.unparse(data))
    (root / "training.py").write_text(_training_source(code))
    sys.modules.setdefault("pytorch_lightning", types.ModuleType("pytorch_lightning"))
    sys.path.insert(0, str(root.parent))
    return types.SimpleNamespace(**{m: importlib.import_module(f"grok.{m}")
                                    for m in ("transformer", "data", "training")})


def _commit(code: Path) -> str | None:
    """Their commit, for the record."""
    where = ["-C", str(code)] if (code / "grok").is_dir() else [f"--git-dir={code}"]
    done = subprocess.run(["git", *where, "rev-parse", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or None


def hparams(peer: types.SimpleNamespace, args: argparse.Namespace, seed: int
            ) -> argparse.Namespace:
    """Their defaults (training.py's add_args) with this check's setting over them."""
    hp = peer.training.add_args().parse_args([])
    for key, value in {"n_layers": args.layers, "n_heads": args.heads, "d_model": args.d,
                       "dropout": args.dropout, "max_lr": args.lr, "weight_decay": args.wd,
                       "train_data_pct": 100 * args.frac, "math_operator": "+",
                       "max_steps": args.steps, "random_seed": seed}.items():
        setattr(hp, key, value)
    return hp


def _datasets(peer: types.SimpleNamespace, hp: argparse.Namespace, seed: int) -> tuple:
    """ArithmeticDataset.splits with make_data shuffled by this seed (theirs: always 0)."""
    ds = peer.data.ArithmeticDataset
    eqs = ds.make_data(hp.math_operator, hp.operand_length, shuffle=True, seed=seed)
    n_train, _ = ds.calc_split_len(hp.train_data_pct, len(eqs))
    name = ds.get_dsname(hp.math_operator, hp.operand_length)
    return (ds(name, eqs[:n_train], train=True, data_dir=hp.datadir),
            ds(name, eqs[n_train:], train=False, data_dir=hp.datadir))


def _accuracies(model: torch.nn.Module) -> dict[str, float]:
    """Their _step on the whole validation and training sets in eval mode, as fractions."""
    model.eval()
    out = {}
    with torch.no_grad():
        for name, ds in (("val", model.val_dataset), ("train", model.train_dataset)):
            batch = {"text": ds.data[:, :-1], "target": ds.data[:, 1:]}
            out[name] = float(model._step(batch, 0, train=name == "train")[1]) / 100
    model.train()
    return out


def train_seed(peer: types.SimpleNamespace, args: argparse.Namespace, seed: int) -> dict:
    """One seed their way: the model drawn after torch.manual_seed(seed) as their train() does."""
    hp = hparams(peer, args, seed)
    model = peer.training.TrainableTransformer()
    model.hparams = hp
    model.train_dataset, model.val_dataset = _datasets(peer, hp, seed)
    torch.manual_seed(seed)
    model.transformer = peer.transformer.Transformer(
        hp.n_layers, hp.n_heads, hp.d_model, hp.dropout, hp.max_context_len,
        len(model.train_dataset.tokenizer), hp.non_linearity, weight_noise=hp.weight_noise)
    model.float()
    [optimizer], [schedule] = model.configure_optimizers()
    scheduler = schedule["scheduler"]
    loader = model.train_dataloader()
    start = time.perf_counter()
    train_step = val_step = None
    step, acc, done = 0, {}, False
    while not done:  # epochs: the iterator reshuffles itself after each
        for batch_idx, batch in enumerate(loader):
            if step % args.eval_every == 0:
                acc = _accuracies(model)
                if train_step is None and acc["train"] >= args.threshold:
                    train_step = step
                if val_step is None and acc["val"] >= args.threshold:
                    val_step = step
            if step >= args.steps or args.early_stop and val_step is not None:
                done = True
                break
            loss = model._step(batch, batch_idx)[0]
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            scheduler.step()
            step += 1
    if step % args.eval_every:
        acc = _accuracies(model)  # the budget is off the evaluation grid
    seconds = time.perf_counter() - start
    return {"seed": seed, "train_step": train_step, "val_step": val_step,
            "stopped_step": step, "final_train_acc": acc["train"], "final_val_acc": acc["val"],
            "seconds": round(seconds, 1), "steps_per_s": round(step / seconds, 1),
            "n_train": len(model.train_dataset), "n_test": len(model.val_dataset),
            "batch": model.train_batchsize, "batches_per_epoch": model.batches_per_epoch,
            "vocab": len(model.train_dataset.tokenizer),
            "d_ff": model.transformer.decoder.blocks[0].ffn.ffn[0].out_features,
            "params": sum(p.numel() for p in model.parameters())}


def _train(args: argparse.Namespace) -> dict:
    """Train seeds 0 .. n - 1 their way: the setting, their defaults, timing and per-seed rows."""
    torch.set_num_threads(args.threads)
    peer = load_peer(args.code)
    peer.data.MODULUS, peer.data.NUMS = args.p, list(range(args.p))
    theirs = peer.training.add_args().parse_args([])
    start = time.perf_counter()
    rows = [train_seed(peer, args, s) for s in range(args.seeds)]
    seconds = time.perf_counter() - start
    steps = sum(r["stopped_step"] for r in rows)
    return {"setting": {k: v for k, v in vars(args).items()
                        if k not in ("code", "engine", "arm", "out", "baseline", "rows")},
            "peer": {"code": str(args.code), "commit": _commit(args.code),
                     "their_defaults": {k: getattr(theirs, k) for k in _SHOWN}},
            "seconds": round(seconds, 1),
            "model_steps_per_s": round(steps / seconds, 1) if seconds > 0 else math.nan,
            "seeds": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=Path, default=Path("/work/.mirror/openai+grok/repo"),
                        help="openai/grok: a checkout or a bare git mirror")
    parser.add_argument("--p", type=int, default=97)
    parser.add_argument("--frac", type=float, default=0.5)
    parser.add_argument("--d", type=int, default=64, help="d_model (their FFN: 4 d_model)")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--lr", type=float, default=1e-3, help="max_lr after the warm-up")
    parser.add_argument("--wd", type=float, default=1.0)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--steps", type=int, default=10_000, help="the budget (optimizer steps)")
    parser.add_argument("--eval-every", type=int, default=100)
    parser.add_argument("--threshold", type=float, default=0.99)
    parser.add_argument("--seeds", type=int, default=4, help="seeds 0 .. n - 1")
    parser.add_argument("--early-stop", action=argparse.BooleanOptionalAction, default=True,
                        help="stop a seed once validation reaches the threshold")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--engine", type=Path, help="an engine result.json to compare with")
    parser.add_argument("--arm", help="its arm")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument("--baseline", type=Path,
                        help="an earlier run's JSON (--out) to compare this run with")
    parser.add_argument("--rows", type=Path,
                        help="an earlier run's JSON: its seeds and setting, no training")
    args = parser.parse_args()
    if args.engine and not args.arm:
        parser.error("--engine needs --arm")
    out = json.loads(args.rows.read_text()) if args.rows else _train(args)
    rows, budget = out["seeds"], out["setting"]["steps"]
    if args.engine:
        out["comparison"] = compare(rows, json.loads(args.engine.read_text()), args.arm, budget)
    if args.baseline:
        base = json.loads(args.baseline.read_text())
        out["against_baseline"] = {
            "baseline": str(args.baseline),
            **compare_samples(_sample("baseline", base["seeds"], base["setting"]["steps"]),
                              _sample("this", rows, budget))}
    text = json.dumps(out, indent=1, default=str)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
