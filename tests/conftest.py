from __future__ import annotations

from pathlib import Path

import pytest

from grokverify.engine.numerics import pin_environment

pin_environment()  # this process trains: pin before any torch computation

import torch  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).parent.parent


@pytest.fixture(autouse=True, scope="session")
def _one_thread() -> None:
    torch.set_num_threads(1)


@pytest.fixture
def tiny_claim() -> Path:
    return FIXTURES / "tiny_claim.yaml"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true",
                     help="also run the tests marked slow (more compute than CI affords)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def write_tiny_images(folder: Path, n_train: int = 120, n_test: int = 60, seed: int = 0,
                      compress: bool = False) -> Path:
    """A made-up dataset in MNIST's four IDX files (28 × 28 bytes, 10 classes): each class a
    fixed random template plus noise, so a small MLP learns it in a few steps. A test fixture,
    never data a claim is judged on."""
    import numpy as np

    from grokverify.claim.tasks import IMAGE_DATASETS
    from grokverify.engine.idx import write_idx

    rng = np.random.default_rng(seed)
    templates = rng.integers(0, 256, (10, 28, 28))
    folder.mkdir(parents=True, exist_ok=True)
    files = IMAGE_DATASETS["mnist"].files
    for part, n in (("train", n_train), ("test", n_test)):
        labels = (np.arange(n) % 10).astype(np.uint8)
        noise = rng.integers(-60, 61, (n, 28, 28))
        images = np.clip(templates[labels] + noise, 0, 255).astype(np.uint8)
        suffix = ".gz" if compress else ""
        write_idx(folder / (files[part][0] + suffix), images, compress=compress)
        write_idx(folder / (files[part][1] + suffix), labels, compress=compress)
    return folder


@pytest.fixture(scope="session")
def tiny_images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_images(tmp_path_factory.mktemp("data") / "mnist")
