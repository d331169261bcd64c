"""The bounds on every number and name a claim file can set, stated once: the spec fields refer
to these constants, and docs/claims.md shows each field's.

Each keeps a claim that loads from crashing or hanging `run` (p = 10⁶ is 10¹² pairs, 10²⁹ steps
would run for years, a 300-character id is not a file name, a line break in an arm name breaks
report.md), with a wide margin over the papers' settings. The memory and compute of a whole
trial are checked separately (`grokverify.claim.budget`); floats are finite and written as
numbers (`grokverify.claim.base.Float`)."""

from __future__ import annotations

import re

MAX_P = 10_000  # pairs grow as p²
MAX_WIDTH = 65_536  # every model width
MAX_STEPS = 10_000_000
MAX_BATCH = 1 << 20  # and at most the split's training rows (checked at load)
MAX_IMAGES = 10_000_000
MAX_ITERATIONS = 1000
MAX_SEEDS = 1_000
MIN_N_BOOT = 100
MAX_N_BOOT = 100_000
MAX_RNG_SEED = 2**32 - 1
MAX_FACTOR = 1e6  # multipliers and scales (emb_lr_mult, init scales, rescale targets)
MAX_SKEW = 100.0

ID_MAX = 64
ID_PATTERN = re.compile(rf"[a-z0-9][a-z0-9_-]{{0,{ID_MAX - 1}}}")
ID_WORDS = (f"1-{ID_MAX} characters: lowercase letters, digits, '_' and '-', starting with a "
            "letter or digit")
NAME_MAX = 48
NAME_PATTERN = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.-]{{0,{NAME_MAX - 1}}}")
NAME_WORDS = (f"1-{NAME_MAX} characters: letters, digits, '_', '.' and '-', starting with a "
              "letter or digit")
