"""Mutation testing of the core modules with mutmut: does the suite catch small faults?

mutmut (``pip install -e '.[mutation]'``) copies the package into ``mutants/``, makes every
small change its operators know (``<`` to ``<=``, ``+ 1``, a constant, a dropped argument, ...) in
the modules ``[tool.mutmut] only_mutate`` of pyproject.toml lists (the core: verdict, family,
metrics, samples, store, the statistics criteria, the engine's threshold and evaluation code, the
spec's resolution order), and runs the tests that reach each changed function. A mutant is
*killed* when a test fails (or the run times out: the change made the tests hang), *survives*
when they all pass, and has *no tests* when no test reaches it (counted as surviving).

``mutation_score = killed / (total - equivalent - skipped)``, where *equivalent* mutants are
those that cannot change behaviour (listed, each with a one-line reason, in
``benchmarks/mutation_equivalent.txt``: ``<mutant name>  # <reason>``), and *skipped* those
mutmut itself did not run. Every surviving mutant should get a test or an entry in that file.

The report (``docs/mutation-report.md``) gets the date, commit, mutmut version, run time,
counts per module, the score, every surviving mutant and the equivalent ones. Not in CI: the
core modules give thousands of mutants, hours on 2 cores; run it before a release.

Usage: ``python benchmarks/mutation.py [--max-children N] [--report-only] [--rerun-alive]``
(``--report-only`` re-reads the last run in ``mutants/``). The last line is
``mutation_score=...``. A run stopped part-way (SIGINT to mutmut) still writes its report: the
mutants it did not reach are listed as not yet run, and ``--rerun-alive`` resumes from there.

``--rerun-alive`` re-runs only the mutants the committed report lists as surviving or unchecked,
and those it or the equivalence file list as equivalent (one a test kills is reported as a stale
entry), against the
current tests, and carries the rest of
that report's verdicts over: every other mutant was killed then, and stays killed as long as the
core modules are unchanged since the report's commit (checked: it refuses otherwise) and no test
file was deleted (checked; the report lists the test files changed since). The report says which
mutants were carried and from which commit. Minutes instead of hours after a round of new tests.
"""

from __future__ import annotations

import argparse
import datetime
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENT = ROOT / "benchmarks" / "mutation_equivalent.txt"
REPORT = ROOT / "docs" / "mutation-report.md"
KILLED = {"killed", "timeout", "caught by type check"}
NOT_RUN = {"skipped"}
UNFINISHED = {"not checked", "check was interrupted by user"}  # a stopped run's rest
_LINE = re.compile(r"^\s+(\S+): (.+)$")


def core_modules() -> list[str]:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]["only_mutate"]


def equivalents() -> dict[str, str]:
    """Mutant name -> why it cannot change behaviour."""
    out: dict[str, str] = {}
    if not EQUIVALENT.is_file():
        return out
    for n, line in enumerate(EQUIVALENT.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        name, sep, why = line.partition("#")
        if not sep or not why.strip():
            raise SystemExit(f"{EQUIVALENT.name}:{n}: expected '<mutant name>  # <reason>'")
        out[name.strip()] = why.strip()
    return out


def statuses() -> dict[str, str]:
    """Every mutant of the last run and its status (`mutmut results --all true`)."""
    out = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"], cwd=ROOT,
                         check=True, capture_output=True, text=True).stdout
    return {m.group(1): m.group(2).strip() for line in out.splitlines()
            if (m := _LINE.match(line))}


def module_of(mutant: str) -> str:
    """grokverify.stats.survival.x_bootstrap__mutmut_3 -> grokverify/stats/survival.py"""
    head = mutant.split("__mutmut_")[0]
    parts = head.split(".")
    for i in range(len(parts), 0, -1):
        path = ROOT / ("/".join(parts[:i]) + ".py")
        if path.is_file():
            return str(path.relative_to(ROOT))
    return parts[0]


CARRIED = "killed (carried)"


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout.strip()


def previous_run() -> tuple[str, list[str]]:
    """The committed report's commit and the mutants it lists as still alive or as equivalent
    (the ones whose kill it does not vouch for)."""
    text = REPORT.read_text()
    commit = re.search(r"^- commit: ([0-9a-f]+)", text, re.M)
    carried = re.search(r"^- carried from: ([0-9a-f]+)", text, re.M)
    if commit is None:
        raise SystemExit(f"{REPORT.name} names no commit: run without --rerun-alive")
    unvouched = []
    for heading in ("## Surviving mutants", "## Not yet run", "## Listed as equivalent but killed",
                    "## Equivalent mutants"):
        if heading in text:
            section = text.split(heading, 1)[1].split("\n## ", 1)[0]
            unvouched += re.findall(r"^- `([^`]+)`: ", section, re.M)
    return (carried or commit).group(1), unvouched


def carry_problems(since: str) -> list[str]:
    """Why the kills of the run at `since` may not hold now (empty: they hold)."""
    problems = []
    changed = _git("diff", "--name-only", since, "--", *core_modules())
    if changed:
        problems.append(f"core modules changed since {since}: {changed.split()}")
    deleted = _git("diff", "--name-only", "--diff-filter=D", since, "--", "tests")
    if deleted:
        problems.append(f"test files deleted since {since}: {deleted.split()}")
    return problems


def write_report(status: dict[str, str], equiv: dict[str, str], seconds: float | None,
                 carried_from: str | None = None) -> float:
    mutated = set(core_modules())
    unknown = sorted(n for n in set(equiv) - set(status) if module_of(n) in mutated)
    if unknown:
        raise SystemExit(f"{EQUIVALENT.name} lists mutants this run does not have: {unknown}")
    equiv = {n: why for n, why in equiv.items() if n in status}  # of the modules mutated now
    # an entry whose mutant a test kills is stale (the code moved and the name now means another
    # mutant, or the reason was wrong): counted as killed and listed, so that it gets fixed
    stale = sorted(n for n in equiv if status[n] in KILLED)
    equiv = {n: why for n, why in equiv.items() if n not in stale}
    by_module: dict[str, Counter[str]] = defaultdict(Counter)
    for name, st in status.items():
        by_module[module_of(name)]["equivalent" if name in equiv else st] += 1
    total = sum(sum(c.values()) for c in by_module.values())
    killed = sum(c[k] for c in by_module.values() for k in KILLED | {CARRIED})
    eq = len(equiv)
    not_run = sum(c[k] for c in by_module.values() for k in NOT_RUN)
    denominator = total - eq - not_run
    score = killed / denominator if denominator else float("nan")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           check=True, capture_output=True, text=True).stdout.strip()
    lines = [
        "# Mutation report",
        "",
        "Made by `python benchmarks/mutation.py` (see its docstring and docs/testing.md).",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- commit: {commit}{' (with uncommitted changes)' if dirty else ''}",
        f"- tool: mutmut {version('mutmut')}, Python {sys.version.split()[0]}",
        f"- run time: {seconds / 60:.0f} min" if seconds is not None else
        "- run time: (report re-read from the last run)",
        f"- modules: {', '.join(core_modules())}",
    ]
    if carried_from is not None:
        n_carried = sum(c[CARRIED] for c in by_module.values())
        touched = _git("diff", "--name-status", carried_from, "--", "tests").splitlines()
        lines += [
            f"- carried from: {carried_from} (this run re-ran only the mutants that report listed "
            f"as surviving or unchecked; the {n_carried} it had killed are counted as killed: "
            f"the core modules are unchanged since {carried_from}, no test file was deleted; "
            f"test files added or modified since: {len(touched)})",
        ]
    lines += [
        f"- **mutation_score = {killed} / ({total} − {eq} equivalent − {not_run} skipped) = "
        f"{score:.3f}**",
        "",
        "| module | mutants | killed | survived | no tests | equivalent | other |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for module in sorted(by_module):
        c = by_module[module]
        k = sum(c[x] for x in KILLED | {CARRIED})
        other = sum(c.values()) - k - c["survived"] - c["no tests"] - c["equivalent"]
        lines.append(f"| {module} | {sum(c.values())} | {k} | {c['survived']} | "
                     f"{c['no tests']} | {c['equivalent']} | {other} |")
    alive = sorted(n for n, st in status.items()
                   if n not in equiv and st not in KILLED | NOT_RUN | UNFINISHED | {CARRIED})
    unfinished = sorted(n for n, st in status.items() if n not in equiv and st in UNFINISHED)
    if unfinished:
        lines.insert(lines.index("") + 1,
                     f"**Partial run: {len(unfinished)} of {total} mutants not yet run** (listed "
                     "below; `--rerun-alive` runs them and the survivors, carrying these kills).\n")
    lines += ["", f"## Surviving mutants ({len(alive)})", "",
              "Each needs a test, or an entry in benchmarks/mutation_equivalent.txt. "
              "`mutmut show <name>` prints the change.", ""]
    lines += [f"- `{n}`: {status[n]}" for n in alive] or ["(none)"]
    if unfinished:
        lines += ["", f"## Not yet run ({len(unfinished)})", ""]
        lines += [f"- `{n}`: {status[n]}" for n in unfinished]
    if stale:
        lines += ["", f"## Listed as equivalent but killed ({len(stale)})", "",
                  "Stale entries of benchmarks/mutation_equivalent.txt: remove or renumber.", ""]
        lines += [f"- `{n}`: {status[n]}" for n in stale]
    lines += ["", f"## Equivalent mutants ({eq})", ""]
    lines += [f"- `{n}`: {why}" for n, why in sorted(equiv.items())] or ["(none)"]
    REPORT.write_text("\n".join(lines) + "\n")
    return score


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-children", type=int, default=2)
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--rerun-alive", action="store_true",
                    help="re-run only what the committed report lists as alive; carry the rest")
    args = ap.parse_args(argv)
    seconds = None
    equiv = equivalents()
    since, names = None, []
    if args.rerun_alive:
        since, alive = previous_run()
        if problems := carry_problems(since):
            raise SystemExit("--rerun-alive: " + "; ".join(problems) + ": run it in full")
        # the equivalent ones too: one that a test now kills is a stale entry (write_report)
        names = [n for n in alive if n not in equiv] + sorted(equiv)
    if not args.report_only:
        start = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children",
                              str(args.max_children), *names], cwd=ROOT)
        seconds = time.perf_counter() - start
        if run.returncode not in (0, 1):
            print(f"mutmut run exited {run.returncode}")
            return run.returncode
    status = statuses()
    if since is not None:
        rerun = set(names) | set(equiv)
        status = {n: CARRIED if n not in rerun and st == "not checked" else st
                  for n, st in status.items()}
    score = write_report(status, equiv, seconds, since)
    print(f"report: {REPORT.relative_to(ROOT)}")
    print(f"mutation_score={score:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
