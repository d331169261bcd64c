"""Probes a claim can declare: named per-seed measurements recorded during training as curves.

A probe spec names the probe, how often it is measured (`every` steps, from step 0) and its
arguments; `grokverify.engine.probes` registers the seed-batched function under the same name.
Each spec says which curves it records (dotted names, e.g. "sigma_max.E"), which model roles it
reads, and whether it reads the parameters (state after `step` updates) or the gradient of the
step's minibatch loss taken from that state.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field

from grokverify.catalog.limits import MAX_BATCH, MAX_ITERATIONS, MAX_P, MAX_STEPS
from grokverify.specbase import Float, Int, StrictModel

Role = Literal["E", "W"]
RankOf = Literal["E", "W", "EW"]


def _each_once(v: list[str]) -> list[str]:
    if len(set(v)) != len(v):
        raise ValueError(f"each role once, got {v}")
    return v


Roles = Annotated[list[Role], AfterValidator(_each_once)]
RankOfs = Annotated[list[RankOf], AfterValidator(_each_once)]


Reads = Literal["params", "grads", "update"]


class ProbeSpec(StrictModel):
    # params: the state after `step` updates; grads: the gradient of the step's minibatch loss
    # from that state; update: the change the step's update (optimizer step and interventions)
    # makes to the parameters from that state
    reads: ClassVar[Reads] = "params"
    every: Int = Field(ge=1, le=MAX_STEPS,
                       description="measured at steps 0, every, 2 every, ... (the budget too "
                                   "when it is a multiple)")

    def curves(self) -> list[str]:
        raise NotImplementedError

    def roles_needed(self) -> tuple[str, ...]:
        raise NotImplementedError

    def misfit(self, p: int) -> str | None:
        """Why this probe cannot measure a task with p numbers (None: it can)."""
        return None


class SigmaMaxSpec(ProbeSpec):
    """The largest singular value of each named matrix (paper 1's σmax(E), σmax(W))."""

    name: Literal["sigma_max"]
    of: Roles = Field(default_factory=lambda: ["E", "W"], min_length=1,
                           description="roles: E (embedding), W (first weight matrix)")

    def curves(self) -> list[str]:
        return [f"sigma_max.{role}" for role in self.of]

    def roles_needed(self) -> tuple[str, ...]:
        return tuple(self.of)


class GradNormRatioSpec(ProbeSpec):
    """Frobenius norms of the gradients of E and W, and their ratio ‖∇E‖/‖∇W‖ (paper 1's
    Prop. 4.1 compares it with σmax(W)/σmax(E))."""

    reads: ClassVar[Reads] = "grads"
    name: Literal["grad_norm_ratio"]

    def curves(self) -> list[str]:
        return ["grad_norm.E", "grad_norm.W", "grad_norm_ratio"]

    def roles_needed(self) -> tuple[str, ...]:
        return ("E", "W")


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

    def misfit(self, p: int) -> str | None:
        n = p // 2 + (0 if self.exclude_dc else 1)
        if self.k > n:
            return (f"fourier_share: k = {self.k} exceeds the {n} frequencies of p = {p} "
                    f"({'DC left out' if self.exclude_dc else 'DC included'}; f and p - f "
                    "count once), so the share would be 1 whatever E is")
        return None


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


PROBE_SPECS: dict[str, type[ProbeSpec]] = {
    "sigma_max": SigmaMaxSpec,
    "grad_norm_ratio": GradNormRatioSpec,
    "rank": RankSpec,
    "fourier_share": FourierShareSpec,
    "update_norm": UpdateNormSpec,
    "hessian_max": HessianMaxSpec,
    "token_frequency": TokenFrequencySpec,
}
