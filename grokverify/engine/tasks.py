"""Arithmetic tasks and their train/test splits, reproducible from the task spec and a seed.
An operation (`grokverify.kinds.TASKS`) maps integer arrays (a, b, p) to raw results, reduced
mod p or shifted to start at 0; a split strategy (`SPLITS`) picks the training pairs."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from grokverify.claim.tasks import (
    ImageTaskSpec,
    TaskSpec,
    split_sizes,  # one count, shared with the schema's checks
)
from grokverify.engine.streams import numpy_rng
from grokverify.kinds import SPLITS, TASKS


def _mod_inverse(b: np.ndarray, p: int) -> np.ndarray:
    return np.array([pow(int(x), -1, p) for x in b], dtype=np.int64)


def add(a: np.ndarray, b: np.ndarray, p: int) -> np.ndarray:
    return a + b


def sub(a: np.ndarray, b: np.ndarray, p: int) -> np.ndarray:
    return a - b


def mul(a: np.ndarray, b: np.ndarray, p: int) -> np.ndarray:
    return a * b


def sq_sum(a: np.ndarray, b: np.ndarray, p: int) -> np.ndarray:
    return a * a + b * b


def div(a: np.ndarray, b: np.ndarray, p: int) -> np.ndarray:
    """Modulo a prime; `pairs_for` leaves b = 0 out."""
    return a * _mod_inverse(b, p)


# S3's elements: the permutations of (0, 1, 2) in lexicographic order, 0 the identity
S3 = list(itertools.permutations(range(3)))
# S3_TABLE[a, b]: the element a ∘ b, (a ∘ b)(i) = a(b(i))
S3_TABLE = np.array([[S3.index(tuple(f[g[i]] for i in range(3))) for g in S3] for f in S3],
                    dtype=np.int64)


def s3(a: np.ndarray, b: np.ndarray, p: int) -> np.ndarray:
    return S3_TABLE[a, b]


# S5's elements in lexicographic order (0 the identity); S5_COMPOSE[a, b] = a ∘ b as for S3
S5 = list(itertools.permutations(range(5)))
_S5_INDEX = {perm: i for i, perm in enumerate(S5)}
S5_COMPOSE = np.array([[_S5_INDEX[tuple(f[g[i]] for i in range(5))] for g in S5] for f in S5],
                      dtype=np.int64)
S5_INVERSE = np.array([_S5_INDEX[tuple(sorted(range(5), key=f.__getitem__))] for f in S5],
                      dtype=np.int64)


def s5(a: np.ndarray, b: np.ndarray, p: int) -> np.ndarray:
    return S5_COMPOSE[a, b]


def s5_conj(a: np.ndarray, b: np.ndarray, p: int) -> np.ndarray:
    return S5_COMPOSE[S5_COMPOSE[a, b], S5_INVERSE[a]]


@dataclass(frozen=True)
class Dataset:
    """All pairs of a task with labels, and one seed's split into train and validation rows."""

    a: np.ndarray  # (N,) first operand of every pair
    b: np.ndarray  # (N,) second operand
    y: np.ndarray  # (N,) class label
    n_classes: int
    vocab: int  # token count for models with embeddings: p operands + op token + "=" token
    train_idx: np.ndarray  # rows used for training, in a fixed order
    val_idx: np.ndarray  # rows held out for evaluation


def pairs_for(task: TaskSpec) -> tuple[np.ndarray, np.ndarray]:
    """Every (a, b) the task defines; unordered tasks keep a ≤ b, division drops b = 0."""
    a, b = np.meshgrid(np.arange(task.p), np.arange(task.p), indexing="ij")
    a, b = a.ravel(), b.ravel()
    keep = np.ones_like(a, dtype=bool)
    if task.unordered:
        keep &= a <= b
    if TASKS[task.op].nonzero_b:
        keep &= b != 0
    return a[keep].astype(np.int64), b[keep].astype(np.int64)


def labels_for(task: TaskSpec, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int]:
    raw = TASKS.implementation(task.op)(a, b, task.p)
    if task.modular:
        return raw % task.p, task.p
    shifted = raw - raw.min()
    return shifted, int(shifted.max()) + 1


def split_random(task: TaskSpec, pool: np.ndarray, a: np.ndarray, n_train: int,
                  rng: np.random.Generator, b: np.ndarray) -> np.ndarray:
    return rng.permutation(pool)[:n_train]


def split_uniform(task: TaskSpec, pool: np.ndarray, a: np.ndarray, n_train: int,
                   rng: np.random.Generator, b: np.ndarray) -> np.ndarray:
    """Round-robin over values of a (random order each round); for each, the pair whose b value
    is least used so far. Both operands end up as evenly represented as the pool allows."""
    by_value: dict[int, list[int]] = {}
    for row in rng.permutation(pool):
        by_value.setdefault(int(a[row]), []).append(int(row))
    b_count = np.zeros(int(b.max()) + 1, dtype=np.int64)
    chosen: list[int] = []
    while len(chosen) < n_train:
        for v in rng.permutation([v for v in by_value if by_value[v]]):
            if len(chosen) == n_train:
                break
            rows = by_value[int(v)]
            pick = min(range(len(rows)), key=lambda i: b_count[b[rows[i]]])
            row = rows.pop(pick)
            b_count[b[row]] += 1
            chosen.append(row)
    return np.array(chosen, dtype=np.int64)


def split_skewed(task: TaskSpec, pool: np.ndarray, a: np.ndarray, n_train: int,
                  rng: np.random.Generator, b: np.ndarray) -> np.ndarray:
    """Weighted sampling without replacement, weight exp(-skew · rank(a)/p): low values of a
    are over-represented in training and high values starved (Efraimidis–Spirakis keys)."""
    weights = np.exp(-task.skew * a[pool] / task.p)
    keys = rng.random(len(pool)) ** (1.0 / weights)
    return pool[np.argsort(-keys, kind="stable")[:n_train]]


def _split_rng(task: TaskSpec | ImageTaskSpec, seed: int) -> np.random.Generator:
    """The split stream of the task's split seed (the trial seed unless the task fixes
    `split_seed`), keyed by the task alone: two arms with the same task and seed share data."""
    split_seed = seed if task.split_seed is None else task.split_seed
    return numpy_rng(split_seed, "split", task.canonical())


def build_dataset(task: TaskSpec, seed: int) -> Dataset:
    """Every pair of the task, labelled, and the seed's split (`_split_rng`)."""
    a, b = pairs_for(task)
    y, n_classes = labels_for(task, a, b)
    n, n_train, n_test = split_sizes(task)
    rng = _split_rng(task, seed)
    order = rng.permutation(n)
    if task.test_frac is None:
        # Paper 2's convention: train on a fraction, validate on every other pair.
        train_idx = SPLITS.implementation(task.split)(task, order, a, n_train, rng, b)
    else:
        test_idx, pool = order[:n_test], order[n_test:]
        train_idx = SPLITS.implementation(task.split)(task, pool, a, n_train, rng, b)
    train_idx = np.sort(train_idx)
    val_mask = np.ones(n, dtype=bool)
    val_mask[train_idx] = False
    if task.test_frac is not None:
        val_mask[:] = False
        val_mask[test_idx] = True
    return Dataset(a=a, b=b, y=y, n_classes=n_classes, vocab=task.p + 2,
                   train_idx=train_idx, val_idx=np.flatnonzero(val_mask))


def image_split(task: ImageTaskSpec, seed: int, train_rows: int,
                test_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """One seed's training rows of the training file and validation rows of the test file,
    sorted, from its split stream (`_split_rng`)."""
    if task.n_train > train_rows or (task.n_val or 0) > test_rows:
        raise ValueError(f"{task.dataset}: the task draws {task.n_train} training and "
                         f"{task.n_val or test_rows} validation images; the files hold "
                         f"{train_rows} and {test_rows}")
    rng = _split_rng(task, seed)
    train = np.sort(rng.choice(train_rows, task.n_train, replace=False))
    val = np.arange(test_rows) if task.n_val is None else np.sort(
        rng.choice(test_rows, task.n_val, replace=False))
    return train.astype(np.int64), val.astype(np.int64)
