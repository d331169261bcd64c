"""Fault injection for the test head of tests/test_run_ray.py, and nothing else.

Only that head's processes have this folder on PYTHONPATH (with GV_TEST_FAULTS naming a
folder), so the product carries no test hook. Once a worker imports `grokverify.engine.loop`,
its `train_seeds` is wrapped to:
- write `<folder>/pids/<pid>` (the seeds, as JSON) when a task starts training, so a test can
  kill the worker of a running task from outside, and append the seeds to `<folder>/started`
  (one line a task attempt: a reused worker overwrites its pid's file);
- raise RuntimeError("injected fault") when `<folder>/raise.json` exists and every field it
  names (nested, as in the experiment's JSON) has that value in the experiment: one arm fails
  for real, inside a Ray worker.
Nothing is imported eagerly: every Python process of the head (agents, monitors) reads this.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

TARGET = "grokverify.engine.loop"


def _matches(want: Any, got: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and all(_matches(v, got.get(k)) for k, v in want.items())
    return bool(want == got)


def _patch(loop: ModuleType, folder: Path) -> None:
    real = loop.train_seeds

    def train_seeds(exp: Any, seeds: list[int], *args: Any, **kwargs: Any) -> Any:
        (folder / "pids").mkdir(parents=True, exist_ok=True)
        (folder / "pids" / str(os.getpid())).write_text(json.dumps(list(seeds)))
        with (folder / "started").open("a") as log:
            log.write(json.dumps(list(seeds)) + "\n")
        rule = folder / "raise.json"
        if rule.exists() and _matches(json.loads(rule.read_text()),
                                      exp.model_dump(mode="json")):
            raise RuntimeError(f"injected fault for seeds {list(seeds)}")
        return real(exp, seeds, *args, **kwargs)

    loop.train_seeds = train_seeds


class _Finder(importlib.abc.MetaPathFinder):
    """Finds TARGET with the other finders, then patches it right after it executes."""

    def __init__(self, folder: Path):
        self.folder = folder

    def find_spec(self, name: str, path: Any, target: Any = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if name != TARGET:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                _patch_after_exec(spec.loader, self.folder)
                return spec
        return None


def _patch_after_exec(loader: Any, folder: Path) -> None:
    run = loader.exec_module

    def exec_module(module: ModuleType) -> None:
        run(module)
        _patch(module, folder)

    loader.exec_module = exec_module


if os.environ.get("GV_TEST_FAULTS"):
    sys.meta_path.insert(0, _Finder(Path(os.environ["GV_TEST_FAULTS"])))
