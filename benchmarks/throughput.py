"""Training throughput: peer-style per-seed training vs grokverify's engine vs the matmul roof.

    python benchmarks/throughput.py            # ~10 minutes on 2 cores (longer on a loaded machine)
    python benchmarks/throughput.py --quick    # smoke run, about 1.5 minutes

For paper 2's toy (K = 64 seeds) and paper 1's MLP at p = 97 (K = 8 seeds), side by side in one
run, repeats interleaved, medians reported:

(a) plain: the way peer code trains: one plain model and torch's default optimizer per seed,
    seeds one after another (tests/reference.py's PlainTrainer: same split, initial weights and
    minibatch order as the engine). Measured with 1 and with 2 torch threads; the faster is the
    baseline (the peer's best case).
(b) engine: grokverify.engine.loop.SeedTrainer (what `train_seeds` runs) with the K seeds and 2
    torch threads, i.e. two single-threaded shards of K/2 seeds each.
(b') engine, derived form only: the same with the model kind's fast path off (the plain module
    under torch.func.vmap), so `<kind>_fast_gain` = (b)/(b') says whether the fast path earns
    its place (>= 1.15: docs/extending.md).
(c) roof: only the forward + backward matmuls of a step as a plain implementation computes them
    (bmm over the K seeds, the same shapes, the first layer's input gradient included), two
    threads, the faster of one 2-thread bmm and two 1-thread workers on K/2 seeds each.
    `toy_roof_share` and `p97_roof_fraction` are (b)'s share of it in model-steps/s.
(c') for p = 97 also the roof of the matmuls the engine runs: its first layer is exact but
    cheaper (table lookups, ~1/4 of (c)'s multiply-adds), so (b) can beat (c); (b)'s share of
    (c') is printed as a diagnostic (`p97_own_matmul_fraction`).
(d) attainable (toy): the kernels a toy step cannot do without while records stay bit-identical
    (the pinned numerics), timed alone for one shard on one thread: its matmuls as the roof runs
    them, the optimizer's kernels (torch's fused AdamW, through torch.optim's functional `adam`)
    and tanh with its backward (ATen's AVX2 kernels). matmuls / their sum bounds (b)'s share of
    (c) (`toy_attainable_share`: a step with every other op and all Python free), and that bound
    x (c) / (a) bounds the speedup (`toy_speedup_bound`): where it is below a target, no engine
    with these numerics meets it.

Also measured, same run: the share of evaluation at the claims' quick scales (1 thread, as in a
Ray worker), and the probes' cost on claims/p1_hessian_gap_narrows.yaml's quick adam arm, each
over the same arm without probes, interleaved: every cheap probe (sigma_max, grad_norm_ratio,
rank, fourier_share, update_norm, token_frequency) every 100 steps (`probe_overhead`), each of
them alone (`probe_overhead.<name>`), the claim's block-Hessian probe at its declared interval
and iterations (`hessian_probe_overhead`), and a probe declared but never due after step 0
(`probes_idle_overhead`: the probe machinery when no probe runs).

All in the pinned numerics every training process uses (grokverify.engine.numerics: ATen and MKL
on their AVX2 kernels), the peer's runs included. Timed: training steps only. Figures are
model-steps/s = seeds x steps / s. The last line is `toy_speedup=... p97_speedup=...
toy_roof_share=... probe_overhead=...`; `hessian_probe_overhead=`, `toy_attainable_share=`
and `toy_speedup_bound=` are on the line before.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import torch  # noqa: E402
from reference import PlainTrainer  # noqa: E402
from torch.optim.adam import adam  # noqa: E402

from grokverify.engine.numerics import pin_environment  # noqa: E402

pin_environment()  # before torch computes anything
from grokverify.claim.experiment import ExperimentSpec  # noqa: E402
from grokverify.claim.limits import MAX_STEPS  # noqa: E402
from grokverify.claim.load import load_claim  # noqa: E402
from grokverify.claim.probes import (  # noqa: E402
    FourierShareSpec,
    GradNormRatioSpec,
    RankSpec,
    SigmaMaxSpec,
    TokenFrequencySpec,
    UpdateNormSpec,
)
from grokverify.engine.loop import SeedTrainer  # noqa: E402
from grokverify.engine.optimizers import uses_fused  # noqa: E402
from grokverify.run.preflight import data_problems  # noqa: E402


@dataclass
class Workload:
    name: str
    exp: ExperimentSpec
    seeds: int  # K: seeds batched in (b) and in the roof
    plain_seeds: int  # seeds trained one after another in (a); the rate does not depend on it
    steps: int  # timed steps per repeat (after warm-up)
    matmuls: list[tuple[int, int, int]]  # (M, K, N) per seed: the matmuls of one plain step
    engine_matmuls: list[tuple[int, int, int]] | None = None  # the engine's, where they differ
    tanh_layers: list[tuple[int, int]] = field(default_factory=list)  # (rows, width) a seed


def _spec(task: dict, model: dict, optimizer: dict, batch: int | None) -> ExperimentSpec:
    return ExperimentSpec.model_validate({
        "task": task, "model": model, "optimizer": optimizer,
        "training": {"steps": 100_000, "eval_interval": 100_000, "batch_size": batch,
                     "early_stop": False}})


def _mlp_matmuls(b: int, layers: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """Forward, grad-input and grad-weight matmuls of a stack of linear layers (the first
    layer's grad-input too: the embeddings need it)."""
    out = []
    for n_in, n_out in layers:
        out += [(b, n_in, n_out), (b, n_out, n_in), (n_in, b, n_out)]
    return out


def _table_matmuls(p: int, d: int, h: int) -> list[tuple[int, int, int]]:
    """The matmuls of the MLP's first layer as the engine's fast path computes it for a batch
    of at least p rows (grokverify.engine.fast): per operand its (p, H) table and the table
    gradient's weight and embedding products; for the constant op and "=" tokens the bias
    vector and its embedding gradient (their weight gradient is an outer product)."""
    return 2 * [(p, d, h), (d, p, h), (p, h, d)] + 2 * [(1, d, h), (1, h, d)]


def workloads(quick: bool) -> list[Workload]:
    toy = _spec({"op": "add", "p": 10, "modular": False, "unordered": True, "train_frac": 0.6},
                {"kind": "toy_sum", "emb_dim": 1, "hidden": 200},
                {"name": "adamw", "lr": 1e-3, "weight_decay": 1.0}, None)
    p97 = _spec({"op": "add", "p": 97, "train_frac": 0.3, "test_frac": 0.2},
                {"kind": "embed_mlp", "d": 128, "hidden": 512},
                {"name": "adamw", "lr": 1e-3, "weight_decay": 1.0}, 512)
    n_toy = 33  # round(0.6 * 55) training pairs, full batch
    return [
        Workload("toy", toy, 64, 1 if quick else 4, 40 if quick else 300,
                 _mlp_matmuls(n_toy, [(1, 200), (200, 200), (200, 19)]),
                 tanh_layers=[(n_toy, 200), (n_toy, 200)]),
        Workload("p97", p97, 8, 1 if quick else 2, 4 if quick else 30,
                 _mlp_matmuls(512, [(512, 512), (512, 97)]),
                 _table_matmuls(97, 128, 512) + _mlp_matmuls(512, [(512, 97)])),
    ]


def _timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _train_capped(train: Callable[[int], None], steps: int, cap_s: float) -> tuple[int, float]:
    """Train `steps` steps in blocks, stopping early past cap_s seconds (a setting that
    collapses under load would otherwise take minutes); (steps done, seconds)."""
    block, done, start = max(1, steps // 10), 0, time.perf_counter()
    while done < steps and (done == 0 or time.perf_counter() - start < cap_s):
        n = min(block, steps - done)
        train(n)
        done += n
    return done, time.perf_counter() - start


def plain_rate(w: Workload, threads: int, cap_s: float) -> float:
    torch.set_num_threads(threads)
    steps, total = 0, 0.0
    for seed in range(w.plain_seeds):
        trainer = PlainTrainer(w.exp, seed)
        trainer.train(3)  # warm-up: optimizer state, first-call allocations
        n, dt = _train_capped(trainer.train, w.steps, cap_s / w.plain_seeds)
        steps, total = steps + n, total + dt
    return steps / total


def engine_rate(exp: ExperimentSpec, seeds: int, steps: int, cap_s: float, threads: int,
                fast: bool = True) -> tuple[float, bool]:
    torch.set_num_threads(threads)
    with SeedTrainer(exp, list(range(seeds)), fast=fast) as trainer:
        trainer.train(3)
        done, dt = _train_capped(trainer.train, steps, cap_s)
        fused = all(uses_fused(shard.optimizer) for shard in trainer.shards)
    return seeds * done / dt, fused


Operands = list[tuple[torch.Tensor, torch.Tensor]]


def _operands(matmuls: list[tuple[int, int, int]], k: int) -> Operands:
    """Random (k, M, K) and (k, K, N) inputs of each matmul, batched over k seeds."""
    return [(torch.randn(k, m, n_in), torch.randn(k, n_in, n)) for m, n_in, n in matmuls]


def _run_matmuls(ops: Operands, reps: int = 1) -> None:
    for _ in range(reps):
        for x, y in ops:
            torch.bmm(x, y)


def roof_rate(w: Workload, threads: int, matmuls: list[tuple[int, int, int]] | None = None,
              ) -> tuple[float, float]:
    """(model-steps/s, GFLOP/s) of the step's matmuls alone: the faster of one process with
    `threads` torch threads and `threads` single-threaded workers on a share of the seeds each."""
    matmuls = matmuls or w.matmuls
    flop = 2 * w.seeds * sum(m * k * n for m, k, n in matmuls)
    reps = max(3, w.steps // 4)
    torch.set_num_threads(threads)
    ops = _operands(matmuls, w.seeds)
    _run_matmuls(ops, 2)
    best = _timed(lambda: _run_matmuls(ops, reps)) / reps
    torch.set_num_threads(1)
    parts = [_operands(matmuls, len(s)) for s in torch.arange(w.seeds).tensor_split(threads)
             if len(s)]
    with ThreadPoolExecutor(len(parts), initializer=torch.set_num_threads,
                            initargs=(1,)) as pool:
        list(pool.map(lambda o: _run_matmuls(o, 2), parts))
        shared = _timed(lambda: list(pool.map(lambda o: _run_matmuls(o, reps), parts)))
        best = min(best, shared / reps)
    return w.seeds / best, flop / best / 1e9


def attainable_parts(w: Workload, threads: int) -> dict[str, float]:
    """Seconds a step of one shard (K/threads seeds, one thread, as (b) runs it) spends in the
    kernels any implementation with these numerics runs: the matmuls as the roof runs them,
    the engine's optimizer's kernels (torch's fused AdamW, bound by its divisions and square
    roots) and tanh with its backward (ATen's pinned AVX2 kernels); and, for comparison, the
    optimizer's `step()` as the engine calls it. matmuls + optimizer + tanh is a step with
    every other op, and all Python, free: the matmuls' share of it bounds (b)'s share of (c)."""
    k = -(-w.seeds // threads)
    torch.set_num_threads(1)
    reps = max(3, w.steps // 4)
    mm = _operands(w.matmuls, k)
    acts = [(torch.randn(k, rows, width), torch.empty(k, rows, width), torch.randn(k, rows, width))
            for rows, width in w.tanh_layers]

    def tanh() -> None:
        for x, out, g in acts:
            torch.tanh(x, out=out)
            torch.ops.aten.tanh_backward(g, out)

    with SeedTrainer(w.exp, list(range(k)), workers=1) as trainer:
        trainer.train(3)  # gradients and optimizer state exist
        optimizer = trainer.shards[0].optimizer
        parts = {"matmuls": partial(_run_matmuls, mm), "optimizer": _adam_kernels(optimizer),
                 "tanh": tanh, "step()": optimizer.step}
        for fn in parts.values():
            fn()
        return {name: _timed(lambda f=fn: [f() for _ in range(reps)]) / reps
                for name, fn in parts.items()}


def _adam_kernels(optimizer: torch.optim.Optimizer) -> Callable[[], None]:
    """`optimizer.step()`'s kernels without torch.optim's Python around them: torch's functional
    `adam` over each group's lists, made once (Adam and AdamW; the toy trains with AdamW)."""
    if not isinstance(optimizer, torch.optim.Adam):
        raise TypeError(f"the bound times Adam and AdamW only, not {type(optimizer).__name__}")
    calls: list[Callable[[], None]] = []
    for g in optimizer.param_groups:
        params = [p for p in g["params"] if p.grad is not None]
        state = [optimizer.state[p] for p in params]
        calls.append(partial(
            adam, params, [p.grad for p in params], [s["exp_avg"] for s in state],
            [s["exp_avg_sq"] for s in state], [], [s["step"] for s in state], fused=g["fused"],
            foreach=g["foreach"], decoupled_weight_decay=g["decoupled_weight_decay"],
            amsgrad=False, beta1=g["betas"][0], beta2=g["betas"][1], lr=g["lr"],
            weight_decay=g["weight_decay"], eps=g["eps"], maximize=False))

    def step() -> None:
        for call in calls:
            call()

    return step


def quick_arms(quick: bool) -> list[tuple[str, ExperimentSpec, int]]:
    """(label, experiment, seeds) of every distinct training shape among the claims' quick-scale
    arms (family members that differ only in the operation share one entry). A claim whose
    data files are missing (MNIST without GROKVERIFY_DATA_DIR) is left out, and said so."""
    out, seen = [], set()
    paths = sorted((REPO / "claims").glob("*.yaml"))
    claims = [load_claim(path) for path in (paths[:1] if quick else paths)]
    skipped = data_problems(claims, "quick")
    for claim_id, why in skipped.items():
        print(f"  (left out: {claim_id}: {why.split(':')[0]})")
    for loaded in (c for c in claims if c.claim.id not in skipped):
        n = loaded.scale_seeds("quick")
        n = n if isinstance(n, int) else 12
        for member, arms in loaded.members("quick").items():
            for arm, exp in arms.items():
                shape = exp.model_dump_json(exclude={"task": {"op"}})
                if shape not in seen:
                    seen.add(shape)
                    label = "/".join(x for x in (loaded.claim.id, member, arm) if x)
                    out.append((label, exp, n))
    return out[:1] if quick else out


def eval_share(quick: bool, repeats: int) -> float:
    """Evaluation time / training time between two evaluations, for the claims' quick-scale
    arms (1 thread, as in a Ray worker); the largest is returned. Zero-step arms (a property
    at initialisation: nothing is trained, the one evaluation is the whole run) are left out."""
    torch.set_num_threads(1)
    worst = 0.0
    for label, exp, n in quick_arms(quick):
        tr = exp.training
        if tr.steps == 0:
            continue
        with SeedTrainer(exp, list(range(n))) as trainer:
            trainer.train(3)
            trainer.record()
            train_s, eval_s = [], []
            for _ in range(repeats):
                train_s.append(_timed(lambda t=trainer, k=tr.eval_interval: t.train(k)))
                eval_s.append(_timed(trainer.record))
        share = statistics.median(eval_s) / statistics.median(train_s)
        worst = max(worst, share)
        print(f"  {label}: {n} seeds, batch {tr.batch_size}, eval every {tr.eval_interval} "
              f"steps: train {statistics.median(train_s) * 1e3:.0f} ms, eval "
              f"{statistics.median(eval_s) * 1e3:.1f} ms, eval share {share:.1%}")
    return worst


def probe_overheads(quick: bool, repeats: int, threads: int) -> dict[str, float]:
    """Training time with probes over training time without, interleaved, on claims/
    p1_hessian_gap_narrows.yaml's quick-scale adam arm (paper 1's MLP: p = 31, d = 64, hidden
    256, batch 128, 8 seeds): `hessian_probe_overhead` with the claim's own hessian_max probe
    (its interval and iterations), `probe_overhead` with every cheap probe (sigma_max,
    grad_norm_ratio, rank, fourier_share, update_norm, token_frequency) every 100 steps, and
    `probes_idle_overhead` with a probe declared but never due after step 0; and each cheap
    probe alone every 100 steps (`probe_overhead.<name>`: what each costs)."""
    loaded = load_claim(REPO / "claims" / "p1_hessian_gap_narrows.yaml")
    exp = loaded.resolved["quick"]["adam"]
    n = int(loaded.scale_seeds("quick"))  # type: ignore[arg-type]
    cheap = [SigmaMaxSpec(name="sigma_max", every=100),
             GradNormRatioSpec(name="grad_norm_ratio", every=100),
             RankSpec(name="rank", every=100), FourierShareSpec(name="fourier_share", every=100,
                                                                k=5),
             UpdateNormSpec(name="update_norm", every=100),
             TokenFrequencySpec(name="token_frequency", every=100)]
    variants = {
        "none": exp.model_copy(update={"probes": []}),
        "cheap/100": exp.model_copy(update={"probes": cheap}),
        "hessian": exp,
        "idle": exp.model_copy(
            update={"probes": [SigmaMaxSpec(name="sigma_max", every=MAX_STEPS)]}),
        **{f"{c.name}/100": exp.model_copy(update={"probes": [c]}) for c in cheap},
    }
    (h,) = exp.probes
    steps = 500 if quick else 1000  # a multiple of both intervals: every repeat holds the same
    rates: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(repeats):
        for name, e in variants.items():
            rates[name].append(engine_rate(e, n, steps, 1e9, threads)[0])
    med = {k: statistics.median(v) for k, v in rates.items()}
    print(f"probes on {loaded.claim.id}/quick/adam ({n} seeds, {steps} steps a repeat; "
          f"hessian_max every {h.every} steps, {h.iterations} iterations, "  # type: ignore[attr-defined]
          f"all training rows): " + ", ".join(f"{k} {v:.0f} model-steps/s" for k, v in med.items()))
    return {"probe_overhead": med["none"] / med["cheap/100"] - 1,
            "hessian_probe_overhead": med["none"] / med["hessian"] - 1,
            "probes_idle_overhead": med["none"] / med["idle"] - 1,
            **{f"probe_overhead.{c.name}": med["none"] / med[f"{c.name}/100"] - 1
               for c in cheap}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats (>= 3)")
    parser.add_argument("--threads", type=int, default=2,
                        help="threads for (b), the roof and the peer's multi-thread run")
    parser.add_argument("--workloads", default="toy,p97",
                        help="which workloads (toy, p97); the evaluation and probe figures and "
                             "the last line need both")
    args = parser.parse_args(argv)
    repeats = max(3, args.repeats)
    threads0 = torch.get_num_threads()
    from grokverify.engine import numerics

    numerics.pin()
    print(f"torch {torch.__version__}, {threads0} threads available, {repeats} repeats"
          f"{' (quick)' if args.quick else ''}; kernels {numerics.describe()}")
    summary: dict[str, float] = {}
    cap_s = 1.0 if args.quick else 6.0  # per measurement
    chosen = args.workloads.split(",")
    for w in [w for w in workloads(args.quick) if w.name in chosen]:
        rates: dict[str, list[float]] = defaultdict(list)
        fused = True
        for _ in range(repeats):  # interleaved, so drifting machine load hits every variant
            rates["a1"].append(plain_rate(w, 1, cap_s))
            rates["a2"].append(plain_rate(w, args.threads, cap_s))
            rate, fused_now = engine_rate(w.exp, w.seeds, w.steps, cap_s, args.threads)
            rates["b"].append(rate)
            fused &= fused_now
            rates["derived"].append(engine_rate(w.exp, w.seeds, w.steps, cap_s, args.threads,
                                                fast=False)[0])
            roof, gflops = roof_rate(w, args.threads)
            rates["roof"].append(roof)
            rates["gflops"].append(gflops)
            rates["own"].append(roof_rate(w, args.threads, w.engine_matmuls)[0]
                                if w.engine_matmuls else roof)
            if w.tanh_layers:
                parts = attainable_parts(w, args.threads)
                rates["attainable"].append(parts["matmuls"] / (
                    parts["matmuls"] + parts["optimizer"] + parts["tanh"]))
                for name, t in parts.items():
                    rates[f"ms.{name}"].append(t * 1e3)
        med = {k: statistics.median(v) for k, v in rates.items()}
        plain = max(med["a1"], med["a2"])
        speedup, share, own = med["b"] / plain, med["b"] / med["roof"], med["b"] / med["own"]
        gain = med["b"] / med["derived"]
        print(f"{w.name}: K = {w.seeds}, {w.steps} steps a repeat, fused optimizer: {fused}")
        print(f"  (a) plain per seed: {med['a1']:.0f} model-steps/s (1 thread), "
              f"{med['a2']:.0f} ({args.threads} threads)   runs: "
              + " / ".join(f"{x:.0f}" for x in rates["a1"] + rates["a2"]))
        print(f"  (b) engine, {w.seeds} seeds: {med['b']:.0f} model-steps/s   runs: "
              + " / ".join(f"{x:.0f}" for x in rates["b"]))
        print(f"  (b') engine, derived form only (vmap): {med['derived']:.0f} model-steps/s   "
              f"runs: " + " / ".join(f"{x:.0f}" for x in rates["derived"]))
        print(f"  (c) matmul roof: {med['roof']:.0f} model-steps/s ({med['gflops']:.0f} GFLOP/s)"
              f"   runs: " + " / ".join(f"{x:.0f}" for x in rates["roof"]))
        if w.engine_matmuls:
            print(f"  (c') roof of the engine's own matmuls (first layer as tables): "
                  f"{med['own']:.0f} model-steps/s   runs: "
                  + " / ".join(f"{x:.0f}" for x in rates["own"]))
        if w.tanh_layers:
            bound = med["attainable"]
            print(f"  (d) attainable: a step of {-(-w.seeds // args.threads)} seeds on one thread "
                  f"with only its matmuls at the roof's speed ({med['ms.matmuls']:.2f} ms), the "
                  f"optimizer's kernels ({med['ms.optimizer']:.2f} ms; its step() with "
                  f"torch.optim's Python: {med['ms.step()']:.2f} ms) and tanh forward + backward "
                  f"({med['ms.tanh']:.2f} ms), everything else free: (b) can reach at most "
                  f"{bound:.2f} of (c); it reaches {share / bound:.2f} of that; an engine at "
                  f"that bound would be {bound * med['roof'] / plain:.2f}x (a)   runs: "
                  + " / ".join(f"{x:.2f}" for x in rates["attainable"]))
            summary[f"{w.name}_attainable_share"] = bound
            summary[f"{w.name}_speedup_bound"] = bound * med["roof"] / plain
        print(f"  speedup (b)/(a) = {speedup:.2f}, fast path gain (b)/(b') = {gain:.2f}, "
              f"(b)'s share of the roof (c) = {share:.2f}"
              + (f" (of its own matmuls' roof (c'): {own:.2f})" if w.engine_matmuls else ""))
        summary[f"{w.name}_speedup"] = speedup
        summary[f"{w.name}_roof_share"] = share
        summary[f"{w.name}_own_matmul_fraction"] = own
        summary[f"{w.name}_fast_gain"] = gain
    if set(chosen) != {"toy", "p97"}:
        return 0
    print("evaluation share at the claims' quick scales:")
    summary["eval_share"] = eval_share(args.quick, repeats)
    print(f"eval_share={summary['eval_share']:.3f}")
    probes = probe_overheads(args.quick, repeats, args.threads)
    print(" ".join(f"{k}={v:.3f}" for k, v in probes.items() if k.startswith("probe_overhead.")))
    print(f"probes_idle_overhead={probes['probes_idle_overhead']:.3f} "
          f"hessian_probe_overhead={probes['hessian_probe_overhead']:.3f} "
          f"toy_fast_gain={summary['toy_fast_gain']:.2f} "
          f"p97_fast_gain={summary['p97_fast_gain']:.2f} "
          f"p97_roof_fraction={summary['p97_roof_share']:.2f} "
          f"p97_own_matmul_fraction={summary['p97_own_matmul_fraction']:.2f} "
          f"toy_attainable_share={summary['toy_attainable_share']:.2f} "
          f"toy_speedup_bound={summary['toy_speedup_bound']:.2f}")
    torch.set_num_threads(threads0)
    print(f"toy_speedup={summary['toy_speedup']:.2f} p97_speedup={summary['p97_speedup']:.2f} "
          f"toy_roof_share={summary['toy_roof_share']:.2f} "
          f"probe_overhead={probes['probe_overhead']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
