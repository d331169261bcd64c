"""The task specs (grokverify.claim.tasks): an image task's sizes and shared memory, and the
operations refused for a task they are not defined on."""

from __future__ import annotations

import pytest
from conftest import Has
from pydantic import ValidationError

from grokverify.claim.tasks import ImageTaskSpec, TaskSpec


def test_an_image_tasks_rows_and_the_memory_its_seeds_share() -> None:
    task = ImageTaskSpec(dataset="mnist", n_train=1000, n_val=500)
    assert task.sizes() == (1500, 1000, 500)
    assert ImageTaskSpec(dataset="mnist", n_train=1000).sizes() == (11_000, 1000, 10_000)
    # three seeds' own rows, as float32 pixels; many seeds: at most the files' 70,000 rows
    assert task.table_bytes(3) == 4 * 784 * 4500
    assert task.table_bytes(100) == 4 * 784 * 70_000


def test_an_arithmetic_task_shares_no_table_between_seeds() -> None:
    assert TaskSpec(op="add", p=31, train_frac=0.5).table_bytes(20) == 0


def test_division_needs_a_prime_modulus() -> None:
    words = "op 'div' needs modular: true and a prime p (modular inverse)"
    for p, modular in ((31, False), (33, True)):
        with pytest.raises(ValidationError) as err:
            TaskSpec(op="div", p=p, train_frac=0.5, modular=modular)
        assert err.value.errors()[0]["msg"] == Has(words)
    assert TaskSpec(op="div", p=31, train_frac=0.5, modular=True).p == 31
