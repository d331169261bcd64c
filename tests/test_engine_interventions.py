"""Interventions (`grokverify.engine.interventions`), each per seed and nothing else:
freeze_embeddings and rescale_embedding against plain training and their own definitions;
adaptive_lr_ratio (paper 1's Prop. 4.1 recomputed in training) against a plain run at the same
fixed c and a plain per-seed loop that sets the embedding lr itself (numpy σmax, scipy's
hypergeometric f_E), the same alone and batched, and its order among interventions."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from conftest import ADD7, make_exp
from reference import PlainTrainer, train_plain
from scipy.stats import hypergeom

from grokverify.claim.experiment import ExperimentSpec
from grokverify.engine.batched import BatchedModel
from grokverify.engine.loop import SeedTrainer, train_seeds
from grokverify.engine.models import DataShape, mean_loss_of
from grokverify.engine.optimizers import OPTIMIZERS, group_settings
from grokverify.engine.probes import sigma_max_of
from grokverify.engine.tasks import build_dataset

SHAPE = DataShape(p=7, vocab=9, n_classes=7)
MLP = {"kind": "embed_mlp", "d": 8, "hidden": 12}
TRAIN = {"steps": 40, "eval_interval": 10, "batch_size": 8, "early_stop": False}
OPTIMIZERS_TESTED = {
    "adamw": {"name": "adamw", "lr": 0.02, "weight_decay": 0.1},
    "adam": {"name": "adam", "lr": 0.02, "weight_decay": 0.01},
    "sgd": {"name": "sgd", "lr": 0.05, "momentum": 0.9, "weight_decay": 0.01},
}


def _exp(interventions: list[dict], optimizer: dict | None = None, c0: float | None = 1.0,
         model: dict | None = None, training: dict | None = None) -> ExperimentSpec:
    """MLP on ADD7; the optimizer's emb_lr_mult is c0 (None: left out)."""
    opt = {**(optimizer or OPTIMIZERS_TESTED["adamw"])}
    if c0 is not None:
        opt["emb_lr_mult"] = c0
    return make_exp(ADD7, model or MLP, opt, training or TRAIN, interventions=interventions)


def _embedding(trainer: SeedTrainer) -> torch.Tensor:
    return torch.cat([s.model.param("embed.weight")[:s.n_real].detach().clone()
                      for s in trainer.shards])


# ---------------------------------------------------------------- freeze and rescale


def test_frozen_from_the_start_trains_like_a_plain_model_with_a_frozen_embedding() -> None:
    exp = _exp([{"name": "freeze_embeddings", "from_step": 0}], c0=3.0)
    initial = BatchedModel(exp.model, SHAPE, [0, 1]).param("embed.weight").detach()
    with SeedTrainer(exp, [0, 1], workers=1) as trainer:
        trainer.train(15)
        assert torch.equal(_embedding(trainer), initial)  # never moved, weight decay included
    engine = train_seeds(exp, [0, 1], dtype=torch.float64)
    for seed, rec in enumerate(engine):
        plain = train_plain(exp, seed, dtype=torch.float64, frozen_embedding=True)
        np.testing.assert_allclose(rec["curves"]["train_loss"]["values"], plain.train_loss,
                                   rtol=1e-9)
        assert rec["events"] == {"freeze_embeddings": 0}


def test_frozen_from_a_step_keeps_the_embedding_of_that_step() -> None:
    exp = _exp([{"name": "freeze_embeddings", "from_step": 12}], c0=3.0)
    free = _exp([], c0=3.0)
    with SeedTrainer(exp, [0, 1], workers=1) as trainer, \
            SeedTrainer(free, [0, 1], workers=1) as reference:
        trainer.train(12)
        reference.train(12)
        at_12 = _embedding(trainer)
        assert torch.equal(at_12, _embedding(reference))  # the same run until the freeze
        trainer.train(20)
        assert torch.equal(_embedding(trainer), at_12)
        w = trainer.shards[0].model.param("fc1.weight").detach().clone()
        trainer.train(1)
        assert not torch.equal(trainer.shards[0].model.param("fc1.weight"), w)  # W trains on


def test_frozen_by_a_condition_freezes_each_seed_at_its_own_evaluation() -> None:
    """Each seed's E is kept from the first evaluation at which its train accuracy reached τ;
    the event says when; seeds that have not reached it train their E on."""
    tau = 0.6
    exp = _exp([{"name": "freeze_embeddings", "when": {"curve": "train_acc", "at_least": tau}}],
               c0=3.0, training={**TRAIN, "steps": 60})
    with SeedTrainer(exp, [1, 0, 3], workers=1) as trainer:  # seed 0 stays below τ
        snapshots = {}
        trainer.record()
        for step in range(10, 61, 10):
            trainer.train(10)
            trainer.record()
            snapshots[step] = _embedding(trainer)
        records = trainer.results()
    frozen = 0
    for i, rec in enumerate(records):
        acc = rec["curves"]["train_acc"]
        reached = [s for s, v in zip(acc["steps"], acc["values"], strict=True) if v >= tau]
        at = rec["events"].get("freeze_embeddings")
        assert at == (reached[0] if reached else None)
        for step in range(10, 61, 10):
            if at is not None and step > at:  # held at its value of the freezing evaluation
                assert torch.equal(snapshots[step][i], snapshots[max(at, 10)][i]), (i, step)
            elif step > 10:  # still training
                assert not torch.equal(snapshots[step][i], snapshots[step - 10][i]), (i, step)
        frozen += at is not None and at < 60
    assert 0 < frozen < 3, "the test needs a seed that freezes mid-run and one that does not"


def test_rescale_embedding_by_a_factor_and_to_a_sigma_max() -> None:
    base = BatchedModel(_exp([], c0=3.0).model, SHAPE, [0, 1, 2])
    e0, w0 = base.param("embed.weight").detach(), base.param("fc1.weight").detach()
    cases = {
        "factor": ({"name": "rescale_embedding", "factor": 0.25}, None),
        "number": ({"name": "rescale_embedding", "sigma_max": 3.0}, torch.full((3,), 3.0)),
        "W": ({"name": "rescale_embedding", "sigma_max": "W"}, sigma_max_of(w0).float()),
    }
    for name, (spec, target) in cases.items():
        with SeedTrainer(_exp([spec], c0=3.0), [0, 1, 2], workers=1) as trainer:
            e = _embedding(trainer)
            events = [r["events"] for r in trainer.results()]
        assert events == [{"rescale_embedding": 0}] * 3
        if target is None:
            assert torch.equal(e, e0 * torch.tensor(0.25))
        else:
            torch.testing.assert_close(sigma_max_of(e).float(), target, rtol=1e-6, atol=0,
                                       msg=name)
            ratio = e / e0  # a rescaling: one factor per seed
            assert torch.allclose(ratio, ratio[:, :1, :1], rtol=1e-5), name


@pytest.mark.parametrize("intervention", [{"name": "freeze_embeddings", "from_step": 3},
                                          {"name": "rescale_embedding", "factor": 2.0}])
def test_an_intervention_on_the_embedding_is_refused_for_a_model_without_one(
        intervention: dict) -> None:
    with pytest.raises(ValueError, match="needs the token embedding matrix"):
        _exp([intervention], c0=None, model={"kind": "scalar_mlp", "hidden": 8})


# ---------------------------------------------------------------- adaptive_lr_ratio


def _adaptive(**kw: Any) -> dict:
    return {"name": "adaptive_lr_ratio", "every": kw.pop("every", 7), **kw}


def _params(trainer: SeedTrainer) -> dict[str, torch.Tensor]:
    (shard,) = trainer.shards
    return {k: v[:shard.n_real].detach().clone() for k, v in shard.model.params().items()}


def _trained(exp: ExperimentSpec, seeds: list[int], steps: int,
             dtype: torch.dtype = torch.float64) -> tuple[dict[str, torch.Tensor], list[dict]]:
    with SeedTrainer(exp, seeds, workers=1, dtype=dtype) as trainer:
        trainer.train(steps)
        trainer.record()  # hands the noted c_s to the records
        return _params(trainer), trainer.results()


@pytest.mark.parametrize("c0", [1.0, 3.0])  # 1: E shares W's parameter group
@pytest.mark.parametrize("opt", sorted(OPTIMIZERS_TESTED))
def test_a_fixed_c_trains_as_a_plain_run_with_that_embedding_lr_multiplier(
        opt: str, c0: float) -> None:
    """c clamped to [7, 7] from an optimizer at c0 equals the plain run at emb_lr_mult 7: the
    update is linear in lr and the optimizer state does not depend on lr (float64)."""
    fixed = _exp([_adaptive(c_min=7.0, c_max=7.0)], OPTIMIZERS_TESTED[opt], c0=c0)
    plain = _exp([], OPTIMIZERS_TESTED[opt], c0=7.0)
    got, records = _trained(fixed, [0, 1], 30)
    want, _ = _trained(plain, [0, 1], 30)
    for name in want:
        torch.testing.assert_close(got[name], want[name], rtol=1e-10, atol=1e-12, msg=name)
    for rec in records:
        assert rec["curves"]["adaptive_lr_ratio.c"] == {"steps": [0, 7, 14, 21, 28],
                                                        "values": [7.0] * 5}
        assert rec["events"] == {"adaptive_lr_ratio": 0}
    assert fixed.interventions[0].curves() == ["adaptive_lr_ratio.c"]
    assert "adaptive_lr_ratio.c" in fixed.curves()  # a check or value metric may read it


def _f_e(exp: ExperimentSpec, seed: int) -> float:
    """Mean over the tokens present of P(a batch of B of the N rows holds the token), from
    scipy's hypergeometric law."""
    data = build_dataset(exp.task, seed)
    a, b = data.a[data.train_idx], data.b[data.train_idx]
    n, batch = len(a), min(int(exp.training.batch_size), len(a))
    counts = [int(np.sum((a == t) | (b == t))) for t in range(exp.task.p)]
    return float(np.mean([1 - hypergeom(n, k, batch).pmf(0) for k in counts if k > 0]))


def _reference(exp: ExperimentSpec, seed: int, steps: int) -> tuple[dict[str, torch.Tensor],
                                                                    list[float]]:
    """One seed, the plain model and torch's default optimizer with the embedding in its own
    group, whose lr this loop sets to c · lr at steps 0, every, ... from numpy's σmax."""
    iv = exp.interventions[0]
    trainer = PlainTrainer(exp, seed, dtype=torch.float64)
    model, spec = trainer.model, exp.optimizer
    emb = [model.get_parameter(n) for n in model.embedding]
    rest = [p for n, p in model.named_parameters() if n not in model.embedding]
    optimizer = OPTIMIZERS[spec.name](
        [{"params": emb, **group_settings(spec, "embedding")},
         {"params": rest, **group_settings(spec, "decoder")}], spec, {})
    roles = type(model).roles
    f_e = _f_e(exp, seed)
    a, b, y = trainer.train_set
    pos = trainer.batches.take(steps)[:, 0]
    trace = []
    for k in range(steps + 1):
        if k % iv.every == 0:
            e, w = (model.get_parameter(roles[r]).detach().numpy() for r in ("E", "W"))
            c = iv.k * np.linalg.svd(e, compute_uv=False)[0] \
                / np.linalg.svd(w, compute_uv=False)[0] / f_e
            c = float(np.clip(c, iv.c_min or 0, iv.c_max or np.inf))
            trace.append(c)
            optimizer.param_groups[0]["lr"] = spec.lr * c
        if k == steps:
            break
        rows = pos[k]
        loss = mean_loss_of(model, model(a[rows], b[rows]), y[rows])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {n: p.detach() for n, p in model.named_parameters()}, trace


@pytest.mark.parametrize(("opt", "kw"), [("adamw", {"k": 0.5}), ("sgd", {}),
                                         ("adam", {"k": 2.0, "c_min": 1.0, "c_max": 9.0})])
def test_a_recomputed_c_trains_as_a_plain_loop_that_sets_the_embedding_lr(
        opt: str, kw: dict) -> None:
    exp = _exp([_adaptive(**kw)], OPTIMIZERS_TESTED[opt], c0=3.0)
    got, records = _trained(exp, [0, 1], 35)
    for i, rec in enumerate(records):
        want, trace = _reference(exp, i, 35)
        for name, value in want.items():
            torch.testing.assert_close(got[name][i], value, rtol=1e-9, atol=1e-11, msg=name)
        curve = rec["curves"]["adaptive_lr_ratio.c"]
        assert curve["steps"] == [0, 7, 14, 21, 28, 35]
        np.testing.assert_allclose(curve["values"], trace, rtol=1e-9)
        assert len(set(np.round(trace, 6))) > 1, "c should drift in this test"


def test_a_seed_alone_equals_the_seed_in_a_chunk() -> None:
    exp = _exp([_adaptive()], c0=3.0)
    alone = train_seeds(exp, [1])[0]
    chunk = train_seeds(exp, [0, 1, 2])[1]
    assert alone == chunk
    assert len(alone["curves"]["adaptive_lr_ratio.c"]["steps"]) == 6  # 0, 7, ..., 35


def test_a_diverged_seed_stays_at_the_zeros_it_was_reset_to() -> None:
    """The loop zeroes a diverged seed's parameters and optimizer state; the intervention's copy
    of E follows, so its later steps leave that seed at zero, and the other seed trains on as
    it would alone."""
    exp = _exp([_adaptive()], c0=3.0)
    with SeedTrainer(exp, [0, 1], workers=1, dtype=torch.float64) as trainer:
        trainer.train(5)
        with torch.no_grad():
            trainer.shards[0].model.param("fc1.weight")[1].fill_(float("inf"))
        trainer.record()
        trainer.train(10)
        e = _params(trainer)["embed.weight"]
        assert trainer.results()[1]["summary"]["diverged"]
    assert torch.equal(e[1], torch.zeros_like(e[1]))
    alone, _ = _trained(exp, [0], 15)
    torch.testing.assert_close(e[0], alone["embed.weight"][0], rtol=1e-12, atol=0)


def test_a_clamp_holds_c_inside_its_bounds() -> None:
    free = _trained(_exp([_adaptive()]), [0, 1], 20)[1]
    first = [r["curves"]["adaptive_lr_ratio.c"]["values"][0] for r in free]
    low, high = min(first), max(first)
    lo, hi = low + (high - low) / 3, high - (high - low) / 3  # each seed starts outside one bound
    clamped = _trained(_exp([_adaptive(c_min=lo, c_max=hi)]), [0, 1], 20)[1]
    for rec, start in zip(clamped, first, strict=True):
        values = rec["curves"]["adaptive_lr_ratio.c"]["values"]
        assert values[0] == (lo if start < lo else hi)
        assert all(lo <= v <= hi for v in values)


def test_after_a_rescaled_embedding_it_steps_from_the_rescaled_one() -> None:
    rescale = {"name": "rescale_embedding", "factor": 0.25}
    got, _ = _trained(_exp([rescale, _adaptive(c_min=5.0, c_max=5.0)]), [0, 1], 20)
    want, _ = _trained(_exp([rescale], c0=5.0), [0, 1], 20)
    for name in want:
        torch.testing.assert_close(got[name], want[name], rtol=1e-10, atol=1e-12, msg=name)


@pytest.mark.parametrize("freeze", [{"name": "freeze_embeddings", "from_step": 0},
                                    {"name": "freeze_embeddings",
                                     "when": {"curve": "train_acc", "at_least": 0.0}}])
def test_after_freeze_embeddings_a_frozen_embedding_stays_frozen(freeze: dict) -> None:
    exp = _exp([freeze, _adaptive()], c0=3.0)
    with SeedTrainer(exp, [0, 1], workers=1) as trainer:
        trainer.record()  # step 0: the condition holds for every seed
        e0 = _params(trainer)["embed.weight"]
        trainer.train(15)
        trainer.record()
        after = _params(trainer)
        assert torch.equal(after["embed.weight"], e0)
        assert not torch.equal(after["fc1.weight"], _exp_init_w(exp))
        for rec in trainer.results():
            assert rec["curves"]["adaptive_lr_ratio.c"]["steps"] == [0, 7, 14]


def _exp_init_w(exp: ExperimentSpec) -> torch.Tensor:
    with SeedTrainer(exp, [0, 1], workers=1) as trainer:
        return _params(trainer)["fc1.weight"]


@pytest.mark.parametrize("writer", [{"name": "freeze_embeddings", "from_step": 3},
                                    {"name": "rescale_embedding", "factor": 2.0}])
def test_listed_before_an_intervention_that_writes_the_embedding_it_is_refused(
        writer: dict) -> None:
    with pytest.raises(ValueError, match=f"must be listed after {writer['name']}"):
        SeedTrainer(_exp([_adaptive(), writer]), [0, 1], workers=1)


def test_a_clamp_with_c_min_above_c_max_is_refused() -> None:
    with pytest.raises(ValueError, match=r"c_min \(4\) exceeds c_max \(2\)"):
        _exp([_adaptive(c_min=4.0, c_max=2.0)])


@pytest.mark.parametrize("bad", [{"every": 0}, {"k": 0.0}, {"c_max": -1.0}, {"bogus": 1}])
def test_bad_settings_are_refused(bad: dict) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        _exp([_adaptive(**bad)])


def test_a_model_without_an_embedding_is_refused() -> None:
    with pytest.raises(ValueError, match="needs the token embedding matrix"):
        _exp([_adaptive()], model={"kind": "scalar_mlp", "hidden": 8})
