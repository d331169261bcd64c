"""grokverify: re-run grokking claims over many seeds and give a verdict with a CI."""

from grokverify.engine.numerics import pin_environment

__version__ = "0.1.0"

# Before any torch computation in this process: the engine's kernels are pinned so a seed's
# record is the same on any x86-64 CPU (grokverify/engine/numerics.py, docs/determinism.md).
pin_environment()
