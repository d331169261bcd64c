"""Task operations and split strategies a claim can name (implemented in `grokverify.tasks`), and
the split sizes, counted without building the pairs so claims are checked when they load."""

from __future__ import annotations

from typing import Protocol

OP_NAMES = ("add", "sub", "mul", "div", "sq_sum")
SPLIT_NAMES = ("random", "uniform", "skewed")


class _Task(Protocol):
    op: str
    p: int
    unordered: bool
    train_frac: float
    test_frac: float | None


def pair_count(task: _Task) -> int:
    """How many (a, b) pairs the task defines: unordered tasks keep a <= b, division drops b = 0
    (`grokverify.tasks.pairs_for` builds them; a test checks the two agree)."""
    p = task.p
    n = p * (p + 1) // 2 if task.unordered else p * p
    if task.op == "div":
        n -= 1 if task.unordered else p
    return n


def split_sizes(task: _Task) -> tuple[int, int, int]:
    """(pairs, training pairs, validation pairs) of a task, the same for every seed."""
    n = pair_count(task)
    n_test = int(round(task.test_frac * n)) if task.test_frac is not None else 0
    # Rounding both fractions can overshoot N by one (p=5, 0.7 + 0.3): cap at what is left.
    n_train = min(int(round(task.train_frac * n)), n - n_test)
    return n, n_train, n_test if task.test_frac is not None else n - n_train
