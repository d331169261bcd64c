"""Weighted minibatches (`grokverify.engine.sampling`) and the gradient_sampling intervention
(paper 1's Appendix A rule, p_i ∝ exp(L_i²/γ)): exact per-example gradient norms, the weights,
the draws, the loop's horizon seam, and a seed's record the same alone and in any batch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import ADD7, TOY6, make_exp
from scipy import stats

from grokverify.claim.experiment import ExperimentSpec
from grokverify.engine import loop, sampling
from grokverify.engine.batched import BatchedModel, plain_copy
from grokverify.engine.data import SeedData
from grokverify.engine.loop import SeedTrainer, Shard, train_seeds
from grokverify.engine.sampling import (
    WeightedBatches,
    example_grad_sq_norms,
    sampling_weights,
    weight_summary,
)
from grokverify.engine.streams import stream_seed

MLP = {"kind": "embed_mlp", "d": 8, "hidden": 12}
TRAIN = {"steps": 40, "eval_interval": 10, "batch_size": 8, "early_stop": False}
SAMPLING = {"name": "gradient_sampling", "every": 7, "gamma_relative": 1.0}


def _exp(interventions: list[dict], task: dict | None = None, model: dict | None = None,
         training: dict | None = None) -> ExperimentSpec:
    return make_exp(task or ADD7, model or MLP, {"name": "adamw", "lr": 0.02, "weight_decay": 0.1},
                    training or TRAIN, interventions=interventions)


def _reference_sq_norms(model: torch.nn.Module, a: torch.Tensor, b: torch.Tensor,
                        y: torch.Tensor) -> np.ndarray:
    """‖∇θ ℓ_i‖² row by row: one plain forward and loss.backward() per row, the loss written out
    here (cross-entropy, or the squared distance to the class's target)."""
    out = []
    for i in range(len(y)):
        model.zero_grad()
        logits = model(a[i:i + 1], b[i:i + 1])
        targets = getattr(model, "targets", None)
        if targets is None:
            loss = F.cross_entropy(logits, y[i:i + 1])
        else:
            loss = ((logits - targets[y[i:i + 1]]) ** 2).mean()
        loss.backward()
        out.append(sum(float((p.grad.double() ** 2).sum()) for p in model.parameters()))
    return np.array(out)


@pytest.mark.parametrize("task,model", [
    (ADD7, MLP),
    (TOY6, {"kind": "toy_sum", "hidden": 10, "emb_dim": 2, "output": "regression"}),
    (ADD7, {"kind": "scalar_mlp", "hidden": 10}),
])
def test_example_gradient_norms_equal_per_row_backward(task: dict, model: dict,
                                                       monkeypatch) -> None:
    """Per-seed L_i² of every training row against per-row loss.backward() on each seed's plain
    module, in float64; rows in several blocks."""
    exp = _exp([], task, model, None)
    data = SeedData(exp.task, [0, 1, 2], torch.device("cpu"))
    batched = BatchedModel(exp.model, data.shape, [0, 1, 2], torch.float64)
    monkeypatch.setattr(sampling, "_GRAD_ELEMENTS", 1)  # one row per block
    got = example_grad_sq_norms(batched, *data.train).numpy()
    assert got.shape == (3, data.n_train) and got.dtype == np.float64
    for s in range(3):
        want = _reference_sq_norms(plain_copy(batched, s), *(t[s] for t in data.train))
        np.testing.assert_allclose(got[s], want, rtol=1e-10)
    assert not np.allclose(got[0], got[1])  # each seed its own parameters
    monkeypatch.setattr(sampling, "_GRAD_ELEMENTS", 1 << 22)  # all rows in one block
    np.testing.assert_allclose(example_grad_sq_norms(batched, *data.train).numpy(), got,
                               rtol=1e-12)


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()


def test_weights_are_the_softmax_of_squared_norms_over_gamma() -> None:
    rng = np.random.default_rng(0)
    sq = rng.gamma(0.5, 40.0, size=(3, 50))  # heavy-tailed, values up to ~10^2
    sq[2] *= 1e-6  # a seed whose gradients have shrunk by 10^6
    for gamma in (0.5, 30.0):
        got = sampling_weights(torch.as_tensor(sq), gamma=gamma).numpy()
        for s in range(3):
            np.testing.assert_allclose(got[s], _softmax(sq[s] / gamma), rtol=1e-12)
    got = sampling_weights(torch.as_tensor(sq), gamma_relative=0.7).numpy()
    for s in range(3):
        np.testing.assert_allclose(got[s], _softmax(sq[s] / (0.7 * sq[s].mean())), rtol=1e-12)
    # relative γ is scale-free: the shrunken seed keeps the shape of its weights
    scaled = sampling_weights(torch.as_tensor(sq[2:] * 1e6), gamma_relative=0.7).numpy()
    np.testing.assert_allclose(got[2], scaled[0], rtol=1e-12)
    # stable where exp overflows: L²/γ up to ~10^4
    huge = sampling_weights(torch.as_tensor(sq), gamma=0.01).numpy()
    assert np.isfinite(huge).all() and np.allclose(huge.sum(axis=1), 1.0)
    assert (huge.argmax(axis=1) == sq.argmax(axis=1)).all()


def test_a_huge_gamma_gives_uniform_weights_and_bad_seeds_fall_back_to_uniform() -> None:
    sq = torch.tensor([[1.0, 4.0, 9.0, 0.0], [2.0, float("nan"), 1.0, 1.0],
                       [0.0, 0.0, 0.0, 0.0], [1.0, float("inf"), 2.0, 3.0]])
    uniform = np.full(4, 0.25)
    wide = sampling_weights(sq[:1], gamma=1e6).numpy()[0]
    np.testing.assert_allclose(wide, uniform, rtol=1e-5)
    assert not np.allclose(wide, uniform, rtol=1e-12)  # the rule, not a shortcut
    rel = sampling_weights(sq, gamma_relative=1.0).numpy()
    for s in (1, 2, 3):  # non-finite L (a diverging seed); all L = 0 under a relative γ
        np.testing.assert_array_equal(rel[s], uniform)
    summary = weight_summary(torch.tensor([[0.25] * 4, [1.0, 0.0, 0.0, 0.0]]))
    np.testing.assert_allclose(summary["ess_share"].numpy(), [1.0, 0.25])
    np.testing.assert_allclose(summary["max_weight"].numpy(), [1.0, 4.0])
    with pytest.raises(ValueError, match="exactly one of gamma, gamma_relative"):
        sampling_weights(sq, gamma=1.0, gamma_relative=1.0)


def test_draws_follow_the_weights_and_each_seed_its_own_stream() -> None:
    """With fixed weights, the positions' frequencies pass a chi-square test against p (the
    generators are seeded, so this is a fixed check, not a flaky one); a seed's positions are
    the same drawn alone, beside other seeds, and in blocks of any size."""
    n, batch = 6, 5
    p = torch.tensor([[0.4, 0.3, 0.1, 0.1, 0.05, 0.05], [1 / 6] * 6, [0.0, 0.5, 0.5, 0, 0, 0]],
                     dtype=torch.float64)

    def sampler(seeds: list[int], rows: list[int]) -> WeightedBatches:
        return WeightedBatches(seeds, batch, "ctx", torch.device("cpu"), 10_000,
                               lambda step: p[rows])

    together = sampler([0, 1, 2], [0, 1, 2]).take(2000)  # (steps, S, batch)
    assert together.shape == (2000, 3, batch)
    for s in range(3):
        counts = np.bincount(together[:, s].reshape(-1).numpy(), minlength=n)
        support = p[s].numpy() > 0
        assert (counts[~support] == 0).all()
        expected = p[s].numpy()[support] * counts.sum()
        assert stats.chisquare(counts[support], expected).pvalue > 1e-3
    alone = sampler([1], [1])
    pieces = torch.cat([alone.take(k) for k in (1, 7, 992, 1000)])
    assert torch.equal(pieces[:, 0], together[:, 1])
    gen = torch.Generator().manual_seed(stream_seed(1, "sample", "ctx"))  # the named stream
    first = torch.multinomial(p[1], batch, replacement=True, generator=gen)
    assert torch.equal(pieces[0, 0], first)
    other = sampler([5, 1], [0, 1]).take(2000)
    assert torch.equal(other[:, 1], together[:, 1]) and not torch.equal(other[:, 0],
                                                                         together[:, 0])


def test_the_loop_respects_the_horizon_and_draws_from_the_latest_weights(monkeypatch) -> None:
    """Weights recomputed at step k, from the parameters after k updates, decide the rows of
    update k+1 (and of every update until the next recomputation), however the loop cuts its
    blocks: here each recomputation puts all weight on one row, a different one each time."""
    monkeypatch.setattr(loop, "_BLOCK_ELEMENTS", 8 * 3 * 2 * 100)  # blocks of 100 steps
    exp = _exp([SAMPLING])
    shard = Shard(exp, [0, 1], torch.device("cpu"))
    n = shard.data.n_train
    calls: list[tuple[int, int]] = []

    def refresh(step: int) -> torch.Tensor:
        calls.append((step, shard.step))
        p = torch.zeros(2, n, dtype=torch.float64)
        p[:, (step // 7) % n] = 1.0
        return p

    sampler = WeightedBatches([0, 0], shard.batch, "ctx", torch.device("cpu"), 7, refresh)
    shard.batches = sampler
    seen: list[torch.Tensor] = []
    take = sampler.take
    monkeypatch.setattr(sampler, "take", lambda k: seen.append(take(k)) or seen[-1])
    shard.train(17)
    shard.train(13)  # a call that starts mid-period
    assert calls == [(0, 0), (7, 7), (14, 14), (21, 21), (28, 28)]
    rows = torch.cat(seen)  # (30, S, batch)
    for step in range(30):
        assert (rows[step] == (step // 7) % n).all(), step


def test_a_seed_alone_equals_the_seed_in_a_batch(monkeypatch) -> None:
    """The whole record (curves, the weights' summaries, events) is the same to the last bit in
    any chunk of seeds, alone, and on several CPU shards."""
    monkeypatch.setattr(loop, "_EVAL_ROWS", 5)
    exp = _exp([SAMPLING])
    batched = {r["seed"]: r for r in train_seeds(exp, [0, 1, 2, 3])}
    for seeds, workers in (([2], 1), ([3, 0], 1), ([1, 2, 3, 0], 2)):
        with SeedTrainer(exp, seeds, workers=workers) as trainer:
            loop.run_to_budget(trainer, exp.training)
            for rec in trainer.results():
                assert rec == batched[rec["seed"]], (seeds, rec["seed"])
    rec = batched[0]
    assert rec["events"] == {"gradient_sampling": 0}
    assert rec["curves"]["gradient_sampling.ess_share"]["steps"] == [0, 7, 14, 21, 28, 35]
    uniform = {r["seed"]: r for r in train_seeds(_exp([]), [0])}[0]
    assert rec["curves"]["train_loss"]["values"][0] == uniform["curves"]["train_loss"]["values"][0]
    assert rec["curves"]["train_loss"] != uniform["curves"]["train_loss"]  # other minibatches


def test_recorded_summary_at_step_0_matches_a_reference_from_the_initial_model() -> None:
    exp = _exp([{"name": "gradient_sampling", "every": 50, "gamma": 0.05}])
    (rec,) = train_seeds(exp, [1], dtype=torch.float64)
    data = SeedData(exp.task, [1], torch.device("cpu"))
    model = BatchedModel(exp.model, data.shape, [1, 1], torch.float64)  # the initial weights
    sq = _reference_sq_norms(plain_copy(model, 0), *(t[0] for t in data.train))
    p = _softmax(sq / 0.05)
    curves = rec["curves"]
    assert curves["gradient_sampling.ess_share"]["steps"] == [0]
    np.testing.assert_allclose(curves["gradient_sampling.ess_share"]["values"][0],
                               1 / (len(p) * (p ** 2).sum()), rtol=1e-9)
    np.testing.assert_allclose(curves["gradient_sampling.max_weight"]["values"][0],
                               len(p) * p.max(), rtol=1e-9)
    assert curves["gradient_sampling.max_weight"]["values"][0] > 1.5  # far from uniform
    # the spec names what the engine records: checks and value metrics read these curves
    assert set(exp.interventions[0].curves()) <= set(curves)
    assert set(exp.interventions[0].curves()) <= set(exp.curves())


def test_full_batch_draws_as_many_rows_as_the_training_set_with_replacement() -> None:
    exp = _exp([SAMPLING], training={**TRAIN, "batch_size": None})
    shard = Shard(exp, [0, 1], torch.device("cpu"))
    assert isinstance(shard.batches, WeightedBatches)
    rows = shard.batches.take(7)
    assert rows.shape == (7, 2, shard.data.n_train)
    assert any(len(set(r.tolist())) < shard.data.n_train for r in rows[:, 0])  # repeats


def test_bad_declarations_are_refused() -> None:
    for bad in ({"name": "gradient_sampling", "every": 5},
                {"name": "gradient_sampling", "every": 5, "gamma": 1.0, "gamma_relative": 1.0}):
        with pytest.raises(ValueError, match="exactly one of gamma, gamma_relative"):
            _exp([bad])
    for bad in ({**SAMPLING, "every": 0}, {**SAMPLING, "gamma_relative": 0.0},
                {"name": "gradient_sampling", "every": 5, "gamma": -1.0}):
        with pytest.raises(ValueError, match="greater than or equal"):
            _exp([bad])
    with pytest.raises(ValueError, match="declared twice"):
        Shard(_exp([SAMPLING, SAMPLING]), [0], torch.device("cpu"))
