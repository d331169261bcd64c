"""Named random streams: every random choice derives from (seed, stream name, key), so a seed's
split, initialisation and data order never depend on what else runs beside it
(docs/determinism.md lists the streams and their keys)."""

from __future__ import annotations

import hashlib

import numpy as np
import torch
from torch import Tensor


def stream_seed(seed: int, stream: str, context: str = "") -> int:
    """A 63-bit integer that changes with any of seed, stream or context."""
    digest = hashlib.sha256(f"{seed}|{stream}|{context}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def numpy_rng(seed: int, stream: str, context: str = "") -> np.random.Generator:
    return np.random.default_rng(stream_seed(seed, stream, context))


def torch_generator(seed: int, stream: str, context: str = "") -> torch.Generator:
    gen = torch.Generator(device="cpu")
    gen.manual_seed(stream_seed(seed, stream, context))
    return gen


def to_device(draw: Tensor, device: torch.device, dtype: torch.dtype | None = None) -> Tensor:
    """A draw from a stream (made on the CPU, where the generators are) on `device`: on a GPU
    copied from pinned memory without waiting for the device."""
    if device.type == "cuda":
        draw = draw.pin_memory()
    return draw.to(device=device, dtype=dtype, non_blocking=True)
