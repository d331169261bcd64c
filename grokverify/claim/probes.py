"""Probes a claim can declare: named per-seed measurements recorded during training as curves.

A probe spec names the probe, how often it is measured (`every` steps, from step 0) and its
arguments, and is registered with the seed-batched function that measures it (docs/extending.md).
Each says which curves it records (dotted names, e.g. "sigma_max.E"), which model roles it
reads, and what state it reads (`ProbeSpec.reads`).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Protocol

from pydantic import AfterValidator, Field

from grokverify.claim.base import Float, Int, StrictModel
from grokverify.claim.limits import MAX_BATCH, MAX_FACTOR, MAX_ITERATIONS, MAX_P, MAX_STEPS
from grokverify.kinds import PROBES

Role = Literal["E", "W"]
RankOf = Literal["E", "W", "EW"]


def _each_once(v: list[str]) -> list[str]:
    if len(set(v)) != len(v):
        raise ValueError(f"each role once, got {v}")
    return v


Roles = Annotated[list[Role], AfterValidator(_each_once)]
RankOfs = Annotated[list[RankOf], AfterValidator(_each_once)]


Reads = Literal["params", "grads", "update"]


class ProbeTask(Protocol):
    """What a probe may check of the claim's task at load (`grokverify.claim.tasks.TaskSpec`)."""

    op: str
    p: int
    modular: bool
    unordered: bool


class ProbeSpec(StrictModel):
    # params: the state after `step` updates; grads: the gradient of the step's minibatch loss
    # from that state; update: the change the step's update (optimizer step and interventions)
    # makes to the parameters from that state
    reads: ClassVar[Reads] = "params"
    # the task inputs it can measure: operand pairs (every probe) or images too (those that
    # read only a role's parameters)
    inputs: ClassVar[tuple[str, ...]] = ("pairs",)
    every: Int = Field(ge=1, le=MAX_STEPS,
                       description="measured at steps 0, every, 2 every, ... (the budget too "
                                   "when it is a multiple)")

    def curves(self) -> list[str]:
        raise NotImplementedError

    def roles_needed(self) -> tuple[str, ...]:
        raise NotImplementedError

    def cannot_measure(self, task: ProbeTask) -> str | None:
        """Why this probe cannot measure the task, refused at load (None: it can)."""
        return None


@PROBES.register("grokverify.engine.probes:sigma_max")
class SigmaMaxSpec(ProbeSpec):
    """The largest singular value of each named matrix (paper 1's σmax(E), σmax(W))."""

    inputs: ClassVar[tuple[str, ...]] = ("pairs", "images")
    name: Literal["sigma_max"]
    of: Roles = Field(default_factory=lambda: ["E", "W"], min_length=1,
                           description="roles: E (embedding), W (first weight matrix)")

    def curves(self) -> list[str]:
        return [f"sigma_max.{role}" for role in self.of]

    def roles_needed(self) -> tuple[str, ...]:
        return tuple(self.of)


@PROBES.register("grokverify.engine.probes:grad_norm_ratio")
class GradNormRatioSpec(ProbeSpec):
    """Frobenius norms of the gradients of E and W, and their ratio ‖∇E‖/‖∇W‖ (paper 1's
    Prop. 4.1 compares it with σmax(W)/σmax(E))."""

    reads: ClassVar[Reads] = "grads"
    name: Literal["grad_norm_ratio"]

    def curves(self) -> list[str]:
        return ["grad_norm.E", "grad_norm.W", "grad_norm_ratio"]

    def roles_needed(self) -> tuple[str, ...]:
        return ("E", "W")


@PROBES.register("grokverify.engine.probes:rank")
class RankSpec(ProbeSpec):
    """Numerical ranks of E, W and EW (paper 1's Appendix C tracks the ranks of E, W and EW): the
    count of singular values > rtol · σmax of the same matrix (numpy's `matrix_rank` with
    tol = rtol · σmax).

    E is the whole embedding table (V × d; for embed_mlp its op and "=" rows too), W the first
    Linear's weight (hidden × n·d: it reads n token embeddings, concatenated for embed_mlp,
    n = 4; summed for toy_sum, n = 1). EW is the map from a one-hot token to the first layer's
    pre-activation, one block per input position: [E W_1ᵀ | ... | E W_nᵀ] (V × n·hidden), W_j
    the hidden × d columns of W that read position j (toy_sum: E Wᵀ).

    Default rtol = 1e-3: above float32 rounding of the trained parameters (numpy's own rule for
    float32 data, eps₃₂ · max(m, n), is ≤ 2.5e-4 at paper 1's sizes), so rounding never counts as
    rank, yet a direction a thousand times weaker than the leading one still counts while weight
    decay shrinks it."""

    inputs: ClassVar[tuple[str, ...]] = ("pairs", "images")
    name: Literal["rank"]
    of: RankOfs = Field(default_factory=lambda: ["E", "W", "EW"], min_length=1,
                        description="matrices: E (embedding), W (first weight matrix), "
                                    "EW (their product, per input position)")
    rtol: Float = Field(1e-3, gt=0, lt=1,
                        description="singular values > rtol · σmax count towards the rank")

    def curves(self) -> list[str]:
        return [f"rank.{m}" for m in self.of]

    def roles_needed(self) -> tuple[str, ...]:
        return tuple(r for r in ("E", "W") if any(r in m for m in self.of))


@PROBES.register("grokverify.engine.probes:fourier_share")
class FourierShareSpec(ProbeSpec):
    """The share of E's spectral power in its k strongest Fourier frequencies (paper 1's
    Appendix C: a DFT of E). The DFT runs along the token axis over the p number tokens only
    (rows 0..p-1 of E, which every model indexes by value; embed_mlp's op and "=" rows are
    left out); a frequency's power is |F|² summed over the embedding dimensions. Frequencies f
    and p - f carry the same power for a real E and count as one frequency with their summed
    power (p/2, for an even p, is its own pair), so there are p // 2 frequencies besides DC.
    DC (the mean embedding, the same for every token) is left out of the top-k and of the total
    unless exclude_dc is false, when it competes as one more frequency. When k is at least the
    number of frequencies the share is 1; when there is no power to share (E zero or, DC left
    out, the same for every number token up to rounding: < 1e-24 of its power), NaN."""

    name: Literal["fourier_share"]
    k: Int = Field(ge=1, le=MAX_P // 2, description="frequencies in the top set")
    exclude_dc: bool = Field(True, description="leave frequency 0 (the mean) out of top-k and "
                                               "total")

    def curves(self) -> list[str]:
        return ["fourier_share.E"]

    def roles_needed(self) -> tuple[str, ...]:
        return ("E",)

    def cannot_measure(self, task: ProbeTask) -> str | None:
        p = task.p
        n = p // 2 + (0 if self.exclude_dc else 1)
        if self.k > n:
            return (f"fourier_share: k = {self.k} exceeds the {n} frequencies of p = {p} "
                    f"({'DC left out' if self.exclude_dc else 'DC included'}; f and p - f "
                    "count once), so the share would be 1 whatever E is")
        return None


@PROBES.register("grokverify.engine.probes:fourier_logits")
class FourierLogitsSpec(ProbeSpec):
    """Nanda et al.'s progress measures (arXiv 2301.05217, §5.1) from the logits L over all p²
    pairs (a, b) of modular addition, as their released training code computes them at each
    metric step: the key frequencies K are the k whose cos and sin(w(a + b)) directions (w =
    2πf/p; each logit column projected on them) carry the most of L's power there (the code
    ranks them by the MLP neurons' frequencies; logits need no model internals);
    `restricted_loss` is the cross-entropy over all pairs of L projected onto K (plus L's mean
    over pairs), `excluded_loss` the training pairs' cross-entropy of L with K removed,
    `key_share` K's share of L's power about that mean."""

    name: Literal["fourier_logits"]
    k: Int = Field(ge=1, le=MAX_P // 2,
                   description="key frequencies, chosen at each probe point as the k strongest")

    def curves(self) -> list[str]:
        return ["fourier_logits.restricted_loss", "fourier_logits.excluded_loss",
                "fourier_logits.key_share"]

    def roles_needed(self) -> tuple[str, ...]:
        return ()  # the logits only

    def cannot_measure(self, task: ProbeTask) -> str | None:
        if task.op != "add" or not task.modular or task.unordered or task.p % 2 == 0:
            return (f"fourier_logits: needs modular addition over every ordered pair at an odd "
                    f"p (op add, modular true, unordered false), got op {task.op!r}, modular "
                    f"{str(task.modular).lower()}, unordered {str(task.unordered).lower()}, "
                    f"p = {task.p}")
        if self.k > (task.p - 1) // 2:
            return (f"fourier_logits: k = {self.k} exceeds the {(task.p - 1) // 2} frequencies "
                    f"of p = {task.p}, so nothing would be excluded")
        return None


@PROBES.register("grokverify.engine.probes:update_norm")
class UpdateNormSpec(ProbeSpec):
    """Frobenius norms of the actual change of E and of W over one training step, ‖ΔE‖ and ‖ΔW‖,
    and their ratio (paper 1, Eq. 23 and Prop. 4.1 reason with the raw SGD update -η∇; under Adam
    the step is normalised, so ‖ΔE‖/‖ΔW‖ need not follow ‖∇E‖/‖∇W‖: the skeptic's question). The
    change is the parameters after the step's update (the optimizer's step, weight decay
    included, then any intervention's, e.g. a frozen E's restore) minus those before, and is
    recorded at the step it starts from (like `grad_norm_ratio`)."""

    reads: ClassVar[Reads] = "update"
    name: Literal["update_norm"]

    def curves(self) -> list[str]:
        return ["update_norm.E", "update_norm.W", "update_norm_ratio"]

    def roles_needed(self) -> tuple[str, ...]:
        return ("E", "W")


@PROBES.register("grokverify.engine.probes:hessian_max")
class HessianMaxSpec(ProbeSpec):
    """The top eigenvalue of the training loss's Hessian restricted to E and to W (paper 1's
    Fig. 7: λmax of the E block and of the W block), by power iteration on Hessian-vector
    products (double backward through the plain forward), per seed.

    The loss is the mean cross-entropy over a fixed set of each seed's training rows (`batch`
    of them, drawn once per seed from its own named stream; all of them when `batch` is unset or
    at least the training split's size), without weight decay (AdamW's is decoupled from the
    loss). The start vector is drawn per seed from its own stream, so a seed's value does not
    depend on the seeds batched with it. Power iteration converges to the eigenvalue of largest
    magnitude, reported with its sign (the Rayleigh quotient of the last iterate); `.change` is
    the relative change of that estimate over the last iteration, so a reader can see whether
    `iterations` sufficed."""

    name: Literal["hessian_max"]
    of: Roles = Field(default_factory=lambda: ["E", "W"], min_length=1,
                           description="blocks: E (embedding), W (first weight matrix)")
    iterations: Int = Field(20, ge=2, le=MAX_ITERATIONS, description="power-iteration steps")
    batch: Int | None = Field(None, ge=1, le=MAX_BATCH,
                              description="training rows per seed the loss is taken over "
                                          "(unset: all of them)")

    def curves(self) -> list[str]:
        return [c for role in self.of for c in (f"hessian_max.{role}",
                                                f"hessian_max.{role}.change")]

    def roles_needed(self) -> tuple[str, ...]:
        return tuple(self.of)


@PROBES.register("grokverify.engine.probes:token_frequency")
class TokenFrequencySpec(ProbeSpec):
    """Paper 1's update frequencies f_E and f_W (Appendix B: Prop. 4.1's ratio c ∝
    σmax(E)/σmax(W) · f_W/f_E, with "f_W > f_E") of each seed's training split, and f_W/f_E.

    The paper calls them update frequencies without defining them; here f_E is the mean, over
    the operand tokens (values 0..p-1 that occur as a or b in at least one training row), of the
    probability that a minibatch of the run's batch size B, drawn without replacement from the
    seed's N training rows, holds at least one row with that token, 1 - C(N - n_t, B) / C(N, B)
    (n_t: the rows with t as a or b), i.e. the expected share of updates in which the token's
    embedding row gets a gradient; with full batch it is 1 for every token present. f_W = 1: W
    is in every update. (The engine cuts its batches from concatenated permutations, so a batch
    that straddles two epochs is not exactly such a draw; the difference is ignored.)

    A property of the split and batch size, constant over training: recorded at every probe
    point like any probe (a flat curve), beside σmax."""

    name: Literal["token_frequency"]

    def curves(self) -> list[str]:
        return ["token_frequency.E", "token_frequency.W", "token_frequency_ratio"]

    def roles_needed(self) -> tuple[str, ...]:
        return ("E",)  # an update frequency of the embedding's rows: no embedding, no f_E


MAX_PARALLELOGRAM_P = 64  # |P0| grows as p³/12 (17,545 at p = 60); see ParallelogramSpec


class _DefectSpec(ProbeSpec):
    """A probe of paper 2's parallelogram defects Ẽ_i + Ẽ_j − Ẽ_m − Ẽ_n of the embedding's number
    rows (E's role), counted when their distance is within δ."""

    delta: Float = Field(0.01, ge=0, le=MAX_FACTOR,
                         description="a defect counts (a parallelogram is realised) when its "
                                     "distance is <= delta (paper 2: 0.01)")
    distance: Literal["norm", "mean_sq"] = Field(
        "norm", description="norm: Euclidean norm of the defect (the paper); mean_sq: mean of "
                            "its squares over dimensions (the official code)")

    def roles_needed(self) -> tuple[str, ...]:
        return ("E",)


@PROBES.register("grokverify.engine.probes:parallelogram")
class ParallelogramSpec(_DefectSpec):
    """Paper 2's representation measures (arXiv 2205.10343, §3.1, App. D, Fig. 10) of the
    embedding's number rows E_0..E_{p-1}, against each seed's own training set, as defined in
    `grokverify.analysis.representation` (normalised per dimension, sample std):

    - `parallelogram.rqi`: RQI, the share of permissible parallelograms (i + j = m + n) realised
      within δ;
    - `parallelogram.acc`, `parallelogram.acc_test`: the predicted accuracy Acc^ over all samples
      and over the samples not in training (every non-training sample, whatever the task's
      test_frac: paper 2's validation set);
    - `parallelogram.unimplied`, `parallelogram.unimplied_share`: the realised parallelograms the
      training set does not imply (with chaining, the paper's P(D)), as a count and as a share
      of the realised ones (NaN when none is realised).

    Options: `delta` (default 0.01, the paper's δ); `distance` "norm" (default, the paper's
    Euclidean |D|) or "mean_sq" (the official code's mean of D² over dimensions, ten times looser
    in 1-D at the same δ). A seed's training set is the samples (i, j), i ≤ j, of its training
    rows; (a, b) and (b, a) are one sample, so an ordered task works too (Dec(E_a + E_b) cannot
    tell them apart). A seed whose E is not finite, or has a constant dimension (no normalised
    form), gets NaN in every curve.

    The task must be paper 2's: op add, modular false (the parallelograms are those of the plain
    sum), p ≥ 3 (p = 2 has no parallelogram) and p ≤ 64 (cost). Computed on the host, a seed at a
    time: at p = 60 about 2.4 ms a call for 8 seeds of emb_dim 1 (12 ms at emb_dim 8), plus 1.2 s
    once per training set."""

    name: Literal["parallelogram"]

    def curves(self) -> list[str]:
        return [f"parallelogram.{c}" for c in ("rqi", "acc", "acc_test", "unimplied",
                                               "unimplied_share")]

    def cannot_measure(self, task: ProbeTask) -> str | None:
        return not_paper2_sum("parallelogram", task)


def not_paper2_sum(probe: str, task: ProbeTask) -> str | None:
    """Why `task` is not the plain sum over 0..p-1 whose parallelograms i + j = m + n paper 2's
    probes measure (None: it is)."""
    if task.op != "add" or task.modular:
        return (f"{probe}: needs paper 2's sum task (op add, modular false), got op "
                f"{task.op!r}, modular {str(task.modular).lower()}: its parallelograms "
                "i + j = m + n are those of the plain sum")
    if not 3 <= task.p <= MAX_PARALLELOGRAM_P:
        return (f"{probe}: needs 3 <= p <= {MAX_PARALLELOGRAM_P}, got p = {task.p} "
                "(p = 2 has no parallelogram; the count grows as p³)")
    return None


@PROBES.register("grokverify.engine.probes:parallelogram_nullity")
class ParallelogramNullitySpec(ProbeSpec):
    """Paper 2's nullity n0 of each seed's training set (arXiv 2205.10343, §3.2, Fig. 4a, App.
    C): the training samples (i, j), i ≤ j, of one class (i + j) force E_i + E_j = E_m + E_n
    on an ideal model, and n0 = p − rank of that linear system A(D) (≥ 2: translation and
    scale); n0 = 2 pins the embedding to E_k = a + k·b, the structure that generalises.

    Curves: `parallelogram_nullity.n0` (the nullity, `grokverify.analysis.parallelogram.
    nullities`: exact integer Gram matrix, eigenvalue rank) and `parallelogram_nullity.is2`
    (1.0 when n0 = 2, else 0.0; its mean over seeds is paper 2's P(n0 = 2) at the arm's
    training fraction). A seed's training set is the samples of its training rows, (a, b) and
    (b, a) one sample, as in `parallelogram`.

    A property of the split alone, read from ProbeContext.train: no role, any model, constant
    over training (a flat curve); with a zero-step budget it is read at step 0 with `curve_at`
    and nothing is trained. Same task check as `parallelogram` (op add, modular false,
    3 ≤ p ≤ 64)."""

    name: Literal["parallelogram_nullity"]

    def curves(self) -> list[str]:
        return ["parallelogram_nullity.n0", "parallelogram_nullity.is2"]

    def roles_needed(self) -> tuple[str, ...]:
        return ()  # the split only

    def cannot_measure(self, task: ProbeTask) -> str | None:
        return not_paper2_sum("parallelogram_nullity", task)


@PROBES.register("grokverify.engine.probes:sample_fraction")
class SampleFractionSpec(ProbeSpec):
    """Paper 2's training fraction of each seed's split, k/N: its k training samples over the
    N = p(p + 1)/2 samples (i, j), i ≤ j, of the toy ((a, b) and (b, a) one sample, as in
    `parallelogram`): the x of Fig. 4a, a train_frac's realised value round(train_frac · N)/N,
    which differs from the nominal one by up to 1/(2N). Curve `sample_fraction`. A property of
    the split alone (no role, any model, constant over training; read at step 0). Same task
    check as `parallelogram`."""

    name: Literal["sample_fraction"]

    def curves(self) -> list[str]:
        return ["sample_fraction"]

    def roles_needed(self) -> tuple[str, ...]:
        return ()  # the split only

    def cannot_measure(self, task: ProbeTask) -> str | None:
        return not_paper2_sum("sample_fraction", task)


@PROBES.register("grokverify.engine.probes:impermissible")
class ImpermissibleSpec(_DefectSpec):
    """Paper 2's Proposition 1 (C1, arXiv 2205.10343, §3.1): at zero training loss an exact
    parallelogram E_i + E_j = E_m + E_n of two training samples has i + j = m + n. Per seed,
    over every two of its training samples with different sums (an impermissible pair), the
    distance between their embedding sums as `parallelogram` measures a defect (normalised per
    dimension; `distance` norm or mean_sq; `grokverify.analysis.representation
    .impermissible_gaps`):

    - `impermissible.count`: the pairs within `delta` (impermissible δ-parallelograms);
    - `impermissible.min_gap`: the smallest distance (NaN when all samples share one sum).

    NaN in both for a seed whose E is not finite or has a constant dimension. Same task check
    as `parallelogram`; cost as its RQI (n(n − 1)/2 pairs of the n training samples)."""

    name: Literal["impermissible"]

    def curves(self) -> list[str]:
        return ["impermissible.count", "impermissible.min_gap"]

    def cannot_measure(self, task: ProbeTask) -> str | None:
        return not_paper2_sum("impermissible", task)


@PROBES.register("grokverify.engine.probes:effective")
class EffectiveSpec(ProbeSpec):
    """Paper 2's effective theory (arXiv 2205.10343, §3.2, App. F, Eq. 4) of each seed's
    training set and current embedding (`grokverify.analysis.effective`): the effective
    Hessian's third eigenvalue λ3 (the "grokking rate", 0 when the nullity exceeds 2), the
    predicted steps n_h = 1/(λ3 η) (none when λ3 = 0), and a discretised gradient flow of
    ℓ_eff from the normalised embedding, `flow_steps` steps of size η (`method` rk4 or euler),
    with how far it moves the quantities App. F proves conserved: ΣE_k (from a centred start)
    and Z0 = Σ|E_k|².

    Curves: `effective.lambda3`, `effective.n_h`, `effective.sum_drift` (max over the flow of
    |ΣE_k(t) − ΣE_k(0)| / √Z0(0)), `effective.z0_drift` (max over the flow of |Z0(t) − Z0(0)|
    / Z0(0)); drifts are NaN where the flow's step is unstable (η λmax(H) ≥ 2). Read at step 0
    the embedding is the initial one (a zero-step budget trains nothing). Same task check as
    `parallelogram`."""

    name: Literal["effective"]
    eta: Float = Field(gt=0, le=MAX_FACTOR, description=(
        "the step size η of n_h and of the flow (the paper: the embeddings' learning rate)"))
    flow_steps: Int = Field(1000, ge=0, le=MAX_STEPS, description="steps of the flow")
    method: Literal["rk4", "euler"] = Field(
        "rk4", description="rk4: follows the flow to O(η⁴); euler: plain gradient descent")

    def curves(self) -> list[str]:
        return [f"effective.{c}" for c in ("lambda3", "n_h", "sum_drift", "z0_drift")]

    def roles_needed(self) -> tuple[str, ...]:
        return ("E",)

    def cannot_measure(self, task: ProbeTask) -> str | None:
        return not_paper2_sum("effective", task)


@PROBES.register("grokverify.engine.probes:pca")
class PCASpec(ProbeSpec):
    """Paper 2's PCA probes of the token embedding (arXiv 2205.10343, §4.2, Figs. 1 and 7): a
    principal component analysis of the p number rows E_0..E_{p-1} (the operand tokens; an
    embed_mlp's op and "=" rows are left out), centred on their mean, per seed, in float64.

    With λ_1 ≥ λ_2 ≥ ... the variances along the principal components (squared singular values
    of the centred rows) and q_i = λ_i / Σλ their shares:

    - `pca.top2_share`: q_1 + q_2, the share of the variance in the top two components;
    - `pca.eff_dim`: the effective dimension exp(S), S = −Σ q_i ln q_i (0 ln 0 = 0): 1 for
      points on a line, k for k equal components;
    - `pca.circular`: 1.0 when the tokens lie in circular order in the top-2 plane, else 0.0.
      The test: project each token onto the top two components, take its angle atan2(z_2,
      z_1), sort the tokens by angle (ties by token index), and read the sorted sequence as a
      cycle t_0, t_1, ..., t_{p-1}, t_0; the tokens are in circular order when every step
      t_{j+1} − t_j (mod p), the wrap-around one included, is the same g: the tokens go round
      as k, k + g, k + 2g, ... (mod p), the Fourier circle of frequency g (a circle traversed
      either way counts: the step is then p − g). Only the order is tested, not how round
      the points are; 0.0 when there is no plane (λ_2 ≤ 1e-12 λ_1, or d = 1).

    NaN in every curve for a seed whose E is not finite or has no variance (all rows equal).
    Needs p ≥ 3 (a cyclic order of two tokens always has one step)."""

    name: Literal["pca"]

    def curves(self) -> list[str]:
        return ["pca.top2_share", "pca.eff_dim", "pca.circular"]

    def roles_needed(self) -> tuple[str, ...]:
        return ("E",)

    def cannot_measure(self, task: ProbeTask) -> str | None:
        if task.p < 3:
            return (f"pca: needs p >= 3, got p = {task.p} (two tokens are in circular order "
                    "whatever E is)")
        return None


