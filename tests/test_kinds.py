"""One registry idiom (grokverify.kinds): every registered name leads to its spec class and to
an implementation that imports; a name is taken once; probes return the curves they declare."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from grokverify.claim.experiment import ExperimentSpec
from grokverify.engine.loop import train_seeds
from grokverify.kinds import (
    CRITERIA,
    INTERVENTIONS,
    METRICS,
    MODELS,
    PROBES,
    SPLITS,
    TASKS,
    Kind,
)

ALL = {"task operation": TASKS, "split strategy": SPLITS, "model kind": MODELS, "probe": PROBES,
       "intervention": INTERVENTIONS, "metric": METRICS, "criterion": CRITERIA}


@pytest.mark.parametrize("what", sorted(ALL))
def test_every_name_has_its_spec_and_an_implementation_that_imports(what: str) -> None:
    kind = ALL[what]
    assert kind.what == what and len(kind) > 0
    for name, spec in kind.items():
        assert kind._name_of(spec) == name
        assert callable(kind.implementation(name)), kind.path(name)


def test_a_taken_name_is_refused_and_the_same_class_again_is_harmless() -> None:
    kind: Kind[type] = Kind("thing", "name", "grokverify.kinds")

    class First:
        name = "a"

    class Second:
        name = "a"
    register = kind.register("grokverify.kinds:Kind")
    assert register(First) is First and register(First) is First
    with pytest.raises(ValueError, match="thing 'a' is already registered"):
        register(Second)
    with pytest.raises(ValueError, match="is not 'module:attribute'"):
        kind.register("grokverify.kinds")
    with pytest.raises(KeyError, match="unknown thing 'b'"):
        kind.path("b")


BASES = [  # each probe runs on the first of these experiments it can measure
    {"task": {"op": "add", "p": 7, "modular": False, "unordered": True, "train_frac": 0.6},
     "model": {"kind": "toy_sum", "hidden": 8, "emb_dim": 2}},
    {"task": {"op": "add", "p": 7, "train_frac": 0.6, "test_frac": 0.3},
     "model": {"kind": "embed_mlp", "d": 4, "hidden": 8}},
]
PARAMS = {"fourier_share": {"k": 2}, "fourier_logits": {"k": 2}, "hessian_max": {"iterations": 2},
          "effective": {"eta": 0.01}}


@pytest.mark.parametrize("name", sorted(PROBES))
def test_every_probe_records_exactly_the_curves_its_spec_declares(name: str) -> None:
    """The loop refuses a probe whose function returns other curves than its spec's `curves`,
    so one training run per probe checks the pair."""
    probe = {"name": name, "every": 2, **PARAMS.get(name, {})}
    for base in BASES:
        try:
            exp = ExperimentSpec.model_validate({
                **base, "optimizer": {"name": "adamw", "lr": 0.01},
                "training": {"steps": 4, "eval_interval": 2}, "probes": [probe]})
        except ValidationError:
            continue
        (record,) = train_seeds(exp, [0])
        assert sorted(record["curves"]) == sorted(exp.curves())
        return
    pytest.fail(f"no base experiment takes probe {name}")
