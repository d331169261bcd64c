"""Image tasks (paper 2's MNIST, §4.3): the IDX reader against bytes written by hand, finding
the user's files (or skipping the claim with a clear message), each seed's own draw of images,
the shared image table, the store key carrying the data's digest, and `grokverify run` with and
without the files. The data is made up (tests/conftest.py `write_tiny_images`)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import Has, write_tiny_images
from pydantic import ValidationError

from grokverify.claim.experiment import ExperimentSpec
from grokverify.claim.tasks import ImageTaskSpec
from grokverify.cli import main
from grokverify.engine.data import SeedData
from grokverify.engine.datasets import ENV_VAR, BadData, MissingData, load, locate
from grokverify.engine.idx import IdxError, read_idx, write_idx
from grokverify.engine.tasks import image_split
from grokverify.store import key_inputs, record_key

TASK = {"dataset": "mnist", "n_train": 40, "n_val": 20}
MODEL = {"kind": "image_mlp", "depth": 3, "width": 8, "init_scale": 3.0}
OPT = {"name": "adamw", "lr": 3e-3, "weight_decay": 0.1}
TRAINING = {"steps": 40, "batch_size": 10, "eval_interval": 20, "train_threshold": 0.5,
            "val_threshold": 0.3, "early_stop": False}


def _exp(**task: object) -> ExperimentSpec:
    return ExperimentSpec.model_validate({"task": {**TASK, **task}, "model": MODEL,
                                          "optimizer": OPT, "training": TRAINING})


# ---------------------------------------------------------------- the IDX format


def test_idx_reads_a_file_written_byte_by_byte(tmp_path: Path) -> None:
    """The format as yann.lecun.com describes it: 00 00, type 08 (unsigned byte), 3 dimensions,
    each a big-endian int32, then the bytes row-major."""
    body = bytes([0, 0, 0x08, 3]) + (2).to_bytes(4, "big") + (2).to_bytes(4, "big") + \
        (3).to_bytes(4, "big") + bytes(range(12))
    (tmp_path / "images").write_bytes(body)
    got = read_idx(tmp_path / "images")
    (tmp_path / "images.gz").write_bytes(gzip.compress(body))
    np.testing.assert_array_equal(read_idx(tmp_path / "images.gz"), got)
    assert got.dtype == np.uint8 and got.shape == (2, 2, 3)
    np.testing.assert_array_equal(got, np.arange(12).reshape(2, 2, 3))


@pytest.mark.parametrize("values", [np.arange(6, dtype=np.uint8).reshape(2, 3),
                                    np.array([-5, 7], dtype=np.int32),
                                    np.array([[0.5, -2.0]], dtype=np.float64)])
@pytest.mark.parametrize("compress", [False, True])
def test_idx_round_trips(values: np.ndarray, compress: bool, tmp_path: Path) -> None:
    write_idx(tmp_path / "f", values, compress=compress)
    got = read_idx(tmp_path / "f")
    assert got.dtype == values.dtype and got.shape == values.shape
    np.testing.assert_array_equal(got, values)


@pytest.mark.parametrize("body, words", [
    (b"\x89PNG....", "not an IDX file"),
    (bytes([0, 0, 0x08, 2]) + (3).to_bytes(4, "big"), "truncated header"),
    (bytes([0, 0, 0x08, 1]) + (5).to_bytes(4, "big") + bytes(4), "promises (5,) values"),
    (b"\x1f\x8b\x08\x00garbage", "damaged gzip"),
])
def test_a_malformed_idx_file_is_named_with_its_fault(body: bytes, words: str,
                                                      tmp_path: Path) -> None:
    (tmp_path / "bad").write_bytes(body)
    with pytest.raises(IdxError, match="bad") as exc:
        read_idx(tmp_path / "bad")
    assert words in str(exc.value)


# ---------------------------------------------------------------- finding the files


def test_without_a_data_folder_the_message_says_how_to_name_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    with pytest.raises(MissingData) as exc:
        locate("mnist")
    for words in ("--data-dir", ENV_VAR, "train-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        assert words in str(exc.value)


def test_a_folder_without_the_files_names_the_missing_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_tiny_images(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte").unlink()
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    with pytest.raises(MissingData) as exc:
        locate("mnist")
    assert "t10k-labels-idx1-ubyte not found" in str(exc.value)
    assert "train-images" not in str(exc.value).split("not found")[0]


@pytest.mark.parametrize("sub, compress", [(True, False), (False, True)])
def test_files_are_found_in_the_folder_or_its_dataset_subfolder_plain_or_gz(
        sub: bool, compress: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_tiny_images(tmp_path / "mnist" if sub else tmp_path, compress=compress)
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    data = load("mnist")
    assert data.rows("train") == 120 and data.rows("test") == 60
    x, y = data.parts["train"]
    assert x.shape == (120, 784) and x.dtype == np.uint8 and y.tolist()[:12] == [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1]


def test_gz_and_plain_copies_of_the_same_data_have_one_digest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_tiny_images(tmp_path / "plain")
    write_tiny_images(tmp_path / "gz", compress=True)
    write_tiny_images(tmp_path / "other", seed=1)
    digests = []
    for name in ("plain", "gz", "other"):
        monkeypatch.setenv(ENV_VAR, str(tmp_path / name))
        digests.append(load("mnist").digest)
    assert digests[0] == digests[1] != digests[2]


def _break(folder: Path, kind: str) -> None:
    if kind == "pixels":
        write_idx(folder / "train-images-idx3-ubyte", np.zeros((120, 28, 27), np.uint8))
    elif kind == "label":
        write_idx(folder / "t10k-labels-idx1-ubyte", np.full(60, 10, np.uint8))
    elif kind == "count":
        write_idx(folder / "train-labels-idx1-ubyte", np.zeros(119, np.uint8))
    elif kind == "type":
        write_idx(folder / "train-labels-idx1-ubyte", np.zeros(120, np.int32))


@pytest.mark.parametrize("kind, words", [("pixels", "784 pixels"), ("label", "label 10"),
                                         ("count", "119"), ("type", "unsigned bytes")])
def test_files_that_are_not_the_dataset_are_refused(kind: str, words: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    write_tiny_images(tmp_path)
    _break(tmp_path, kind)
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    with pytest.raises(BadData, match=words):
        load("mnist")


# ---------------------------------------------------------------- the task spec


@pytest.mark.parametrize("task, words", [
    ({"dataset": "mnsit", "n_train": 10}, "did you mean 'mnist'"),
    ({"dataset": "mnist", "n_train": 60_001}, "exceeds the 60000 images"),
    ({"dataset": "mnist", "n_train": 10, "n_val": 10_001}, "exceeds the 10000 images"),
    ({"dataset": "mnist", "n_train": 10, "p": 7}, "p"),
])
def test_a_bad_image_task_is_refused(task: dict[str, object], words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        ImageTaskSpec.model_validate(task)


def test_models_and_probes_must_read_what_the_task_gives() -> None:
    base = {"optimizer": OPT, "training": TRAINING}
    with pytest.raises(ValidationError, match=r"'image_mlp' reads images.*gives operand pairs"):
        ExperimentSpec.model_validate({**base, "model": MODEL, "task": {
            "op": "add", "p": 7, "train_frac": 0.5}})
    with pytest.raises(ValidationError, match=r"'toy_sum' reads operand pairs.*gives images"):
        ExperimentSpec.model_validate({**base, "task": TASK,
                                       "model": {"kind": "toy_sum", "hidden": 8}})
    with pytest.raises(ValidationError, match=r"fourier_share .*operand pairs only"):
        ExperimentSpec.model_validate({**base, "task": TASK, "model": MODEL, "probes": [
            {"name": "fourier_share", "every": 10, "k": 3}]})
    exp = ExperimentSpec.model_validate({**base, "task": TASK, "model": MODEL, "probes": [
        {"name": "sigma_max", "every": 10, "of": ["W"]}]})
    assert exp.curves()[-1] == "sigma_max.W"


def test_an_arithmetic_task_has_no_data_in_its_key() -> None:
    """An arithmetic experiment's canonical JSON and key inputs name no dataset."""
    exp = ExperimentSpec.model_validate({
        "task": {"op": "add", "p": 7, "train_frac": 0.5}, "model": {"kind": "toy_sum"},
        "optimizer": OPT, "training": TRAINING})
    assert "dataset" not in exp.canonical() and '"op":"add"' in exp.canonical()
    assert "data" not in key_inputs(exp, 0, "cpu")


# ---------------------------------------------------------------- each seed's images


def test_each_seed_draws_its_own_images_reproducibly() -> None:
    task = ImageTaskSpec.model_validate(TASK)
    draws = {s: image_split(task, s, 120, 60) for s in range(4)}
    assert all(len(t) == 40 and len(v) == 20 for t, v in draws.values())
    assert all(len(set(t)) == 40 and (np.diff(t) > 0).all() for t, _ in draws.values())
    np.testing.assert_array_equal(draws[1][0], image_split(task, 1, 120, 60)[0])
    assert not np.array_equal(draws[0][0], draws[1][0])
    fixed = ImageTaskSpec.model_validate({**TASK, "split_seed": 5})
    np.testing.assert_array_equal(image_split(fixed, 0, 120, 60)[0],
                                  image_split(fixed, 3, 120, 60)[0])
    every = ImageTaskSpec.model_validate({**TASK, "n_val": None})
    np.testing.assert_array_equal(image_split(every, 2, 120, 60)[1], np.arange(60))
    with pytest.raises(ValueError, match="files hold 30 and 60"):
        image_split(task, 0, 30, 60)


def test_the_shared_table_gives_each_seed_its_own_images(mnist_env: Path) -> None:
    """Row a of a seed is the image its draw picked, scaled to [0, 1], with its label; the
    table is held once for all the seeds."""
    task = ImageTaskSpec.model_validate(TASK)
    data = load("mnist")
    seeds = [0, 1, 2]
    sd = SeedData(task, seeds, torch.device("cpu"))
    table = sd.shape.table
    assert table is not None and table.dtype == torch.float32
    assert table.shape[0] < len(seeds) * 60  # the union of the draws, not a copy per seed
    for i, seed in enumerate(seeds):
        train, val = image_split(task, seed, 120, 60)
        for rows, part, idx in ((sd.train, "train", train), (sd.val, "test", val)):
            a, b, y = rows
            np.testing.assert_allclose(table[a[i]].numpy(),
                                       data.parts[part][0][idx] / 255.0, rtol=1e-6)
            assert y[i].tolist() == data.parts[part][1][idx].tolist()
            assert not b.any()
    assert "table" not in repr(sd.shape)


# ---------------------------------------------------------------- keys and runs


def test_the_key_carries_the_digest_of_the_files_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_tiny_images(tmp_path / "one")
    write_tiny_images(tmp_path / "two", seed=1)
    exp = _exp()
    keys = []
    for name in ("one", "two"):
        monkeypatch.setenv(ENV_VAR, str(tmp_path / name))
        assert key_inputs(exp, 0, "cpu")["data"] == load("mnist").digest
        keys.append(record_key(exp, 0, "cpu"))
    assert keys[0] != keys[1]


CLAIM = """
id: images_tiny
title: tiny image claim
statement: a test fixture on made-up images
source: {{arxiv: "2205.10343", where: test fixture, role: paper_claim, quote: test fixture}}
base:
  task: {{dataset: mnist, n_train: {n_train}, n_val: 20}}
  model: {{kind: image_mlp, depth: 3, width: 16, init_scale: 1.0}}
  optimizer: {{name: adamw, lr: 0.003, weight_decay: 0.1}}
  training: {{steps: 60, batch_size: 10, eval_interval: 20, train_threshold: 0.5,
             val_threshold: 0.3, early_stop: false}}
arms:
  a3: {{}}
scales:
  quick: {{description: test scale}}
seeds: 2
metric: {{name: phase_is, phase: comprehension, lag: 1000}}
criterion: {{name: proportion, arm: a3, outcome: value_above, cut: 0.5, direction: greater,
            threshold: 0.5}}
"""


def _claim(tmp_path: Path, n_train: int = 40) -> Path:
    path = tmp_path / "images_tiny.yaml"
    path.write_text(CLAIM.format(n_train=n_train))
    return path


def _run(tmp_path: Path, claim: Path, *extra: str) -> int:
    return main(["run", str(claim), "--executor", "local", "--device", "cpu",
                 "--store", str(tmp_path / "store"), "--reports", str(tmp_path / "reports"),
                 *extra])


def test_without_the_files_the_claim_is_skipped_with_a_message(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert _run(tmp_path, _claim(tmp_path)) == 0
    out = capsys.readouterr()
    assert Has("SKIPPED images_tiny", "mnist dataset's IDX files", "--data-dir") == out.out
    assert "Traceback" not in out.out + out.err
    assert not (tmp_path / "store").exists() and not (tmp_path / "reports").exists()
    assert main(["validate", str(_claim(tmp_path))]) == 0  # the claim itself is fine


def test_with_the_files_the_claim_trains_and_keys_its_records_by_the_data(
        tmp_path: Path, tiny_images: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(ENV_VAR, "")  # --data-dir sets it; restored after the test
    data = tmp_path / "data"
    shutil.copytree(tiny_images, data / "mnist")
    assert _run(tmp_path, _claim(tmp_path), "--data-dir", str(data)) == 0
    out = capsys.readouterr().out
    assert "trained 2 seed(s), reused 0" in out
    records = [json.loads(p.read_text()) for p in (tmp_path / "store").rglob("*.json")
               if "key_inputs" in p.read_text()]
    assert len(records) == 2
    assert {r["key_inputs"]["data"] for r in records} == {load("mnist").digest}
    accs = [r["result"]["curves"]["train_acc"]["values"] for r in records]
    assert all(acc[-1] >= acc[0] + 0.2 for acc in accs), accs  # it learns the images
    assert (tmp_path / "reports" / "images_tiny" / "report.md").is_file()
    # a rerun reuses them; other files of the same name would train afresh
    assert _run(tmp_path, _claim(tmp_path), "--data-dir", str(data)) == 0
    assert "trained 0 seed(s), reused 2" in capsys.readouterr().out
    write_tiny_images(data / "mnist", seed=7)
    assert _run(tmp_path, _claim(tmp_path), "--data-dir", str(data)) == 0
    assert "trained 2 seed(s), reused 0" in capsys.readouterr().out


def test_a_draw_larger_than_the_files_is_refused_naming_the_field(
        tmp_path: Path, mnist_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(tmp_path, _claim(tmp_path, n_train=500)) == 2
    err = capsys.readouterr().err
    assert "base.task.n_train" in err and "500 images" in err and "holds 120" in err
    assert "Traceback" not in err and not (tmp_path / "store").exists()


def test_files_that_are_not_mnist_stop_the_run_naming_the_field(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    write_tiny_images(tmp_path / "data")
    _break(tmp_path / "data", "label")
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "data"))
    assert _run(tmp_path, _claim(tmp_path)) == 2
    err = capsys.readouterr().err
    assert "base.task.dataset" in err and "label 10" in err and "Traceback" not in err
    assert not (tmp_path / "store").exists()
