"""An optimizer for the feature CRF's sparse gradients.

A batch touches a few thousand of the feature CRF's million weight rows, so its gradient is
sparse; torch's Adam and SGD with momentum or weight decay need dense gradients, and a dense
gradient and update of the whole matrix on every step would cost far more than the rest of the
step. :class:`SparseSGD` is plain SGD that adds sparse gradients row by row, with L2
regularisation applied exactly as a multiplicative decay of all weights (the update of
``lr * weight_decay * w`` that an L2 term ``weight_decay / 2 * ||w||^2`` gives), as CRFsuite's
``l2sgd`` and Bottou's ``crfsgd`` do.
"""

from __future__ import annotations

import torch

__all__ = ["SparseSGD"]


class SparseSGD(torch.optim.Optimizer):
    """w <- (1 - lr * weight_decay) * w - lr * grad, for dense and sparse gradients alike."""

    def __init__(self, params, lr: float, weight_decay: float = 0.0) -> None:
        if lr <= 0:
            raise ValueError(f"expected a positive learning rate, got {lr}")
        if weight_decay < 0 or lr * weight_decay >= 1:
            raise ValueError(f"expected 0 <= lr * weight_decay < 1, got {lr * weight_decay}")
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            lr, decay = group["lr"], group["weight_decay"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                if decay:
                    param.mul_(1.0 - lr * decay)
                param.add_(param.grad, alpha=-lr)
