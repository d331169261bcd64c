"""Command line: `grokverify run | validate | schema`.

Exit codes: 0 success, 1 a run that could not complete (cluster unreachable, missing
resources, store unwritable), 2 a bad claim or bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from grokverify.verdict import format_ci, format_number

if TYPE_CHECKING:
    from grokverify.outcome import ClaimRun
    from grokverify.stats import CriterionResult

EXIT_OK, EXIT_RUN_FAILED, EXIT_BAD_INPUT = 0, 1, 2
_VERDICT_STYLE = {"SUPPORTED": "bold green", "REFUTED": "bold red", "PARTIAL": "bold yellow",
                  "INCONCLUSIVE": "bold yellow"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="grokverify", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="train what is missing, apply the criterion, write reports")
    run.add_argument("claims", nargs="+", type=Path, help="claim YAML files")
    run.add_argument("--scale", default="quick", help="scale to run (default: quick)")
    run.add_argument("--seeds", type=int, default=None, help="override the seed count")
    run.add_argument("--store", type=Path, default=Path(".grokverify/store"),
                     help="result store directory (default: .grokverify/store)")
    run.add_argument("--reports", type=Path, default=Path("reports"),
                     help="reports directory (default: reports)")
    run.add_argument("--executor", choices=["ray", "local"], default="ray",
                     help="ray (default; local Ray started on the fly) or local (in-process)")
    run.add_argument("--address", default=None,
                     help="existing Ray cluster (host:port or ray://host:port)")
    run.add_argument("--device", default="auto", help="auto, cpu or cuda (default: auto)")
    run.add_argument("--chunk-size", type=int, default=16, help="seeds per trial (default 16)")
    run.add_argument("--cpus-per-task", type=int, default=1,
                     help="CPU threads per trial (Ray task, or the local executor's one "
                          "process); each thread trains its own shard of the trial's seeds")
    run.add_argument("--gpus-per-task", type=float, default=1.0)

    val = sub.add_parser("validate", help="check claim files without running them")
    val.add_argument("claims", nargs="+", type=Path)

    sub.add_parser("schema", help="print the JSON Schema of a claim file")

    plan = sub.add_parser("plan", help="seeds needed for a target power (pilot or effect)")
    plan.add_argument("claim", type=Path)
    plan.add_argument("--scale", default="quick")
    plan.add_argument("--store", type=Path, default=Path(".grokverify/store"))
    plan.add_argument("--device", default="auto")
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
    return p


def _title(run: ClaimRun) -> str:
    paper = run.loaded.claim.scales[run.scale].paper_setting
    return f"{run.loaded.claim.id} — scale {run.scale}" + (
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
        table.add_column(col)
    for member, arm in rows:
        table.add_row(member or "—", arm.name, str(sum(arm.excluded.values())),
                      *(_cell(arm.columns[k]) if k in arm.columns else "—" for k in labels))
    return table


def _effect_line(res: CriterionResult) -> str:
    p = format_number(res.p_value) if res.p_value is not None else "—"
    return (f"{res.effect_label} = {format_number(res.estimate)}, {res.ci_level * 100:.4g}% CI "
            f"{format_ci(res.ci)}, {res.test.split(' (')[0]} p = {p}")


def _print_run(run: ClaimRun, console: Console) -> None:
    console.print(_arms_table(run))
    style = _VERDICT_STYLE[run.verdict.value]
    if run.family is None:
        console.print(f"[{style}]{run.verdict.value}[/{style}]  {_effect_line(run.result)}")
    else:
        for m in run.family.members:
            console.print(f"  {m.member}: {m.verdict.value}  {_effect_line(m.result)}")
        console.print(f"[{style}]{run.verdict.value}[/{style}]  family of "
                      f"{len(run.family.members)} ({run.family.correction} correction)")
    console.print(f"  {run.reason}")
    console.print(f"  trained {run.trained} seed(s), reused {run.reused}; "
                  f"report: {run.report_dir / 'report.md'}")


def _cmd_run(args: argparse.Namespace, console: Console) -> int:
    from grokverify.execute import ExecutionError
    from grokverify.pipeline import RunOptions, run_claims
    from grokverify.spec import load_claim
    from grokverify.store import StoreError

    if args.seeds is not None and args.seeds < 1:
        console.print("[red]--seeds must be >= 1[/red]")
        return EXIT_BAD_INPUT
    if args.chunk_size < 1:
        console.print("[red]--chunk-size must be >= 1[/red]")
        return EXIT_BAD_INPUT
    claims = [load_claim(path) for path in args.claims]
    opts = RunOptions(scale=args.scale, seeds=args.seeds, store=args.store, reports=args.reports,
                      executor=args.executor, address=args.address, device=args.device,
                      chunk_size=args.chunk_size, cpus_per_task=args.cpus_per_task,
                      gpus_per_task=args.gpus_per_task)
    try:
        runs = run_claims(claims, opts, console)
    except (ExecutionError, StoreError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        return EXIT_RUN_FAILED
    except OSError as exc:
        console.print(f"[red]error:[/red] {exc.strerror or exc}: {exc.filename or ''}")
        return EXIT_RUN_FAILED
    for run in runs:
        _print_run(run, console)
    return EXIT_OK


def _cmd_validate(args: argparse.Namespace, console: Console) -> int:
    from grokverify.spec import load_claim
    from grokverify.yamlio import SpecError

    failed = False
    for path in args.claims:
        try:
            loaded = load_claim(path)
        except SpecError as exc:
            failed = True
            print(str(exc), file=sys.stderr)
            continue
        arms, scales = len(loaded.claim.arms), ", ".join(loaded.claim.scales)
        console.print(f"[green]ok[/green] {path}: {loaded.claim.id} ({arms} arms; scales {scales})")
    return EXIT_BAD_INPUT if failed else EXIT_OK


def _cmd_schema(args: argparse.Namespace, console: Console) -> int:
    from grokverify.spec import Claim

    print(json.dumps(Claim.model_json_schema(), indent=2))
    return EXIT_OK


def _cmd_plan(args: argparse.Namespace, console: Console) -> int:
    from grokverify.execute import resolve_device
    from grokverify.plan import plan_claim
    from grokverify.spec import load_claim
    from grokverify.store import Store

    loaded = load_claim(args.claim)
    if args.scale not in loaded.claim.scales:
        console.print(f"[red]error:[/red] no scale {args.scale!r}")
        return EXIT_BAD_INPUT
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
    return EXIT_OK


def _cmd_store(args: argparse.Namespace, console: Console) -> int:
    from grokverify.store import Store, verify

    if not args.store.is_dir():
        console.print(f"[red]error:[/red] no store at {args.store}")
        return EXIT_RUN_FAILED
    report = verify(Store(args.store))
    for path, why in report.corrupt:
        console.print(f"[red]corrupt[/red]  {path}: {why}")
    for path, why in report.orphaned:
        console.print(f"[yellow]orphaned[/yellow] {path}: {why}")
    console.print(f"{report.ok} record(s) ok ({report.other_version} from another results "
                  f"version or torch, "
                  f"kept but not reused), {len(report.corrupt)} corrupt, "
                  f"{len(report.orphaned)} orphaned")
    return EXIT_RUN_FAILED if report.corrupt or report.orphaned else EXIT_OK


_COMMANDS = {"run": _cmd_run, "validate": _cmd_validate, "schema": _cmd_schema,
             "store": _cmd_store, "plan": _cmd_plan}


def main(argv: list[str] | None = None) -> int:
    from grokverify.yamlio import SpecError

    args = _parser().parse_args(argv)
    console = Console(stderr=False, soft_wrap=True)
    try:
        return _COMMANDS[args.command](args, console)
    except SpecError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted; finished chunks are in the store", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
