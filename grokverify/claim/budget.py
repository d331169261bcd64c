"""Memory and compute of a trial, estimated from the spec alone (no torch), so that a claim that
cannot fit, or would run for an absurd time, is refused before anything trains.

A trial of `n_seeds` seeds is one batched model (a lone seed of a shard beside a ghost copy).
Memory: float32 parameters, gradients and optimizer states (at least 3 copies while the batch is
stacked); each seed's int64 data; a step's and a whole evaluation's activations as the model kind
counts them (`ModelSpec.activations`; a CPU's heap keeps every evaluation block's buffers, and
on a GPU the estimate is an upper bound). Compute: 2 flops a multiply-add, 3 passes a training
step. Measured on a CPU, the memory estimate is 1x-2x the peak (2.7x at p = 1000)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from grokverify.claim.optimizers import STATE_COPIES
from grokverify.claim.yamlio import LineMap, Path_, Problem, dotted

GIB = 1 << 30
FLOAT_BYTES = 4  # the engine's float32
INDEX_BYTES = 8  # int64 operands, labels and row indices
# per pair and seed while the data is built: each split's (a, b, y) and row indices in numpy,
# then the gathered training and validation rows and their indices in torch
DATA_BYTES_PER_PAIR = 8 * INDEX_BYTES
EVAL_ROWS = 1 << 12  # rows per seed an evaluation passes at once (engine.loop evaluates so)
REFILL_EPOCHS = 64  # minibatch order is drawn 64 batches at a time (engine.data.Batches)
# the heap's slack over the activations counted: one trial's peak varies by half from run to
# run on a CPU (123-189 MiB over four runs of one), with how freed blocks happen to be reused
ALLOCATOR_SLACK = 1.25
# the statistics' bootstrap: bytes per resample and seed of its (n_boot, n) working arrays
# (the KM bootstrap's sorted times, events and running sums: 116 measured, for any n_boot and n)
STATS_BYTES_PER_DRAW = 160


@dataclass(frozen=True)
class Limits:
    """What a claim may need. The defaults refuse what no ordinary machine runs (a trial over
    16 GiB or 1e17 flops, about a day of a GPU; a bootstrap over 8 GiB), 20x in memory and 30x in
    compute above any shipped claim's 16-seed paper trial (at most 0.8 GiB and 3.1e15 flops)."""

    max_trial_bytes: int = 16 * GIB
    max_trial_flops: float = 1e17
    max_statistics_bytes: int = 8 * GIB


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class Part:
    """One term of the memory estimate, and the experiment field that sets it."""

    what: str
    bytes: int
    field: tuple[str, ...]


@dataclass(frozen=True)
class Estimate:
    """A trial's peak memory (bytes, the sum of `parts`) and arithmetic (flops)."""

    bytes: int
    flops: int
    step_flops: int  # of one training step of every seed
    parts: tuple[Part, ...]

    def largest(self) -> Part:
        return max(self.parts, key=lambda part: part.bytes)


class _Experiment(Protocol):
    task: Any
    model: Any
    optimizer: Any
    training: Any
    probes: Sequence[Any]


def batched_seeds(n_seeds: int, shards: int = 1) -> int:
    """Seeds the trial's models hold: `n_seeds` split over `shards` (as numpy.array_split), a
    shard of one seed with its ghost."""
    shards = max(1, min(shards, n_seeds))
    small, extra = divmod(n_seeds, shards)
    sizes = [small + 1] * extra + [small] * (shards - extra)
    return sum(max(2, size) for size in sizes)


def estimate(exp: _Experiment, n_seeds: int, shards: int = 1) -> Estimate:
    """Peak memory and arithmetic of one trial of `n_seeds` seeds of `exp` (see the module
    docstring), trained as `shards` batched models side by side (1 on a GPU; one per CPU
    thread)."""
    s = batched_seeds(n_seeds, shards)
    task, tr, model = exp.task, exp.training, exp.model
    n, n_train, n_val = task.sizes()
    n_classes = task.classes()
    width = task.input_size()
    size = model.size(width, n_classes)
    batch = min(tr.batch_size or n_train, n_train)
    copies = max(3, 2 + STATE_COPIES[exp.optimizer.name] + (1 if exp.probes else 0))
    order = 2 * INDEX_BYTES * max(REFILL_EPOCHS * batch, n_train) if batch < n_train else 0
    step = model.activations(width, n_classes, batch, backward=True)
    # an evaluation passes EVAL_ROWS rows at a time, keeping each row's loss and correctness
    rows = max(n_train, n_val)
    evaluation = model.activations(width, n_classes, min(rows, EVAL_ROWS), backward=False) \
        + 2 * rows
    # the field that sets the larger of the two: the batch size, or the split's size (p)
    act_field = ("training", "batch_size") if step >= evaluation and batch < n_train else \
        ("task", task.size_field)
    parts = (
        Part("parameters, gradients and optimizer state",
             s * size.params * FLOAT_BYTES * copies, ("model", size.widest)),
        Part("data", s * (n * DATA_BYTES_PER_PAIR + order) + task.table_bytes(s),
             ("task", task.size_field)),
        Part("activations", int(s * (step + evaluation) * FLOAT_BYTES * ALLOCATOR_SLACK),
             act_field),
    )
    step_flops = s * 6 * batch * size.macs
    evals = tr.steps // tr.eval_interval + 2
    flops = tr.steps * step_flops + s * evals * 2 * (n_train + n_val) * size.macs
    return Estimate(sum(p.bytes for p in parts), flops, step_flops, parts)


# GPU packing (`--gpus-per-task auto`, docs/cluster.md): these small models use a sliver of a
# GPU, so each Ray task asks for the share of one GPU its chunk's memory needs.
GPU_PACK = 8  # at most this many chunks on one GPU: each is a process with its own CUDA
# context and its own host thread launching kernels; more would queue for the GPU's time
CUDA_CONTEXT_BYTES = GIB // 2  # a process's CUDA context and the caching allocator's slack
DEFAULT_GPU_MEMORY = 16 * GIB  # the smallest data-centre GPU in common use (T4, V100-16GB), so
# that the default never overfills a GPU; --gpu-memory names the cluster's


def gpu_share(exp: _Experiment, n_seeds: int, gpu_memory: int = DEFAULT_GPU_MEMORY) -> float:
    """The share of one GPU a chunk of `n_seeds` seeds asks Ray for: its estimated memory plus
    a CUDA context over the GPU's, rounded up to eighths, at least 1/GPU_PACK (docs/cluster.md,
    "GPU packing"). Above 1 the chunk does not fit one GPU (the executor refuses it)."""
    need = estimate(exp, n_seeds).bytes + CUDA_CONTEXT_BYTES
    eighths = -(-need * GPU_PACK // gpu_memory)  # ceil without floats
    return max(1, eighths) / GPU_PACK


# CPU time, for what a user is told a run costs (the paper-scale warning, a report's CPU
# hours): estimate's flops at the model kind's `cpu_flop_rate` a thread, plus what every
# parameter costs a step apart from the matmuls (the optimizer, gradients), fitted by
# benchmarks/cpu_rates.py on a 2-core AMD EPYC (paper 1's MLP at p = 97, batch 64-512).
CPU_THREADS = 2
CPU_PARAM_STEP_S = 7e-9
CPU_WARN_S = 3600.0  # more than an hour of a 2-core CPU is GPU work


def scale_flops(loaded: _Loaded, scale: str) -> float:
    """The arithmetic of every trial of one scale, at its seed count (`estimate`)."""
    n = loaded.max_seeds(scale)
    return float(sum(estimate(exp, n).flops for _, _, _, exp in loaded.experiments([scale])))


def cpu_seconds(exp: _Experiment, n_seeds: int) -> float:
    """About how long `n_seeds` seeds of `exp` train on a 2-core CPU to their full budget
    (early stopping only shortens it); within ~1.5x of benchmarks/cpu_rates.py's measurements."""
    size = exp.model.size(exp.task.input_size(), exp.task.classes())
    held = batched_seeds(n_seeds, CPU_THREADS)
    return (estimate(exp, n_seeds, CPU_THREADS).flops / (exp.model.cpu_flop_rate * CPU_THREADS)
            + exp.training.steps * held * size.params * CPU_PARAM_STEP_S)


def scale_cpu_seconds(loaded: _Loaded, scale: str, seeds: int | None = None) -> float:
    """`cpu_seconds` of every arm of one scale at `seeds` per arm (default: its most)."""
    n = seeds or loaded.max_seeds(scale)
    return sum(cpu_seconds(exp, n) for _, _, _, exp in loaded.experiments([scale]))


def scale_costs(loaded: _Loaded) -> dict[str, dict[str, Any]]:
    """Each scale of a claim: the paper's setting or not, seeds per arm, arithmetic and about
    how many hours of a 2-core CPU that is (what a report says the paper scale would cost)."""
    out = {}
    for name, scale in loaded.claim.scales.items():
        flops = scale_flops(loaded, name)
        out[name] = {"paper_setting": bool(scale.paper_setting),
                     "seeds_per_arm": loaded.max_seeds(name), "flops": flops,
                     "cpu_hours": scale_cpu_seconds(loaded, name) / 3600}
    return out


def statistics_bytes(n_boot: int, n_seeds: int) -> int:
    """Working memory of a bootstrap of `n_boot` resamples of `n_seeds` seeds per arm."""
    return n_boot * n_seeds * STATS_BYTES_PER_DRAW


# ---------------------------------------------------------------- claims


class _Loaded(Protocol):
    """What `check` needs of a loaded claim (`grokverify.claim.load.LoadedClaim`)."""

    path: Path
    lines: LineMap
    claim: Any

    def experiments(self, scales: Iterable[str] | None = None) -> Iterator[Any]: ...

    def experiment_problems(self, found: Iterable[tuple[str, str, str, Path_, str]]
                            ) -> list[Problem]: ...

    def max_seeds(self, scale: str) -> int: ...


def check(loaded: _Loaded, limits: Limits = DEFAULT_LIMITS, chunk_size: int = 1,
          scales: Iterable[str] | None = None, shards: int = 1) -> list[Problem]:
    """Every trial of `chunk_size` seeds (`shards` batched models) at `scales` (default: all)
    over `limits`, as problems at the claim field that sets its largest part; and a bootstrap
    over `limits.max_statistics_bytes` at the most seeds those scales run."""
    experiments = list(loaded.experiments(scales))
    problems = loaded.experiment_problems(
        (scale, member, arm, field, message) for scale, member, arm, exp in experiments
        for field, message in _trial_problems(exp, chunk_size, shards, limits))
    return problems + _statistics_problems(loaded, limits, {at[0] for at in experiments})


def _trial_problems(exp: _Experiment, n_seeds: int, shards: int,
                    limits: Limits) -> list[tuple[tuple[str, ...], str]]:
    est = estimate(exp, n_seeds, shards)
    trial = f"one trial of {n_seeds} seed{'s' if n_seeds > 1 else ''}"
    out = []
    if est.bytes > limits.max_trial_bytes:
        parts = "; ".join(f"{p.what} {_gib(p.bytes)}" for p in est.parts)
        out.append((est.largest().field,
                    f"{trial} needs about {_gib(est.bytes)} of memory, over the limit of "
                    f"{_gib(limits.max_trial_bytes)} ({parts})"
                    f"{_fits(exp, n_seeds, shards, limits)}"))
    if est.flops > limits.max_trial_flops:
        out.append((("training", "steps"),
                    f"{trial} needs about {est.flops:.3g} floating-point operations "
                    f"({exp.training.steps} steps of {est.step_flops:.3g}, and the evaluations), "
                    f"over the limit of {limits.max_trial_flops:.3g}"
                    f"{_fits(exp, n_seeds, shards, limits)}"))
    return out


def _fits(exp: _Experiment, n_seeds: int, shards: int, limits: Limits) -> str:
    """How many seeds a trial can take within the limits, when fewer than asked do."""
    def ok(k: int) -> bool:
        est = estimate(exp, k, shards)
        return est.bytes <= limits.max_trial_bytes and est.flops <= limits.max_trial_flops
    fit = max((k for k in range(1, n_seeds) if ok(k)), default=0)
    if fit:
        return f"; {fit} seed{'s' if fit > 1 else ''} per trial would fit (chunk size)"
    return "; make the experiment smaller" if n_seeds == 1 else "; not even one seed fits"


def _statistics_problems(loaded: _Loaded, limits: Limits, scales: set[str]) -> list[Problem]:
    n_boot = getattr(loaded.claim.criterion, "n_boot", None)
    if n_boot is None or not scales:
        return []
    seeds = max(loaded.max_seeds(scale) for scale in scales)
    need = statistics_bytes(n_boot, seeds)
    if need <= limits.max_statistics_bytes:
        return []
    where = ("criterion", "n_boot")
    return [Problem(str(loaded.path), loaded.lines.line_of(where), dotted(where),
                    f"a bootstrap of {n_boot} resamples of {seeds} seeds needs about "
                    f"{_gib(need)} of memory, over the limit of "
                    f"{_gib(limits.max_statistics_bytes)}; use fewer resamples")]


def _gib(n: float) -> str:
    """A byte count in words: 32.2 GiB, 15.2 KiB."""
    for unit, name in ((GIB, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= unit:
            return f"{n / unit:.3g} {name}"
    return f"{int(n)} bytes"
