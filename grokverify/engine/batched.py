"""The seed-batched form of any model, derived from its plain definition: each seed's plain
module is built from its own streams, its parameters are stacked along a leading seed axis
(`torch.func.stack_module_state`), and the forward is the plain forward under `torch.func.vmap`
(a fast path, `grokverify.engine.fast`, may replace it with the same function).

The training loss is the sum over seeds of each seed's mean loss weighted 1 (training) or 0
(diverged, or a lone seed's ghost), so each seed gets exactly its own gradient; a seed trains the
same alone and in any batch (padding, ghost: docs/determinism.md, batch-invariance), with its
training-step noise (dropout) from its own generator."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.func import functional_call, stack_module_state, vmap

from grokverify.claim.models import ModelSpec
from grokverify.engine.heads import Head
from grokverify.engine.models import DataShape, Model
from grokverify.engine.streams import to_device
from grokverify.kinds import MODELS

_ALIGN = 64  # elements (the fused optimizers finish a tensor in scalar code: `_padded_leaf`)

FastForward = Callable[["BatchedModel", Tensor, Tensor], "Tensor | None"]
FastStep = Callable[["BatchedModel", Tensor, Tensor, Tensor, Tensor], "Tensor | None"]


@dataclass(frozen=True)
class FastPath:
    """A model kind's hand-batched computation (`grokverify.engine.fast`)."""

    forward: FastForward | None = None
    step: FastStep | None = None


def _padded_leaf(t: Tensor) -> nn.Parameter:
    """The stacked (S, ...) tensor as a leaf in which no seed's element lies in a kernel's scalar
    tail: flat and zero-padded to a multiple of `_ALIGN` (the padding gets no gradient, stays 0)
    unless each seed's size is already a multiple."""
    if t[0].numel() % _ALIGN == 0:
        return nn.Parameter(t.contiguous())
    flat = t.new_zeros(-(-t.numel() // _ALIGN) * _ALIGN)
    flat[:t.numel()] = t.reshape(-1)
    return nn.Parameter(flat)


def batch_members(seeds: list[int]) -> list[int]:
    """The seeds a batch trains: the given ones, plus a ghost copy of a lone seed (MKL rounds a
    one-matrix batched product differently; the ghost's loss weight is 0, its results dropped)."""
    return list(seeds) + list(seeds[:1]) if len(seeds) == 1 else list(seeds)


def seed_view(t: Tensor, shape: torch.Size) -> Tensor:
    """A leaf (or its gradient, or an optimizer state shaped like it) as (S, ...)."""
    return t if t.shape == shape else t[:shape.numel()].view(shape)


def per_seed(values: Tensor, like: Tensor) -> Tensor:
    """(S,) values viewed to broadcast over a (S, ...) tensor like `like`."""
    return values.view(-1, *[1] * (like.dim() - 1))


class BatchedModel(nn.Module):
    """S seeds of one model kind (see the module docstring). Parameters are addressed by the
    plain module's names ("fc1.weight") with a leading seed dimension, or by role ("E", "W")."""

    skeleton: Model

    def __init__(self, spec: ModelSpec, shape: DataShape, seeds: list[int],
                 dtype: torch.dtype = torch.float32, fast_path: FastPath | None = None):
        super().__init__()
        cls = MODELS.of(spec)
        self.spec, self.shape, self.model_class = spec, shape, cls
        self.seeds = list(seeds)
        self.members = batch_members(self.seeds)
        modules = [cls.for_seed(spec, shape, s).to(dtype) for s in self.members]
        params, buffers = stack_module_state(modules)  # type: ignore[arg-type]
        self.names = list(params)
        self.shapes = {k: v.shape for k, v in params.items()}
        self.leaves = nn.ParameterList([_padded_leaf(params[k].detach()) for k in self.names])
        self._buffer_names = {k: k.replace(".", "__") for k in buffers}
        for name, value in buffers.items():
            self.register_buffer(self._buffer_names[name], value)
        with torch.device("meta"):
            skeleton = cls(spec, shape)
        # the plain module vmap calls with each seed's tensors: structure only (meta tensors),
        # kept out of this module's children so .to() and .double() leave it alone
        object.__setattr__(self, "skeleton", skeleton)
        self.fast_path = fast_path or FastPath()  # none: the derived form only
        self._vmapped = vmap(self._one_seed)
        # each member's generator of training-step noise (none: the model has no noise)
        self._noise_gens = [g for g in (cls.noise_generator(spec, shape, s) for s in self.members)
                            if g is not None]

    # ------------------------------------------------------------ parameters

    @property
    def n_seeds(self) -> int:
        """Seeds in the batch, the ghost included."""
        return len(self.members)

    @property
    def head(self) -> Head:
        return self.skeleton.head

    def leaf(self, name: str) -> nn.Parameter:
        return self.leaves[self.names.index(name)]

    def param(self, name: str) -> Tensor:
        """Parameter `name` as (S, ...), a view of its leaf."""
        return seed_view(self.leaf(name), self.shapes[name])

    def params(self) -> dict[str, Tensor]:
        return {k: seed_view(leaf, self.shapes[k]) for k, leaf in zip(self.names, self.leaves,
                                                                      strict=True)}

    def grad(self, name: str) -> Tensor | None:
        g = self.leaf(name).grad
        return None if g is None else seed_view(g, self.shapes[name])

    def role(self, role: str) -> str:
        """The parameter that plays `role` ("E", "W") in this model."""
        return self.model_class.roles[role]

    def role_param(self, role: str) -> Tensor:
        """The parameter that plays `role`, as (S, ...)."""
        return self.param(self.role(role))

    def buffer(self, name: str) -> Tensor | None:
        key = self._buffer_names.get(name)
        return None if key is None else getattr(self, key)

    def buffers_by_name(self) -> dict[str, Tensor]:
        return {k: getattr(self, v) for k, v in self._buffer_names.items()}

    @property
    def seed_shapes(self) -> dict[nn.Parameter, torch.Size]:
        """Each leaf's (S, ...) shape, for `seed_view` on it or on optimizer state like it."""
        return {leaf: self.shapes[k] for k, leaf in zip(self.names, self.leaves, strict=True)}

    def param_groups(self) -> dict[str, list[nn.Parameter]]:
        emb = [self.leaf(k) for k in self.model_class.embedding]
        rest = [leaf for k, leaf in zip(self.names, self.leaves, strict=True)
                if k not in self.model_class.embedding]
        return {"embedding": emb, "decoder": rest} if emb else {"decoder": rest}

    # ------------------------------------------------------------ computation

    def _one_seed(self, params: dict[str, Tensor], buffers: dict[str, Tensor], a: Tensor,
                  b: Tensor, noise: dict[str, Tensor] | None = None) -> Tensor:
        kwargs = {} if noise is None else {"noise": noise}
        return functional_call(self.skeleton, (params, buffers), (a, b), kwargs)

    def derived_forward(self, a: Tensor, b: Tensor,
                        noise: dict[str, Tensor] | None = None) -> Tensor:
        """The plain forward of every seed at once: (S, B) operands -> (S, B, out); `noise`
        (training only): `step_noise`'s tensors, (S, ...) each."""
        if noise:
            return self._vmapped(self.params(), self.buffers_by_name(), a, b, noise)
        return self._vmapped(self.params(), self.buffers_by_name(), a, b)

    def step_noise(self, rows: int) -> dict[str, Tensor]:
        """The next training step's noise for `rows` examples a seed: each member's
        `Model.step_noise` from its own generator, stacked to (S, ...) in the parameters' dtype
        and device; empty for a model without noise (nothing drawn)."""
        draws = [self.skeleton.step_noise(gen, rows) for gen in self._noise_gens]
        if not draws or not draws[0]:
            return {}
        leaf = self.leaves[0]
        return {k: to_device(torch.stack([d[k] for d in draws]), leaf.device, leaf.dtype)
                for k in draws[0]}

    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        fast = self.fast_path.forward
        out = fast(self, a, b) if fast is not None else None
        return self.derived_forward(a, b) if out is None else out

    def _targets(self) -> Tensor | None:
        return self.buffer("targets")

    def example_losses(self, out: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """(S, B) losses and correctness."""
        return self.head.example_losses(out, y, self._targets())

    def mean_loss(self, out: Tensor, y: Tensor) -> Tensor:
        return self.head.mean_loss(out, y, self._targets())

    def loss_and_grads(self, a: Tensor, b: Tensor, y: Tensor, weight: Tensor) -> Tensor:
        """A training step: the per-seed losses (S,), detached, with every leaf's .grad set (not
        accumulated) to the gradient of sum_i weight_i * loss_i. A step with noise takes the
        derived form (a fast path knows no noise)."""
        noise = self.step_noise(a.shape[1])
        step = self.fast_path.step
        loss = step(self, a, b, y, weight) if step is not None and not noise else None
        if loss is not None:  # the step overwrote every gradient it keeps
            return loss
        for leaf in self.leaves:
            leaf.grad = None
        out = self.derived_forward(a, b, noise) if noise else self(a, b)
        loss = self.mean_loss(out, y)
        loss.backward(weight)
        return loss.detach()

    def extra_repr(self) -> str:
        return f"kind={self.spec.kind}, seeds={self.seeds}"  # type: ignore[attr-defined]


def plain_copy(batched: BatchedModel, index: int) -> Model:
    """Seed `index` of a batched model as a plain module with the same weights and buffers (for
    references and probes' tests)."""
    model = batched.model_class.for_seed(batched.spec, batched.shape, batched.members[index])
    dtype = batched.leaves[0].dtype
    model = model.to(dtype)
    with torch.no_grad():
        for name, value in batched.params().items():
            model.get_parameter(name).copy_(value[index])
        for name, value in batched.buffers_by_name().items():
            model.get_buffer(name).copy_(value[index])
    return model
