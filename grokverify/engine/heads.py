"""How a model's outputs become a loss and a prediction, written once for tensors with any
leading dimensions, so the same code serves one plain model (B, out) and a seed batch (S, B, out).

Classification: cross-entropy of the logits, prediction = argmax. Regression (paper 2's toy):
squared distance to the target of the example's class (each seed has its own fixed random
targets, (C, D) or (S, C, D)), prediction = the nearest target.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor


def _cross_entropy_each(out: Tensor, y: Tensor) -> Tensor:
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1),
                           reduction="none").view(y.shape)


@dataclass(frozen=True)
class Head:
    regression: bool

    @staticmethod
    def _errors(out: Tensor, y: Tensor, targets: Tensor) -> Tensor:
        """Each output's difference from its class's target, (..., B, D)."""
        return out - torch.take_along_dim(targets, y.unsqueeze(-1), dim=-2)

    def _squared_errors(self, out: Tensor, y: Tensor, targets: Tensor) -> Tensor:
        return self._errors(out, y, targets) ** 2

    def example_losses(self, out: Tensor, y: Tensor,
                       targets: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Each example's loss and whether it is predicted right, both shaped like y: an
        evaluation in blocks of rows averages them once at the end, so blocks do not matter."""
        if not self.regression:
            return _cross_entropy_each(out, y), out.argmax(dim=-1) == y
        assert targets is not None
        nearest = torch.cdist(out, targets).argmin(dim=-1)
        return self._squared_errors(out, y, targets).mean(dim=-1), nearest == y

    def mean_loss(self, out: Tensor, y: Tensor, targets: Tensor | None = None) -> Tensor:
        """The training loss: each seed's mean over its batch (no prediction needed)."""
        if not self.regression:
            return _cross_entropy_each(out, y).mean(dim=-1)
        assert targets is not None
        return self._squared_errors(out, y, targets).flatten(-2).mean(dim=-1)

    def mean_loss_and_grad(self, out: Tensor, y: Tensor,
                           targets: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """`mean_loss` of a seed batch (S, B, out) and its gradient with respect to `out`, for a
        hand-written backward (`grokverify.engine.fast`; a float64 test checks it against
        autograd of `mean_loss`)."""
        n = out.shape[-2]
        if not self.regression:
            logp = torch.log_softmax(out, dim=-1)
            label = y.unsqueeze(-1)
            loss = -logp.gather(-1, label).squeeze(-1).mean(dim=-1)
            grad = logp.exp_().scatter_add_(-1, label, torch.full_like(label, -1,
                                                                       dtype=out.dtype))
            return loss, grad.mul_(1.0 / n)
        assert targets is not None
        diff = self._errors(out, y, targets)
        loss = (diff * diff).flatten(-2).mean(dim=-1)
        return loss, diff.mul_(2.0 / (n * out.shape[-1]))


CLASSIFICATION = Head(regression=False)
REGRESSION = Head(regression=True)
