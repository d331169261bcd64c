"""Re-create, one at a time, the faults listed in FAULTS below and check that the CI suite
catches each: at least one test that ``.ci/run`` runs (no ``--slow``) must fail.

Each fault is a small source edit (an exact string replaced, which must occur exactly once, so
the script fails loudly when the code moves on and a fault no longer applies). The edit is made
in a throw-away copy of the files git tracks or would track (``git ls-files``), never in this
checkout; the fault's test files run there with ``-x`` (stop at the first failure) and
``PYTHONPATH`` set to the copy, so that the copy's package is the one imported. A fault is
CAUGHT when pytest exits 1 (a test failed), MISSED when the selected tests pass; any other exit
(collection error, crash) is an ERROR, not a catch.

Usage: ``python benchmarks/faults.py [--only NAME,...] [--list]``. The last line is
``faults_caught=K/N``. Takes a few minutes on 2 cores (the fault's tests stop at the first
failure).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Fault:
    name: str
    what: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]


FAULTS: tuple[Fault, ...] = (
    Fault("threshold_strict", "a training threshold reached only when strictly exceeded",
          "grokverify/engine/record.py",
          "train_acc >= self.train_threshold", "train_acc > self.train_threshold",
          ("tests/test_engine_record.py", "tests/test_engine_loop.py",
           "tests/test_engine_golden.py")),
    Fault("no_final_eval", "no final evaluation at the budget when steps is not a multiple of "
          "eval_interval", "grokverify/engine/loop.py",
          "if step % tr.eval_interval == 0 or step == tr.steps:",
          "if step % tr.eval_interval == 0:",
          ("tests/test_engine_loop.py", "tests/test_engine_golden.py",
           "tests/test_run_pipeline.py")),
    Fault("order_is_init_stream", "the minibatch-order random stream colliding with the "
          "initialisation stream", "grokverify/engine/data.py",
          'torch_generator(s, "order", context)', 'torch_generator(s, "init", context)',
          ("tests/test_engine_streams.py", "tests/test_engine_golden.py")),
    Fault("key_without_version", "the code (results) version left out of the store key",
          "grokverify/store.py",
          'return {"results_version": RESULTS_VERSION, "torch": torch_version(),',
          'return {"torch": torch_version(),',
          ("tests/test_store_keys.py", "tests/test_store_verify.py")),
    Fault("foreign_lock_taken", "another host's live lock taken over at once",
          "grokverify/store.py",
          "    except (ValueError, AttributeError, TypeError):\n        return True\n"
          "    return time.time() - lock.mtime > STALE_AFTER_S",
          "    except (ValueError, AttributeError, TypeError):\n        return True\n"
          "    return True",
          ("tests/test_store_locks.py",)),
    Fault("exclude_ignored", "on_diverged: exclude ignored", "grokverify/stats/arms.py",
          'result["summary"]["diverged"] and metric.on_diverged == "exclude"',
          'result["summary"]["diverged"] and False',
          ("tests/test_stats_metrics.py", "tests/test_stats_value_metrics.py",
           "tests/test_run_pipeline.py")),
    Fault("lag_without_fit_step", "grokking_lag not subtracting the fit step",
          "grokverify/stats/metrics.py",
          'max(s["val_step"] - s["train_step"], 0)', 'max(s["val_step"], 0)',
          ("tests/test_stats_metrics.py", "tests/test_stats_value_metrics.py")),
    Fault("sequential_ignores_refuted", "a sequential run that does not stop on REFUTED",
          "grokverify/stats/sequential.py",
          "DECIDED = (Verdict.SUPPORTED, Verdict.REFUTED)", "DECIDED = (Verdict.SUPPORTED,)",
          ("tests/test_stats_sequential.py", "tests/test_run_sequential.py")),
    Fault("family_refuted_inclusive", "the family REFUTED boundary made inclusive",
          "grokverify/stats/base.py",
          "p_refute < alpha * (1 - P_TOL)", "p_refute <= alpha * (1 + P_TOL)",
          ("tests/test_stats_family.py", "tests/test_stats_p_against_theta.py")),
    Fault("survival_ci_90_as_95", "a survival CI computed at 90% but labelled 95%",
          "grokverify/stats/survival.py",
          "b, t, p.effect, p.n_boot, p.bootstrap_seed, p.ci_level,",
          "b, t, p.effect, p.n_boot, p.bootstrap_seed, p.ci_level - 0.05,",
          ("tests/test_stats_calibration.py",)),
)


def copy_tree(dest: Path) -> None:
    """The files of this checkout that git tracks or would track (not ignored), as they are on
    disk, into `dest`."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def inject(tree: Path, fault: Fault) -> None:
    path = tree / fault.file
    text = path.read_text()
    count = text.count(fault.old)
    if count != 1:
        raise SystemExit(f"fault {fault.name}: expected the text once in {fault.file}, found it "
                         f"{count} times; update benchmarks/faults.py to the current code")
    path.write_text(text.replace(fault.old, fault.new))


def run_fault(fault: Fault) -> tuple[str, str, float]:
    """(CAUGHT | MISSED | ERROR, the first failing test or pytest's last line, seconds)."""
    with tempfile.TemporaryDirectory(prefix=f"gv-fault-{fault.name}-") as tmp:
        tree = Path(tmp)
        copy_tree(tree)
        inject(tree, fault)
        env = {**os.environ, "PYTHONPATH": str(tree)}
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                               *fault.tests], cwd=tree, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        out = proc.stdout.strip().splitlines()
        failed = next((ln for ln in out if ln.startswith("FAILED")), out[-1] if out else "")
        status = {0: "MISSED", 1: "CAUGHT"}.get(proc.returncode, "ERROR")
        if status == "CAUGHT":
            imported = subprocess.run([sys.executable, "-c", "import grokverify; "
                                       "print(grokverify.__file__)"], cwd=tree, env=env,
                                      capture_output=True, text=True).stdout.strip()
            if not imported.startswith(str(tree)):
                status, failed = "ERROR", f"the copy's package was not imported ({imported})"
        return status, failed, seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=None, help="comma-separated fault names")
    ap.add_argument("--list", action="store_true", help="list the faults and exit")
    args = ap.parse_args(argv)
    faults = FAULTS
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {f.name for f in FAULTS}
        if unknown:
            ap.error(f"unknown fault(s) {sorted(unknown)}; known: {[f.name for f in FAULTS]}")
        faults = tuple(f for f in FAULTS if f.name in wanted)
    if args.list:
        for f in faults:
            print(f"{f.name:<28} {f.what} ({f.file}; tests: {', '.join(f.tests)})")
        return 0
    caught = 0
    for f in faults:
        status, detail, seconds = run_fault(f)
        caught += status == "CAUGHT"
        print(f"{status:<7} {f.name:<28} {seconds:6.0f} s  {f.what}\n        {detail}",
              flush=True)
    print(f"faults_caught={caught}/{len(faults)}")
    return 0 if caught == len(faults) else 1


if __name__ == "__main__":
    raise SystemExit(main())
