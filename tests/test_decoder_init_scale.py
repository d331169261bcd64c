"""The toys' `decoder_init_scale` (paper 2's App. G, Fig. 14; the official code's init_scale_nn):
at s every decoder weight and bias is s times the scale-1 one of the same seed, the embeddings
and regression targets unchanged; the scale keys the record, not the seed's draws."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from pydantic import ValidationError

from grokverify.claim.experiment import ExperimentSpec
from grokverify.claim.load import load_claim
from grokverify.claim.models import ToyMatrixSpec, ToySumSpec
from grokverify.claim.yamlio import SpecError
from grokverify.engine.models import DataShape, Model
from grokverify.kinds import MODELS

SUM = {"kind": "toy_sum", "hidden": 5, "output": "regression", "target_dim": 4}
SUM_SHAPE = DataShape(p=7, vocab=9, n_classes=13)
MATRIX = {"kind": "toy_matrix", "hidden": 5, "init_scale": 0.5}
MATRIX_SHAPE = DataShape(p=6, vocab=8, n_classes=6)

CASES = {"toy_sum": (ToySumSpec, SUM, SUM_SHAPE, 3),
         "toy_matrix": (ToyMatrixSpec, MATRIX, MATRIX_SHAPE, 2)}
DECODER = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias")


def build(kind: str, **settings: float) -> Model:
    spec_class, fields, shape, seed = CASES[kind]
    return MODELS.implementation(kind).for_seed(spec_class(**fields, **settings), shape, seed)


@pytest.mark.parametrize("kind", sorted(CASES))
def test_the_scale_keys_the_record_but_not_the_seeds_draws(kind: str) -> None:
    spec_class, fields, shape, _ = CASES[kind]
    plain, scaled = spec_class(**fields), spec_class(**fields, decoder_init_scale=0.25)
    assert '"decoder_init_scale":0.25' in scaled.canonical() != plain.canonical()
    model = MODELS.implementation(kind)
    assert model.stream_key(plain, shape) == model.stream_key(scaled, shape)


@pytest.mark.parametrize("kind", sorted(CASES))
@pytest.mark.parametrize("scale", [0.1, 0.25, 3.0])
def test_scale_s_multiplies_every_decoder_parameter_and_nothing_else(kind: str,
                                                                    scale: float) -> None:
    plain, scaled = build(kind), build(kind, decoder_init_scale=scale)
    before, after = plain.state_dict(), scaled.state_dict()
    assert set(before) == set(after)
    for name in DECODER:
        assert torch.equal(after[name], before[name] * scale), name
        assert not torch.equal(after[name], before[name]), name
    for name in set(before) - set(DECODER):  # the embedding (and regression targets)
        assert torch.equal(after[name], before[name]), name
    assert scaled.spec.decoder_init_scale == scale  # type: ignore[attr-defined]


def test_the_embedding_scale_leaves_the_decoder_alone_and_the_two_compose() -> None:
    both = build("toy_sum", init_scale=0.1, decoder_init_scale=0.1).state_dict()
    embeddings_only = build("toy_sum", init_scale=0.1).state_dict()
    for name in DECODER:
        assert torch.equal(both[name], embeddings_only[name] * 0.1), name
    assert torch.equal(both["embed.weight"], embeddings_only["embed.weight"])


@pytest.mark.parametrize("bad", [0.0, -1.0, 2e6])
def test_an_out_of_range_scale_is_refused_with_the_field_named(bad: float) -> None:
    with pytest.raises(ValidationError, match="decoder_init_scale"):
        ToySumSpec(**SUM, decoder_init_scale=bad)
    with pytest.raises(ValidationError, match="decoder_init_scale"):
        ExperimentSpec.model_validate(
            {"task": {"op": "add", "p": 7, "modular": False, "unordered": True,
                      "train_frac": 0.6},
             "model": {**SUM, "decoder_init_scale": bad}, "optimizer": {"name": "adamw"},
             "training": {"steps": 10}})


def test_a_claim_with_a_bad_scale_names_the_field_and_its_line(tmp_path: Path) -> None:
    text = (Path(__file__).resolve().parent.parent / "claims"
            / "p2_appg_small_init_comprehends.yaml").read_text()
    anchor = "decoder_init_scale: 0.1}"
    assert text.count(anchor) == 1
    path = tmp_path / "claim.yaml"
    path.write_text(text.replace(anchor, "decoder_init_scale: 0}"))
    with pytest.raises(SpecError) as caught:
        load_claim(path)
    problems = [p for p in caught.value.problems if p.path.endswith("decoder_init_scale")]
    assert problems and problems[0].line is not None, str(caught.value)
    assert "greater than 0" in problems[0].message
