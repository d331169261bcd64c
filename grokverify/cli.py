"""Command line: `grokverify run | pilot | validate | report | diff | schema | plan | store`.

Exit codes: 0 success, 1 a run that could not complete (cluster unreachable, missing
resources, store or reports unwritable), 2 a bad claim or bad arguments, 130 interrupted by
Ctrl-C (SIGINT), 143 stopped by SIGTERM. An interrupted run keeps every finished chunk in the
store and releases its locks; rerunning continues where it stopped.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from grokverify.claim.files import NoClaims, claim_files, is_paper_file
from grokverify.claim.limits import MAX_SEEDS
from grokverify.numbers import format_ci, format_number

if TYPE_CHECKING:
    from grokverify.claim.budget import Limits
    from grokverify.claim.load import LoadedClaim
    from grokverify.run.outcome import ClaimRun, RunOptions
    from grokverify.stats.base import CriterionResult
    from grokverify.store import Store

EXIT_OK, EXIT_RUN_FAILED, EXIT_BAD_INPUT = 0, 1, 2
EXIT_SIGINT, EXIT_SIGTERM = 128 + signal.SIGINT, 128 + signal.SIGTERM
_VERDICT_STYLE = {"SUPPORTED": "bold green", "REFUTED": "bold red", "PARTIAL": "bold yellow",
                  "INCONCLUSIVE": "bold yellow", "FINDING": "bold cyan",
                  "NOT TESTED": "bold magenta"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="grokverify", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="train what is missing, apply the criterion, write reports")
    run.add_argument("claims", nargs="+", type=Path,
                     help="claim YAML files or folders (every *.yaml below a folder, sorted)")
    run.add_argument("--seeds", type=int, default=None, help="override the seed count")
    run.add_argument("--reports", type=Path, default=Path("reports"),
                     help="reports directory (default: reports)")
    _add_training_options(run)
    run.add_argument("--dry-run", action="store_true",
                     help="check the claims, the limits and the paths, say what would be "
                          "trained, and train nothing")

    pilot = sub.add_parser("pilot", help="a few seeds of each arm, at the budget and longer: "
                                         "each arm's regime and what a decidable run needs")
    pilot.add_argument("claims", nargs=1, type=Path, metavar="claim", help="a claim YAML file")
    pilot.add_argument("--seeds", type=int, default=3,
                       help="seeds per arm (default 3); the run reuses them")
    pilot.add_argument("--stretch", type=int, default=4,
                       help="also train them at this many times the budget (default 4; 1: not)")
    _add_training_options(pilot)

    val = sub.add_parser("validate", help="check claim files without running them")
    val.add_argument("claims", nargs="+", type=Path,
                     help="claim YAML files or folders (every *.yaml below a folder, sorted)")
    _add_limit_options(val)

    _add_report_parser(sub)
    diff = sub.add_parser("diff", help="compare two suites: changed verdicts, moved estimates, "
                                       "added and removed claims (exit 1 when a verdict changed)")
    diff.add_argument("old", type=Path, help="a suite's results.json, or a folder holding one "
                                             "(or holding claim folders with result.json)")
    diff.add_argument("new", type=Path, help="the same, for the later suite")

    schema = sub.add_parser("schema", help="print the schema of a claim file")
    schema.add_argument("--format", choices=["json", "markdown"], default="json",
                        help="json (default): JSON Schema; markdown: the field reference "
                             "(docs/claims.md)")

    sub.add_parser("plugins", help="list the installed plugins and the kinds each adds",
                   description="List the installed plugins (entry-point group "
                               "grokverify.plugins): each one's distribution, results version "
                               "(part of its records' store keys) and the kinds it registers, "
                               "or why it cannot be used. Exit 1 when one cannot.")

    plan = sub.add_parser("plan", help="seeds needed for a target power (pilot or effect)")
    plan.add_argument("claim", type=Path)
    plan.add_argument("--scale", default="quick")
    plan.add_argument("--store", type=Path, default=Path(".grokverify/store"))
    plan.add_argument("--device", default="auto")
    _add_data_option(plan)
    plan.add_argument("--effect", type=float, default=None,
                      help="declared true effect (e.g. ratio of medians 0.6) instead of a pilot")
    plan.add_argument("--power", type=float, default=0.8, help="target power (default 0.8)")
    plan.add_argument("--candidates", default="4,8,12,16,20,24,32,48",
                      help="seed counts per arm to evaluate")
    plan.add_argument("--n-sim", type=int, default=200, help="simulated claims per candidate")

    store = sub.add_parser("store", help="inspect the result store")
    store_sub = store.add_subparsers(dest="store_command", required=True)
    verify = store_sub.add_parser("verify", help="re-hash every record; list corrupt/orphaned")
    verify.add_argument("--store", type=Path, default=Path(".grokverify/store"))
    pack = store_sub.add_parser("pack", help="write the store's sound records to a tar.xz")
    pack.add_argument("archive", type=Path)
    pack.add_argument("--store", type=Path, default=Path(".grokverify/store"))
    pack.add_argument("--skip-in", type=Path, nargs="+", action="extend", default=[],
                      metavar="ARCHIVE",
                      help="leave out the records these archives already hold (a later part); "
                      "it takes every path after it, so name the new archive before it")
    unpack = store_sub.add_parser("unpack", help="put the records of tar.xz archives into a "
                                  "store, each checked")
    unpack.add_argument("archives", type=Path, nargs="+", metavar="archive")
    unpack.add_argument("--store", type=Path, default=Path(".grokverify/store"))
    return p


SUITE_FORMATS = ("html", "md", "json")  # report.suite.SUITE_FILES' keys


def _add_training_options(parser: argparse.ArgumentParser) -> None:
    """What `run` and `pilot` share: the scale, the store, where and how seeds train."""
    parser.add_argument("--scale", default="quick", help="scale to run (default: quick)")
    parser.add_argument("--store", type=Path, default=Path(".grokverify/store"),
                        help="result store directory (default: .grokverify/store)")
    parser.add_argument("--executor", choices=["ray", "local"], default="ray",
                        help="ray (default; local Ray started on the fly) or local (in-process)")
    parser.add_argument("--address", default=None,
                        help="existing Ray cluster: host:port, ray://host:port, or auto "
                             "($RAY_ADDRESS, else a `ray start` on this host); without it a local "
                             "Ray is started and RAY_ADDRESS is not used")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda (default: auto)")
    parser.add_argument("--chunk-size", type=int, default=16,
                        help="at most this many seeds per trial (default 16); fewer when fewer "
                             "make a task of 30 s or more that batching would not speed up")
    parser.add_argument("--cpus-per-task", type=int, default=1,
                        help="CPU threads per trial (Ray task, or the local executor's one "
                             "process); each thread trains its own shard of the trial's seeds")
    parser.add_argument("--gpus-per-task", default="auto", metavar="auto|F",
                        help="share of one GPU each trial asks Ray for, 0 < F <= 1; auto "
                             "(default): the chunk's estimated memory plus a CUDA context over "
                             "--gpu-memory, in eighths, at least 1/8, so up to 8 chunks share a "
                             "GPU")
    parser.add_argument("--gpu-memory", type=float, default=None, metavar="GIB",
                        help="memory of one of the cluster's GPUs, for --gpus-per-task auto "
                             "(default 16: no common data-centre GPU has less)")
    _add_data_option(parser)
    _add_limit_options(parser)


def _formats(value: str) -> list[str]:
    """--format's value: html, md, json, or several comma-separated."""
    chosen = [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in chosen if v not in SUITE_FORMATS]
    if bad or not chosen:
        raise argparse.ArgumentTypeError(f"expected html, md or json (comma-separated), got "
                                         f"{value!r}")
    return chosen


def _add_report_parser(sub: Any) -> None:
    rep = sub.add_parser(
        "report", help="rebuild reports and the suite from the store, training nothing",
        description="Rebuild every claim's report (report.md, result.json, figures) and the "
                    "suite (results.json, index.md, index.html) from the records in the store, "
                    "training nothing. A claim whose seeds are not all in the store is named "
                    "with the missing seeds; its report is not written (a report already in its "
                    "folder is left as it was) and the suite leaves it out. Exit 0 when every "
                    "claim was rebuilt, 1 when some could not be.")
    rep.add_argument("claims", nargs="+", type=Path,
                     help="claim YAML files or folders (every *.yaml below a folder, sorted)")
    rep.add_argument("--scale", default="quick", help="scale to rebuild (default: quick)")
    rep.add_argument("--seeds", type=int, default=None, help="the seed count the run used, "
                     "when it was given with --seeds")
    rep.add_argument("--store", type=Path, default=Path(".grokverify/store"),
                     help="result store directory (default: .grokverify/store)")
    rep.add_argument("--reports", type=Path, default=Path("reports"),
                     help="reports directory (default: reports)")
    rep.add_argument("--device", default="auto",
                     help="the device type the records were trained on: cpu or cuda (store "
                          "keys hold it; default auto: cuda where torch sees one, else cpu)")
    rep.add_argument("--format", dest="formats", type=_formats, action="extend",
                     metavar="html|md|json", help="the suite files to write: html (index.html), "
                     "md (index.md), json (results.json); repeat or comma-separate (default: "
                     "all three)")
    rep.add_argument("--beside", type=Path, default=None, metavar="SUITE",
                     help="another scale's suite (its results.json or folder, e.g. "
                          "reports/reference/paper): index.html and index.md show each claim's "
                          "verdict there beside this one, and both on its forest strip")
    _add_data_option(rep)
    _add_limit_options(rep)


def _add_data_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, default=None, metavar="DIR",
                        help="the folder holding datasets' files (MNIST's four IDX files, in "
                             "DIR or DIR/mnist); default: the GROKVERIFY_DATA_DIR environment "
                             "variable. A claim whose files are not found is skipped")


def _use_data_dir(args: argparse.Namespace) -> None:
    """--data-dir, as the environment variable every worker this run starts inherits."""
    from grokverify.engine.datasets import ENV_VAR

    if args.data_dir is not None:
        os.environ[ENV_VAR] = str(args.data_dir.expanduser().resolve())


def _with_their_data(claims: list[LoadedClaim], scale: str, console: Console,
                     then: str = "") -> list[LoadedClaim]:
    """The claims whose data files are there; each other one is said SKIPPED, with where its
    files were looked for (files that are there but wrong raise SpecError: exit 2)."""
    from grokverify.run.preflight import data_problems

    skipped = data_problems(claims, scale)
    for claim_id, why in skipped.items():
        console.print(f"[yellow]SKIPPED[/yellow] {escape(claim_id)}: {escape(why)}{then}")
    return [c for c in claims if c.claim.id not in skipped]


def _default_limits() -> tuple[float, float]:
    from grokverify.claim.budget import DEFAULT_LIMITS, GIB

    return DEFAULT_LIMITS.max_trial_bytes / GIB, DEFAULT_LIMITS.max_trial_flops


def _add_limit_options(parser: argparse.ArgumentParser) -> None:
    memory, flops = _default_limits()
    parser.add_argument("--max-trial-memory", type=float, default=None, metavar="GIB",
                        help=f"refuse a trial estimated to need more memory (default {memory:g} "
                             f"GiB); raise it on big machines")
    parser.add_argument("--max-trial-flops", type=float, default=None, metavar="FLOPS",
                        help=f"refuse a trial estimated to need more arithmetic (default "
                             f"{flops:.0e})")


def _gpu_fraction(text: str) -> float | None:
    """`--gpus-per-task`: auto (None) or a share of one GPU, 0 < F <= 1 (a trial trains on one
    device, so more than one GPU would sit idle); ValueError says what is wrong."""
    if text == "auto":
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"expected auto or a number, got {text!r}") from None
    if not (math.isfinite(value) and 0 < value <= 1):
        raise ValueError(f"expected auto or 0 < F <= 1, got {text}")
    return value


def _limit_problem(args: argparse.Namespace) -> str | None:
    finite = {"--max-trial-memory": args.max_trial_memory,
              "--max-trial-flops": args.max_trial_flops}
    if "gpu_memory" in args:
        finite["--gpu-memory"] = args.gpu_memory
        try:
            _gpu_fraction(args.gpus_per_task)
        except ValueError as exc:
            return f"--gpus-per-task: {exc}"
    for flag, number in finite.items():
        if number is not None and not (math.isfinite(number) and number > 0):
            return f"{flag} must be a positive number (got {number:g})"
    return None


def _limits(args: argparse.Namespace) -> Limits:
    from grokverify.claim.budget import DEFAULT_LIMITS, GIB

    memory = DEFAULT_LIMITS.max_trial_bytes if args.max_trial_memory is None \
        else int(args.max_trial_memory * GIB)
    flops = DEFAULT_LIMITS.max_trial_flops if args.max_trial_flops is None \
        else args.max_trial_flops
    return replace(DEFAULT_LIMITS, max_trial_bytes=memory, max_trial_flops=flops)


def _argument_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with `run`'s options, checked before any claim is read (exit 2)."""
    from grokverify.run.execute import address_problem

    positive = {"--seeds": args.seeds, "--chunk-size": args.chunk_size,
                "--cpus-per-task": args.cpus_per_task}
    for flag, value in positive.items():
        if value is not None and value < 1:
            return f"{flag} must be >= 1 (got {value})"
    if args.seeds is not None and args.seeds > MAX_SEEDS:
        return f"--seeds must be <= {MAX_SEEDS} (got {args.seeds}), the bound a claim has too"
    problem = _limit_problem(args)
    if problem is None and args.address is not None:
        problem = address_problem(args.address)
    return problem


def _title(run: ClaimRun) -> str:
    paper = run.loaded.claim.scales[run.scale].paper_setting
    return escape(f"{run.loaded.claim.id} — scale {run.scale}") + (
        "" if paper else " (NOT the paper's setting)")


def _cell(x: Any) -> str:
    """A criterion column's value: a pair is a CI, a word stays a word, else a number (escaped:
    rich would read "[inf, inf]" as markup)."""
    if isinstance(x, tuple):
        return escape(format_ci(x))
    return escape(x if isinstance(x, str) else format_number(float(x)))


def _arms_table(run: ClaimRun) -> Table:
    """One row per member and arm: the seeds left out, then whatever columns the criterion
    gives its arms (the union over members, in the order given)."""
    table = Table(title=_title(run))
    rows = [(member, arm) for member, res in run.results.items() for arm in res.arms]
    labels: list[str] = []
    for _, arm in rows:
        labels += [k for k in arm.columns if k not in labels]
    for col in ("member", "arm", "left out", *labels):
        table.add_column(escape(col))
    for member, arm in rows:
        table.add_row(escape(member) or "—", escape(arm.name), str(sum(arm.excluded.values())),
                      *(_cell(arm.columns[k]) if k in arm.columns else "—" for k in labels))
    return table


def _effect_line(res: CriterionResult) -> str:
    """The effect and CI, the p's against θ that go with the verdict, then the criterion's own
    p under its label (usually a no-effect test, which never decides)."""
    from grokverify.stats.base import p_against_words

    own = (f"; {res.test.split(' (')[0]} p = {format_number(res.p_value)} ({res.p_value_label})"
           if res.p_value is not None else "")
    if "ci_computed" in res.details:  # the interval rule set it aside: say what was computed
        low, high = res.details["ci_computed"]
        return (f"{res.effect_label} = {format_number(res.estimate)}, computed "
                f"{res.ci_level * 100:.4g}% CI {format_ci((low, high))}, which does not hold "
                f"for these data (see below){own}")
    return (f"{res.effect_label} = {format_number(res.estimate)}, {res.ci_level * 100:.4g}% CI "
            f"{format_ci(res.ci)}; {p_against_words(res.to_dict())}{own}")


def _print_run(run: ClaimRun, console: Console) -> None:
    console.print(_arms_table(run))
    style = _VERDICT_STYLE[run.verdict.value]
    if run.family is None:
        console.print(f"[{style}]{run.verdict.value}[/{style}]  "
                      f"{escape(_effect_line(run.result))}")
    else:
        for m in run.family.members:
            console.print(f"  {escape(m.member)}: {m.verdict.value}  "
                          f"{escape(_effect_line(m.result))}")
        if run.verdict.value == "FINDING":
            from grokverify.stats.trend import describe

            trend = run.family.trend
            console.print(f"[{style}]FINDING[/{style}]  open question, {len(run.family.members)} "
                          f"members" + (f"; trend: {escape(describe(trend))}" if trend else ""))
        else:
            console.print(f"[{style}]{run.verdict.value}[/{style}]  family of "
                          f"{len(run.family.members)} (claims: {run.family.claims}; "
                          f"{run.family.correction} correction)")
    console.print(f"  {escape(run.reason)}")
    for member, found in run.more_seeds.items():
        console.print(f"  {escape(member + ': ' if member else '')}{escape(found['words'])}")
    console.print(f"  trained {run.trained} seed(s), reused {run.reused}; "
                  f"report: {escape(str(run.report_dir / 'report.md'))}")


def _cmd_run(args: argparse.Namespace, console: Console) -> int:
    from grokverify.report.index import write_suite
    from grokverify.report.suite import read_report
    from grokverify.run.execute import ExecutionError
    from grokverify.run.pipeline import run_claims

    prepared = _prepared(args, console)
    if isinstance(prepared, int):
        return prepared
    claims, opts, device, limits = prepared
    papers, bad = _papers_of(args.claims)
    if bad:
        return EXIT_BAD_INPUT
    try:
        if args.dry_run:
            return _dry_run(claims, opts, device, limits, console)
        runs = run_claims(claims, opts, console)
        suite = write_suite(opts.reports, [read_report(r.report_dir / "result.json")
                                           for r in runs if r.report_dir is not None],
                            papers=[paper for _, paper in papers])
    except (ExecutionError, OSError) as exc:
        return _run_failed(exc, console)
    for run in runs:
        _print_run(run, console)
    _print_suite(suite, console)
    return EXIT_OK


def _prepared(args: argparse.Namespace, console: Console
              ) -> int | tuple[list[LoadedClaim], RunOptions, str, Limits]:
    """`run`'s and `pilot`'s claims, options, device and limits, checked before anything
    trains; an exit code where there is nothing to do or the input is bad."""
    from grokverify.run.execute import ExecutionError
    from grokverify.run.pipeline import RunOptions, device_for
    from grokverify.run.preflight import claim_problems, path_problems

    problem = _argument_problem(args)
    if problem:
        print(f"grokverify {args.command}: error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    claims, limits = _claims_of(args)
    opts = RunOptions(scale=args.scale, seeds=args.seeds, store=args.store,
                      reports=getattr(args, "reports", Path("reports")),
                      executor=args.executor, address=args.address, device=args.device,
                      chunk_size=args.chunk_size, cpus_per_task=args.cpus_per_task,
                      gpus_per_task=_gpu_fraction(args.gpus_per_task),
                      gpu_memory_gib=args.gpu_memory)
    try:
        device = device_for(opts)
        claim_problems(claims, opts, limits, device)
        claims = _with_their_data(claims, opts.scale, console)
        if not claims:
            return EXIT_OK
        path_problems(claims, opts)
    except (ExecutionError, OSError) as exc:
        return _run_failed(exc, console)
    return claims, opts, device, limits


def _cmd_pilot(args: argparse.Namespace, console: Console) -> int:
    from grokverify.run.execute import ExecutionError
    from grokverify.run.pilot import run_pilot

    if args.stretch < 1:
        print("grokverify pilot: error: --stretch must be at least 1", file=sys.stderr)
        return EXIT_BAD_INPUT
    prepared = _prepared(args, console)
    if isinstance(prepared, int):
        return prepared
    claims, opts, _, _ = prepared
    if len(claims) != 1:
        print(f"grokverify pilot: error: one claim at a time ({args.claims[0]} holds "
              f"{len(claims)})", file=sys.stderr)
        return EXIT_BAD_INPUT
    loaded = claims[0]
    try:
        pilot = run_pilot(loaded, opts, args.seeds, args.stretch, console)
    except (ExecutionError, OSError) as exc:
        return _run_failed(exc, console)
    say = functools.partial(console.print, markup=False, highlight=False)
    say(f"pilot of {loaded.claim.id}, scale {opts.scale}: {args.seeds} seed(s) per arm")
    for regime in [*pilot.at_budget, *pilot.stretched]:
        say(f"  {regime.words()}")
    for check in pilot.checks:
        say(f"  check {'passes' if check.passes else 'FAILS'}: {check.words()}")
    say(f"  verdict of these seeds alone: {pilot.verdict}")
    for line in pilot.proposal:
        say(f"  {line}")
    say(f"  stored in {opts.store}: `grokverify run` reuses the seeds at the budget")
    return EXIT_OK


def _claims_of(args: argparse.Namespace) -> tuple[list[LoadedClaim], Limits]:
    """`run`'s or `report`'s claims (folders expanded), loaded under the limits of the options,
    with --data-dir in force for the workers and the data checks."""
    from grokverify.claim.load import load_claim

    limits = _limits(args)
    _use_data_dir(args)
    return _load_all(claim_files(args.claims), lambda path: load_claim(path, limits=limits)), limits


def _run_failed(exc: Exception, console: Console) -> int:
    """A run, pilot or rebuild that failed: our errors in their own words, the system's as
    "what: file"."""
    from grokverify.run.preflight import PathProblem
    from grokverify.store import StoreError

    if isinstance(exc, OSError) and not isinstance(exc, StoreError | PathProblem):
        console.print(f"[red]error:[/red] {escape(exc.strerror or str(exc))}: "
                      f"{escape(str(exc.filename or ''))}")
    else:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
    return EXIT_RUN_FAILED


def _print_suite(paths: list[Path], console: Console) -> None:
    console.print(f"suite: {', '.join(map(str, paths))}", markup=False, highlight=False)


def _cmd_report(args: argparse.Namespace, console: Console) -> int:
    """Rebuild reports and the suite from the store; nothing is trained and no executor (Ray)
    is started (`rebuild.rebuild_claims`)."""
    from grokverify.report.index import write_suite
    from grokverify.report.suite import SUITE_FILES, SuiteError, load_suite, read_report
    from grokverify.run.execute import ExecutionError
    from grokverify.run.outcome import RunOptions
    from grokverify.run.preflight import claim_problems
    from grokverify.run.rebuild import rebuild_claims

    problem = _limit_problem(args) or (f"--seeds must be between 1 and {MAX_SEEDS} (got "
                                       f"{args.seeds})" if args.seeds is not None and
                                       not 1 <= args.seeds <= MAX_SEEDS else None)
    if problem:
        print(f"grokverify report: error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    papers, bad = _papers_of(args.claims)
    if bad:
        return EXIT_BAD_INPUT
    if args.beside is not None:
        try:
            load_suite(args.beside)
        except SuiteError as exc:
            print(f"grokverify report: error: --beside: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    claims, limits = _claims_of(args)
    opts = RunOptions(scale=args.scale, seeds=args.seeds, store=args.store, reports=args.reports,
                      executor="local", device=args.device, chunk_size=1)
    claim_problems(claims, opts, limits, "cpu")
    if not args.store.is_dir():
        console.print(f"[red]error:[/red] no store at {escape(str(args.store))}")
        return EXIT_RUN_FAILED
    ready = _with_their_data(claims, opts.scale, console, "; not rebuilt")
    try:
        done = rebuild_claims(ready, opts, console)
        reports = [read_report(d.result_json) for d in done if d.result_json is not None]
        suite = write_suite(opts.reports, reports, args.formats or SUITE_FILES,
                            [paper for _, paper in papers], args.beside) if reports else []
    except (ExecutionError, OSError) as exc:
        return _run_failed(exc, console)
    for d in done:
        if d.result_json is None:
            console.print(f"[red]NOT REBUILT[/red] {escape(d.claim_id)}: no record in the store "
                          f"for {escape(d.missing)} (scale {escape(opts.scale)}); report not "
                          f"written")
        else:
            console.print(f"rebuilt {escape(d.claim_id)}: {d.verdict} ({d.seeds} seed records "
                          f"from the store) -> {escape(str(d.result_json.parent / 'report.md'))}")
    if suite:
        _print_suite(suite, console)
    rebuilt = sum(d.result_json is not None for d in done)
    console.print(f"{rebuilt} of {len(claims)} claim(s) rebuilt from {escape(str(opts.store))}; "
                  f"nothing trained")
    return EXIT_OK if rebuilt == len(claims) else EXIT_RUN_FAILED


def _cmd_diff(args: argparse.Namespace, console: Console) -> int:
    """Exit 1 when a verdict changed (the nightly job's signal), 0 otherwise."""
    from grokverify.report.diff import diff_suites, summary
    from grokverify.report.suite import SuiteError, load_suite

    try:
        old, new = load_suite(args.old), load_suite(args.new)
    except SuiteError as exc:
        print(f"grokverify diff: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    lines = diff_suites(old, new)
    for line in lines:
        console.print(str(line), markup=False, highlight=False)
    console.print(summary(lines), markup=False, highlight=False)
    return EXIT_RUN_FAILED if any(line.kind == "CHANGED" for line in lines) else EXIT_OK


def _load_all(paths: list[Path], load: Callable[[Path], LoadedClaim]) -> list[LoadedClaim]:
    """Every claim file, with the problems of all of them in one error (so one run reports every
    bad file at once, and none is trained while another is bad)."""
    from grokverify.claim.yamlio import SpecError

    loaded, problems = [], []
    for path in paths:
        try:
            loaded.append(load(path))
        except SpecError as exc:
            problems += exc.problems
    if problems:
        raise SpecError(problems)
    return loaded


def _dry_run(claims: list[LoadedClaim], opts: RunOptions, device: str, limits: Limits,
             console: Console) -> int:
    from grokverify.claim.budget import GIB
    from grokverify.claim.reach import seed_warnings
    from grokverify.run.preflight import plan_run

    for p in plan_run(claims, opts, device):
        setting = "the paper's setting" if p.paper_setting else "NOT the paper's setting"
        console.print(f"{p.claim_id}, scale {p.scale} ({setting}): {p.arms} arm(s) × "
                      f"{p.seeds_per_arm} seed(s); {p.stored} stored, {p.to_train} to train in "
                      f"{p.trials} trial(s) on {device}", markup=False, highlight=False)
        if p.trials:
            console.print(f"  largest trial: about {p.trial_bytes / GIB:.3g} GiB and "
                          f"{p.trial_flops:.3g} flops (limits {limits.max_trial_bytes / GIB:g} "
                          f"GiB, {limits.max_trial_flops:.3g} flops)", markup=False,
                          highlight=False)
    for warning in seed_warnings(claims, opts.scale, opts.seeds):
        console.print(f"warning: {warning}.", markup=False, highlight=False)
    console.print(f"dry run: nothing trained; the store {opts.store} and the report folders "
                  f"under {opts.reports} can be written", markup=False, highlight=False)
    return EXIT_OK


def _cmd_validate(args: argparse.Namespace, console: Console) -> int:
    from grokverify.claim.load import load_claim
    from grokverify.claim.yamlio import SpecError

    problem = _limit_problem(args)
    if problem:
        print(f"grokverify validate: error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    limits = _limits(args)
    failed = False
    for path in claim_files([p for p in args.claims if not is_paper_file(p)]):
        try:
            loaded = load_claim(path, limits=limits)
        except SpecError as exc:
            failed = True
            print(str(exc), file=sys.stderr)
            continue
        arms, scales = len(loaded.claim.arms), ", ".join(loaded.claim.scales)
        console.print(f"[green]ok[/green] {path}: {loaded.claim.id} ({arms} "
                      f"arm{'s' if arms != 1 else ''}; scales {scales})")
        _print_checks(loaded, console)
    failed = _validate_papers(args.claims, console) or failed
    return EXIT_BAD_INPUT if failed else EXIT_OK


def _papers_of(paths: list[Path]) -> tuple[list[Any], bool]:
    """Each claims folder's paper files, and each paper file given, checked against the claims
    of its folder (problems on stderr); with True when one is bad."""
    from grokverify.claim.paper import claim_sources, load_paper, paper_files
    from grokverify.claim.yamlio import SpecError

    papers, failed = [], False
    for given in paths:
        folder, files = ((given.parent.parent, [given]) if is_paper_file(given)
                         else (given, paper_files(given) if given.is_dir() else []))
        sources = claim_sources(claim_files([folder])) if files else {}
        for path in files:
            try:
                papers.append((path, load_paper(path, sources)))
            except SpecError as exc:
                failed = True
                print(str(exc), file=sys.stderr)
    return papers, failed


def _validate_papers(paths: list[Path], console: Console) -> bool:
    """`validate`'s line for each paper file of a claims folder; True when one is bad."""
    papers, failed = _papers_of(paths)
    for path, paper in papers:
        console.print(f"[green]ok[/green] {path}: paper {paper.arxiv} ({len(paper.central)} "
                      f"central claim(s), {len(paper.questions)} question(s))")
    return failed


def _print_checks(loaded: LoadedClaim, console: Console) -> None:
    """The checks a claim declares, and the built-in ones that apply and it does not declare."""
    from grokverify.claim.checks import undeclared
    from grokverify.claim.reach import unreachable

    claim = loaded.claim
    declared = ", ".join(sorted({c.kind for c in claim.checks})) or "none"
    console.print(f"  checks declared: {declared}", markup=False, highlight=False)
    for name, why in undeclared(claim, [e for *_, e in loaded.experiments()]).items():
        console.print(f"  check {name} applies and is not declared: {why}", markup=False,
                      highlight=False)
    if claim.interpretation is None:
        console.print("  no interpretation: the report cannot say what its verdict means",
                      markup=False, highlight=False)
    for why in unreachable(loaded):
        console.print(f"  cannot be reached: {why}", markup=False, highlight=False)


def _cmd_schema(args: argparse.Namespace, console: Console) -> int:
    from grokverify.claim.schema import Claim

    if args.format == "markdown":
        from grokverify.report.fields import markdown

        print(markdown(), end="")
    else:
        print(json.dumps(Claim.model_json_schema(), indent=2))
    return EXIT_OK


def _cmd_plugins(args: argparse.Namespace, console: Console) -> int:
    from grokverify.kinds import PLUGIN_GROUP, plugins

    found = plugins()
    if not found:
        print(f"no plugins installed (entry-point group {PLUGIN_GROUP}; docs/extending.md, "
              "Plugins)")
    for plugin in found.values():
        dist = f"{plugin.distribution} {plugin.version}" if plugin.distribution else "?"
        if plugin.error:
            print(f"{plugin.name} ({dist}): cannot be used: {plugin.error}")
        else:
            print(f"{plugin.name} ({dist}, module {plugin.module}): results version "
                  f"{plugin.results_version}; {', '.join(plugin.kinds) or 'no kinds'}")
    return EXIT_RUN_FAILED if any(p.error for p in found.values()) else EXIT_OK


def _cmd_plan(args: argparse.Namespace, console: Console) -> int:
    from grokverify.claim.load import load_claim
    from grokverify.run.execute import resolve_device
    from grokverify.run.plan import plan_claim
    from grokverify.store import Store

    _use_data_dir(args)
    loaded = load_claim(args.claim)
    if args.scale not in loaded.claim.scales:
        console.print(f"[red]error:[/red] no scale {args.scale!r}")
        return EXIT_BAD_INPUT
    if not _with_their_data([loaded], args.scale, console):
        return EXIT_OK
    try:
        candidates = sorted({int(x) for x in args.candidates.split(",")})
    except ValueError:
        console.print(f"[red]error:[/red] --candidates: expected integers, got {args.candidates}")
        return EXIT_BAD_INPUT
    if not 0 < args.power < 1 or min(candidates) < 2 or args.n_sim < 10:
        console.print("[red]error:[/red] need 0 < --power < 1, candidates >= 2, --n-sim >= 10")
        return EXIT_BAD_INPUT
    try:
        result = plan_claim(loaded, args.scale, Store(args.store), resolve_device(args.device),
                            args.effect, args.power, candidates, args.n_sim)
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}")
        return EXIT_RUN_FAILED
    source = (f"pilot of {result.pilot_seeds} seed(s) per arm from the store"
              if args.effect is None else f"declared effect {args.effect:g}")
    table = Table(title=f"{loaded.claim.id}: P(SUPPORTED) by seeds per arm ({source})")
    table.add_column("seeds per arm")
    for member in result.members:
        table.add_column(member or "power")
    for i, n in enumerate(candidates):
        table.add_row(str(n), *(f"{p.power[i]:.2f} ± {p.mc_se[i]:.2f}"
                                for p in result.members.values()))
    console.print(table)
    for member, p in result.members.items():
        name = f"{member}: " if member else ""
        rec = (f"{p.recommended} seeds per arm" if p.recommended else
               f"more than {candidates[-1]} seeds per arm (none of the candidates)")
        console.print(f"{name}{args.power:.0%} power needs {rec}.")
        console.print(f"  [dim]{p.explanation}[/dim]")
        if member in result.bounds:
            console.print(f"  [yellow]{escape(result.bounds[member])}[/yellow]")
    return EXIT_OK


def _cmd_store(args: argparse.Namespace, console: Console) -> int:
    return _STORE_COMMANDS[args.store_command](args, console)


_StoreCommand = Callable[[argparse.Namespace, "Store", Console], int]


def _archive_errors(command: _StoreCommand) -> Callable[[argparse.Namespace, Console], int]:
    """Run a `store pack`/`store unpack` body; an archive or store it cannot use exits 2,
    named (docs/store.md, "Archives")."""

    def run(args: argparse.Namespace, console: Console) -> int:
        from grokverify.store import Store, StoreError

        try:
            return command(args, Store(args.store), console)
        except StoreError as exc:
            console.print(f"[red]error:[/red] {escape(str(exc))}")
            return EXIT_BAD_INPUT

    return run


@_archive_errors
def _cmd_store_pack(args: argparse.Namespace, store: Store, console: Console) -> int:
    """`store pack`: the store's sound records, less those in --skip-in parts, into one archive."""
    from grokverify.archive import pack

    if not args.store.is_dir():
        console.print(f"[red]error:[/red] no store at {args.store}")
        return EXIT_BAD_INPUT
    n = pack(store, args.archive, args.skip_in)
    size = args.archive.stat().st_size / 1e6
    console.print(f"packed {n} record(s) into {args.archive} ({size:.1f} MB)")
    return EXIT_OK


@_archive_errors
def _cmd_store_unpack(args: argparse.Namespace, store: Store, console: Console) -> int:
    """`store unpack`: every part's records into the store, each checked and logged."""
    from grokverify.archive import unpack

    added, kept = unpack(args.archives, store)
    console.print(f"unpacked {added} record(s) into {args.store} ({kept} already there)")
    return EXIT_OK


def _cmd_store_verify(args: argparse.Namespace, console: Console) -> int:
    """`store verify`: one line per finding (its kind, where, why), then the counts; exit 1
    when anything is found (docs/store.md, "Integrity and threat model")."""
    from grokverify.store import RECORD_DAMAGE, Store, verify

    if not args.store.is_dir():
        console.print(f"[red]error:[/red] no store at {args.store}")
        return EXIT_RUN_FAILED
    report = verify(Store(args.store))
    for found in report.findings:
        style = "red" if found.kind in RECORD_DAMAGE else "yellow"
        console.print(f"[{style}]{found.kind}[/{style}] {escape(found.path)}: {escape(found.why)}")
    console.print(f"{report.ok} record(s) ok ({report.other_version} from another results "
                  f"version or torch, kept but not reused), {len(report.corrupt)} corrupt, "
                  f"{len(report.orphaned)} orphaned or stray, {len(report.log_problems)} log "
                  f"problem(s)")
    return EXIT_RUN_FAILED if report.findings else EXIT_OK


_STORE_COMMANDS = {"verify": _cmd_store_verify, "pack": _cmd_store_pack,
                   "unpack": _cmd_store_unpack}
_COMMANDS = {"run": _cmd_run, "pilot": _cmd_pilot, "validate": _cmd_validate, "schema": _cmd_schema,
             "store": _cmd_store, "plan": _cmd_plan, "report": _cmd_report, "diff": _cmd_diff,
             "plugins": _cmd_plugins}


class Terminated(BaseException):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt, so the same cleanup
    runs (locks released, Ray shut down, its temporary folder removed) and the exit is clean."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


def main(argv: list[str] | None = None) -> int:
    from grokverify.claim.yamlio import SpecError
    from grokverify.engine.numerics import pin_environment

    pin_environment()  # before any torch computation in this process (docs/determinism.md)
    args = _parser().parse_args(argv)
    console = Console(stderr=False, soft_wrap=True)
    in_main = threading.current_thread() is threading.main_thread()  # else signal() refuses
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if in_main else None
    stopped = "seeds finished so far are in the store; rerun to continue"
    try:
        return _COMMANDS[args.command](args, console)
    except SpecError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_BAD_INPUT
    except NoClaims as exc:  # "<folder>: ...", as a claim file's problems start with the file
        print(str(exc), file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"interrupted (Ctrl-C): {stopped}", file=sys.stderr)
        return EXIT_SIGINT
    except Terminated:
        print(f"stopped by SIGTERM: {stopped}", file=sys.stderr)
        return EXIT_SIGTERM
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
