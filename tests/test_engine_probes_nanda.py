"""fourier_logits (grokverify/engine/probes.py): Nanda et al.'s restricted and excluded losses
against a numpy computation written from their released code's definitions, known answers on
logits made of chosen frequencies, the task refusals, and a seed batched == alone in training."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import make_exp, records_by_seed

from grokverify.claim.probes import FourierLogitsSpec
from grokverify.claim.tasks import TaskSpec
from grokverify.engine.probes import fourier_logits_of


def _reference(logits: np.ndarray, train: np.ndarray, p: int, k: int) -> tuple[float, ...]:
    """One seed, as the released code writes it: a 1-D Fourier basis of unit vectors, the
    cos(w(x + y)) direction (cos x cos y - sin x sin y) / √2 and the sin one (sin x cos y +
    cos x sin y) / √2, each logit column projected on them; the k strongest frequencies."""
    x = np.arange(p)
    basis = {}
    for f in range(1, (p - 1) // 2 + 1):
        c, s = np.cos(2 * np.pi * f * x / p), np.sin(2 * np.pi * f * x / p)
        basis[f] = (c / np.linalg.norm(c), s / np.linalg.norm(s))
    parts = {}
    for f, (c, s) in basis.items():
        cos_dir = (np.outer(c, c) - np.outer(s, s)).ravel() / math.sqrt(2)
        sin_dir = (np.outer(s, c) + np.outer(c, s)).ravel() / math.sqrt(2)
        parts[f] = sum(np.outer(u, u @ logits) for u in (cos_dir, sin_dir))
    power = {f: float((part ** 2).sum()) for f, part in parts.items()}
    key = sorted(power, key=power.get, reverse=True)[:k]
    restricted = sum(parts[f] for f in key)
    labels = np.array([(i + j) % p for i in range(p) for j in range(p)])

    def ce(z: np.ndarray, rows: np.ndarray) -> float:
        z = z[rows]
        logp = z - z.max(1, keepdims=True)
        logp -= np.log(np.exp(logp).sum(1, keepdims=True))
        return float(-logp[np.arange(len(rows)), labels[rows]].mean())

    corrected = restricted + (logits - restricted).mean(0, keepdims=True)
    share = sum(power[f] for f in key) / float(((logits - logits.mean(0)) ** 2).sum())
    return ce(corrected, np.arange(p * p)), ce(logits - restricted, train), share


def test_the_losses_equal_the_released_codes_definitions_seed_by_seed() -> None:
    rng = np.random.default_rng(0)
    p, k = 11, 3
    logits = rng.normal(size=(3, p * p, p))
    train = np.stack([rng.choice(p * p, size=40, replace=False) for _ in range(3)])
    got = fourier_logits_of(torch.as_tensor(logits), torch.as_tensor(train), p, k)
    for s in range(3):
        want = _reference(logits[s], train[s], p, k)
        np.testing.assert_allclose([got["fourier_logits.restricted_loss"][s].item(),
                                    got["fourier_logits.excluded_loss"][s].item(),
                                    got["fourier_logits.key_share"][s].item()], want,
                                   rtol=1e-10)


def test_logits_of_two_frequencies_are_kept_whole_and_excluded_to_chance() -> None:
    """L = 4 cos(w_3 (a + b - c)) + 2 cos(w_5 (a + b - c)): k = 2 keeps all of it (share 1,
    restricted loss = L's own loss) and removing it leaves zero logits (loss ln p); k = 1 keeps
    frequency 3, the stronger."""
    p = 13
    a, b, c = np.meshgrid(np.arange(p), np.arange(p), np.arange(p), indexing="ij")
    w = 2 * np.pi / p
    logits = (4 * np.cos(w * 3 * (a + b - c)) + 2 * np.cos(w * 5 * (a + b - c))).reshape(
        1, p * p, p)
    train = torch.arange(0, p * p, 3).view(1, -1)
    both = fourier_logits_of(torch.as_tensor(logits), train, p, 2)
    assert both["fourier_logits.key_share"].item() == pytest.approx(1.0, abs=1e-12)
    assert both["fourier_logits.excluded_loss"].item() == pytest.approx(math.log(p), abs=1e-9)
    own = torch.as_tensor(logits[0]).log_softmax(1)
    labels = (torch.arange(p * p) // p + torch.arange(p * p) % p) % p
    own_loss = -own[torch.arange(p * p), labels].mean().item()
    assert both["fourier_logits.restricted_loss"].item() == pytest.approx(own_loss, rel=1e-10)
    one = fourier_logits_of(torch.as_tensor(logits), train, p, 1)
    assert one["fourier_logits.key_share"].item() == pytest.approx(16 / 20, rel=1e-10)


@pytest.mark.parametrize(("task", "k", "words"), [
    ({"op": "mul", "p": 11}, 2, "needs modular addition"),
    ({"op": "add", "p": 10, "modular": False, "unordered": True}, 2, "needs modular addition"),
    ({"op": "add", "p": 12}, 2, "odd"),
    ({"op": "add", "p": 11}, 6, "k = 6 exceeds the 5 frequencies"),
])
def test_tasks_it_cannot_measure_are_refused(task: dict, k: int, words: str) -> None:
    spec = FourierLogitsSpec.model_validate({"name": "fourier_logits", "every": 10, "k": k})
    why = spec.cannot_measure(TaskSpec.model_validate({"train_frac": 0.5, **task}))
    assert why is not None and words in why


def test_a_seed_measures_the_same_alone_and_batched_in_training() -> None:
    exp = make_exp({"op": "add", "p": 7, "train_frac": 0.6},
                   {"kind": "transformer", "d": 8, "layers": 1, "heads": 2, "mlp": 16,
                    "norm": "none", "tokens": "a_b_eq", "positions": "learned",
                    "mlp_bias": True, "init": "normal"},
                   {"name": "adamw", "lr": 0.01, "weight_decay": 1.0},
                   {"steps": 20, "eval_interval": 10, "early_stop": False},
                   probes=[{"name": "fourier_logits", "every": 10, "k": 2}])
    batched, alone = records_by_seed(exp, [0, 1, 2]), records_by_seed(exp, [1])
    assert alone[1] == batched[1]
    curves = batched[0]["curves"]
    assert curves["fourier_logits.excluded_loss"]["steps"] == [0, 10, 20]
    assert all(0 < v <= 1 for v in curves["fourier_logits.key_share"]["values"])
