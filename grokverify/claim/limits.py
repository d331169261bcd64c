"""The bounds on every number and name a claim file can set, stated once (the spec fields refer to
these constants, and docs can list them).

They keep a claim that loads from crashing or hanging `run`: a number past its bound either
cannot be allocated (p = 10⁶ is 10¹² pairs), would run for years (10²⁹ steps), or breaks a later
stage (a 300-character id is not a file name; a line break in an arm name breaks report.md).
Each bound has a wide margin over the paper settings; the memory and compute a whole experiment
needs are checked separately, against `grokverify.claim.budget.Limits`.

| bound            | value   | applies to                                                        |
|------------------|---------|-------------------------------------------------------------------|
| MAX_P            | 10,000  | task.p (pairs grow as p²)                                         |
| MAX_WIDTH        | 65,536  | model widths: d, hidden, emb_dim, target_dim                      |
| MAX_STEPS        | 10⁷     | training.steps, eval_interval, probe every, intervention from_step, |
|                  |         | metric steps (curve_at step, window start/end)                    |
| MAX_IMAGES       | 10⁷     | task.n_train, task.n_val of an image task (then at most the files' |
|                  |         | rows: 60,000 and 10,000 for MNIST)                                |
| MAX_BATCH        | 2²⁰     | training.batch_size (also at most the split's training pairs),    |
|                  |         | probe hessian_max batch                                           |
| MAX_ITERATIONS   | 1,000   | probe hessian_max iterations (power-iteration steps)              |
| MAX_SEEDS        | 1,000   | seeds, scales.<name>.seeds, seeds min/max/step                    |
| MIN_N_BOOT       | 100     | criterion n_boot                                                  |
| MAX_N_BOOT       | 100,000 | criterion n_boot                                                  |
| MAX_RNG_SEED     | 2³² − 1 | criterion bootstrap_seed, task.split_seed (both >= 0)             |
| MAX_FACTOR       | 10⁶     | multipliers and scales: emb_lr_mult, rescale factor and sigma_max,|
|                  |         | emb_init_std, init_scale, decoder_init_scale                      |
| MAX_SKEW         | 100     | task.skew                                                         |
| ID_MAX           | 64      | claim id: lowercase letters, digits, '_', '-'                     |
| NAME_MAX         | 48      | arm, scale and family member names: letters, digits, '_', '.', '-'|

Every float field is also finite (no .inf, .nan, or 1e400, which YAML reads as infinite) and
written as a number (YAML's yes/on/true are booleans, "0.1" is a string: both refused).
"""

from __future__ import annotations

import re

MAX_P = 10_000
MAX_WIDTH = 65_536
MAX_STEPS = 10_000_000
MAX_BATCH = 1 << 20
MAX_IMAGES = 10_000_000
MAX_ITERATIONS = 1000
MAX_SEEDS = 1_000
MIN_N_BOOT = 100
MAX_N_BOOT = 100_000
MAX_RNG_SEED = 2**32 - 1
MAX_FACTOR = 1e6
MAX_SKEW = 100.0

ID_MAX = 64
ID_PATTERN = re.compile(rf"[a-z0-9][a-z0-9_-]{{0,{ID_MAX - 1}}}")
ID_WORDS = (f"1-{ID_MAX} characters: lowercase letters, digits, '_' and '-', starting with a "
            "letter or digit")
NAME_MAX = 48
NAME_PATTERN = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.-]{{0,{NAME_MAX - 1}}}")
NAME_WORDS = (f"1-{NAME_MAX} characters: letters, digits, '_', '.' and '-', starting with a "
              "letter or digit")
