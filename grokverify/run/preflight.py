"""What `grokverify run` checks before anything trains, so that a run which cannot finish fails in
seconds rather than after hours of training: the claims fit together (one id each), the scale
exists, each trial fits the memory and compute limits, and the store and the report folders
can be written. `run --dry-run` stops here and says what a run would train.
"""

from __future__ import annotations

from dataclasses import dataclass

from grokverify.atomic import probe_writable
from grokverify.claim.budget import Limits, check, estimate
from grokverify.claim.load import LoadedClaim
from grokverify.claim.yamlio import Path_, Problem, SpecError, dotted
from grokverify.engine.datasets import BadData, MissingData
from grokverify.engine.datasets import load as load_data
from grokverify.run.outcome import RunOptions
from grokverify.run.trials import pending_trials, plan_arms, shards
from grokverify.store import Store


class PathProblem(OSError):
    """A store or reports folder that cannot be written; the CLI reports it and exits 1."""


def claim_problems(claims: list[LoadedClaim], opts: RunOptions, limits: Limits,
                   device: str) -> None:
    """Every problem of the claims as a run at `opts` on `device` would meet it, raised as one
    SpecError (exit 2): two files with one id (they would write one report folder and mix their
    counts), a scale a claim lacks, a trial of `opts.chunk_size` seeds over `limits`."""
    n_shards = shards(device.split(":")[0], opts.cpus_per_task)
    problems: list[Problem] = []
    first: dict[str, LoadedClaim] = {}
    for loaded in claims:
        claim_id = loaded.claim.id
        line = loaded.lines.line_of(("id",))
        if claim_id in first:
            other = first[claim_id].path
            same = " (the same file twice)" if other.resolve() == loaded.path.resolve() else ""
            problems.append(Problem(str(loaded.path), line, "id",
                                    f"claim id {claim_id!r} is also the id of {other}{same}; one "
                                    f"run takes each claim id once (each writes "
                                    f"{opts.reports / claim_id})"))
            continue
        first[claim_id] = loaded
        if opts.scale not in loaded.claim.scales:
            problems.append(Problem(str(loaded.path), loaded.lines.line_of(("scales",)),
                                    dotted(("scales",)),
                                    f"no scale {opts.scale!r} (asked for by --scale); this claim "
                                    f"has: {', '.join(loaded.claim.scales)}"))
            continue
        chunk = min(opts.chunk_size, _most_seeds(loaded, opts))
        problems += check(loaded, limits, chunk_size=chunk, scales=[opts.scale],
                          shards=n_shards)
    if problems:
        raise SpecError(problems)


def data_problems(claims: list[LoadedClaim], scale: str) -> dict[str, str]:
    """Claims whose data files are missing: claim id -> why (the run skips them and says so).
    Files that are there but are not the dataset, or hold fewer images than an arm draws, are
    raised as one SpecError (exit 2) naming the field."""
    skipped: dict[str, str] = {}
    problems: list[Problem] = []
    for loaded in claims:
        short: list[tuple[str, str, str, Path_, str]] = []
        for _, member, arm, exp in loaded.experiments(scales=[scale]):
            name = exp.task.data_name()
            if name is None or loaded.claim.id in skipped:
                continue
            try:
                data = load_data(name)
            except MissingData as exc:
                skipped[loaded.claim.id] = str(exc)
                continue
            except BadData as exc:
                problems.append(Problem(str(loaded.path),
                                        loaded.lines.line_of(("base", "task", "dataset")),
                                        "base.task.dataset", str(exc)))
                break
            for field, n, part in (("n_train", exp.task.n_train, "train"),
                                   ("n_val", exp.task.n_val, "test")):
                if n is not None and n > data.rows(part):
                    short.append((scale, member, arm, ("task", field),
                                  f"{n} images, and the {part} file in {data.folder} holds "
                                  f"{data.rows(part)}"))
        problems += loaded.experiment_problems(short)
    if problems:
        raise SpecError(problems)
    return skipped


def _most_seeds(loaded: LoadedClaim, opts: RunOptions) -> int:
    """The most seeds one arm trains at the run's scale (the last look of sequential rounds)."""
    return opts.seeds if opts.seeds is not None else loaded.max_seeds(opts.scale)


def path_problems(claims: list[LoadedClaim], opts: RunOptions) -> None:
    """The store and every claim's report folder must take files before training starts."""
    Store(opts.store).check_writable()
    for loaded in claims:
        folder = opts.reports / loaded.claim.id
        try:
            probe_writable(folder)
        except OSError as exc:
            raise PathProblem(f"the report folder {folder} cannot be written: "
                              f"{exc.strerror or exc}") from None


@dataclass(frozen=True)
class PlannedClaim:
    """What a run of one claim would do, as `run --dry-run` reports it."""

    claim_id: str
    scale: str
    paper_setting: bool
    arms: int  # (member, arm) pairs
    seeds_per_arm: int
    stored: int
    to_train: int
    trials: int
    trial_bytes: int  # the largest trial's estimated peak memory
    trial_flops: float  # and arithmetic


def plan_run(claims: list[LoadedClaim], opts: RunOptions, device: str) -> list[PlannedClaim]:
    """Each claim's seeds, what the store already holds and the trials left to train (for the
    most seeds the run can need: the last look of sequential rounds), with no training."""
    store = Store(opts.store)
    device_type = device.split(":")[0]
    n_shards = shards(device_type, opts.cpus_per_task)
    out = []
    for loaded in claims:
        n = _most_seeds(loaded, opts)
        plans = plan_arms(loaded, opts.scale, device_type, n)
        trials = pending_trials(loaded.claim.id, plans, store, opts.chunk_size, device_type,
                                opts.cpus_per_task)
        keys = {k for p in plans for k in p.keys}
        estimates = [estimate(t.experiment, len(t.seeds), n_shards) for t in trials]
        out.append(PlannedClaim(
            loaded.claim.id, opts.scale, loaded.claim.scales[opts.scale].paper_setting,
            len(plans), n, len(keys) - sum(len(t.seeds) for t in trials),
            sum(len(t.seeds) for t in trials), len(trials),
            max((e.bytes for e in estimates), default=0),
            max((e.flops for e in estimates), default=0)))
    return out
