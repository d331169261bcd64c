from __future__ import annotations

from pathlib import Path

import pytest
import torch

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).parent.parent


@pytest.fixture(autouse=True, scope="session")
def _one_thread() -> None:
    torch.set_num_threads(1)


@pytest.fixture
def tiny_claim() -> Path:
    return FIXTURES / "tiny_claim.yaml"
