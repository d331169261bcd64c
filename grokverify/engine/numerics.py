"""Pinned CPU numerics: the same kernels, hence the same bits, on any x86-64 CPU with AVX2.

torch picks its CPU kernels by the CPU it runs on: ATen's vectorised kernels (elementwise ops,
reductions, the fused optimizers, random draws) by the widest instruction set present (AVX-512
here, AVX2 on an AMD EPYC), MKL's matrix products by vendor and model (AMD gets a generic
path). Different kernels round differently, and a grokking run turns a last-bit difference into
hundreds of steps. So every training process pins both, before its first torch computation:

- ATen: ``ATEN_CPU_CAPABILITY=avx2`` (read when ATen first dispatches a kernel);
- MKL: conditional numerical reproducibility on its AVX2 branch (``MKL_CBWR=AVX2``, read at
  MKL's first computation; ``mkl_cbwr_set`` likewise works only before it).

`pin_environment` (called by ``import grokverify``, torch-free) sets both variables, overriding
inherited ones; `pin` (called before training) sets MKL's branch again if MKL has not computed
yet and checks that both took effect. A process that ran torch kernels before importing
grokverify cannot be pinned any more: `pin` then raises `NumericsError` rather than train with
unknown kernels. ``GROKVERIFY_NUMERICS=native`` turns
pinning off (the host's own kernels; records then carry that kernel set in their store key, so
they never mix with pinned ones). GPUs are not affected (docs/determinism.md).
"""

from __future__ import annotations

import ctypes
import os
from functools import cache
from pathlib import Path

PINNED = "x86-avx2"  # the numerics tag of a pinned CPU process (part of every CPU store key)
_ATEN = "ATEN_CPU_CAPABILITY"
_MKL = "MKL_CBWR"
_MODE = "GROKVERIFY_NUMERICS"
# mkl_service.h
_MKL_CBWR_BRANCH = 1
_MKL_CBWR_AVX2 = 10
_MKL_BRANCH_NAMES = {1: "off", 2: "AUTO", 3: "COMPATIBLE", 4: "SSE2", 6: "SSSE3", 7: "SSE4_1",
                     8: "SSE4_2", 9: "AVX", 10: "AVX2", 11: "AVX512_MIC", 12: "AVX512",
                     13: "AVX512_MIC_E1", 14: "AVX512_E1"}


class NumericsError(RuntimeError):
    """The process's kernels cannot be pinned; training would not be reproducible elsewhere."""


def native() -> bool:
    """Whether the user turned pinning off (``GROKVERIFY_NUMERICS=native``)."""
    return os.environ.get(_MODE, "").strip().lower() == "native"


def pin_environment() -> None:
    """Ask ATen and MKL for their AVX2 kernels; effective if no torch kernel has run in this
    process yet. Overrides inherited values: the engine owns its numerics (module docstring)."""
    if not native():
        os.environ[_ATEN] = "avx2"
        os.environ[_MKL] = "AVX2"


@cache
def _mkl() -> ctypes.CDLL | None:
    """torch's own copy of MKL's service functions, or None (a torch built without MKL)."""
    import torch

    lib = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    try:
        dll = ctypes.CDLL(str(lib))
        dll.mkl_serv_cbwr_set.argtypes = [ctypes.c_int]
        dll.mkl_serv_cbwr_set.restype = ctypes.c_int
        dll.mkl_serv_cbwr_get.argtypes = [ctypes.c_int]
        dll.mkl_serv_cbwr_get.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None
    return dll


def mkl_branch() -> str:
    """MKL's current code branch ("AVX2" when pinned; "none" without MKL)."""
    dll = _mkl()
    if dll is None:
        return "none"
    code = dll.mkl_serv_cbwr_get(_MKL_CBWR_BRANCH)
    return _MKL_BRANCH_NAMES.get(code, str(code))


def aten_capability() -> str:
    import torch

    return torch.backends.cpu.get_cpu_capability()


def pin() -> None:
    """Pin MKL's branch and check ATen's kernels; raises NumericsError when either is already
    fixed to something else. Idempotent; a no-op with ``GROKVERIFY_NUMERICS=native``."""
    if native():
        return
    pin_environment()
    dll = _mkl()
    if dll is not None and mkl_branch() != "AVX2":
        dll.mkl_serv_cbwr_set(_MKL_CBWR_AVX2)
    got_aten, got_mkl = aten_capability(), mkl_branch()
    if got_aten != "AVX2" or got_mkl not in ("AVX2", "none"):
        raise NumericsError(
            f"cannot pin the CPU kernels (ATen: {got_aten}, MKL: {got_mkl}; wanted AVX2 for "
            f"both): torch computed something in this process before grokverify was imported, "
            f"or this CPU lacks AVX2. Import grokverify before any torch computation, or set "
            f"{_MODE}=native to train with this host's own kernels (results then match only "
            f"machines with the same kernel set).")


def tag(device_type: str) -> str:
    """The numerics part of a store key: the pinned tag on CPUs, the device type elsewhere,
    the host's actual kernel set when pinning is off."""
    if device_type != "cpu":
        return device_type
    if not native():
        return PINNED
    return f"native-{aten_capability().lower()}-mkl-{mkl_branch().lower()}"


def describe() -> dict[str, str]:
    """What a record says about the kernels that produced it."""
    return {"mode": "native" if native() else "pinned", "aten": aten_capability(),
            "mkl_branch": mkl_branch()}
