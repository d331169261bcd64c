"""Task operations and split strategies a claim can name (implemented in `grokverify.tasks`), and
the split sizes and label counts, counted without building the pairs so claims are checked when
they load."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

# operation -> how many raw results its ordered pairs of 0..p-1 span (max - min + 1): the
# classes of a non-modular task (division is modular only)
RESULT_SPAN: dict[str, Callable[[int], int]] = {
    "add": lambda p: 2 * p - 1,
    "sub": lambda p: 2 * p - 1,
    "mul": lambda p: (p - 1) ** 2 + 1,
    "div": lambda p: p,
    "sq_sum": lambda p: 2 * (p - 1) ** 2 + 1,
    "s3": lambda p: p,  # the composition of S3's 6 elements (p = 6), each result one of them
}
OP_NAMES = tuple(RESULT_SPAN)
SPLIT_NAMES = ("random", "uniform", "skewed")


class _Task(Protocol):
    op: str
    p: int
    modular: bool
    unordered: bool
    train_frac: float
    test_frac: float | None


def class_count(task: _Task) -> int:
    """The number of labels: p when modular, else the results' span (at most: an unordered
    task's span can be smaller; `grokverify.tasks.labels_for` counts them, a test checks the
    bound)."""
    return task.p if task.modular else RESULT_SPAN[task.op](task.p)


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


# ---------------------------------------------------------------- image datasets


@dataclass(frozen=True)
class ImageDataset:
    """A dataset of images read from the user's own copy of its standard IDX files
    (`grokverify.datasets`): nothing is downloaded and nothing is stored in the repository."""

    features: int  # pixels of one image, flattened
    classes: int
    train_rows: int  # rows of the standard training file
    test_rows: int  # rows of the standard test file
    files: dict[str, tuple[str, str]]  # part ("train", "test") -> (images file, labels file)
    where: str  # where the files come from, for the message when they are missing


IMAGE_DATASETS: dict[str, ImageDataset] = {
    "mnist": ImageDataset(
        features=28 * 28, classes=10, train_rows=60_000, test_rows=10_000,
        files={"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
               "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")},
        where="yann.lecun.com/exdb/mnist or a mirror of it"),
}
