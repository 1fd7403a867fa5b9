"""Optimizers and the learning-rate schedule: :func:`make_optimizer` builds the one a config
asks for, :func:`learning_rate` gives an epoch's rate.

The feature CRF's sparse gradients need an optimizer of their own.

A batch touches a few thousand of the feature CRF's million weight rows, so its gradient is
sparse; torch's Adam and SGD with momentum or weight decay need dense gradients, and a dense
gradient and update of the whole matrix on every step would cost far more than the rest of the
step. :class:`SparseSGD` is plain SGD that adds sparse gradients row by row, with L2
regularisation applied exactly as a multiplicative decay of all weights (the update of
``lr * weight_decay * w`` that an L2 term ``weight_decay / 2 * ||w||^2`` gives), as CRFsuite's
``l2sgd`` and Bottou's ``crfsgd`` do.
"""

from __future__ import annotations

import dataclasses

import torch

from crftag.config.sections import Config, TrainConfig
from crftag.features.registry import feature_modules

__all__ = ["SparseSGD", "learning_rate", "make_optimizer", "set_learning_rate"]


def make_optimizer(config: Config, model: torch.nn.Module) -> torch.optim.Optimizer:
    """The optimizer of ``config.train`` over the model's trained parameters. With
    ``train.embedding_lr_scale`` the word embeddings, and the groups a feature asks for
    (``Feature.parameter_groups``: a fine-tuned pretrained encoder), are parameter groups of
    their own, whose ``lr_scale`` :func:`set_learning_rate` applies."""
    settings = config.train
    parameters = [p for p in model.parameters() if p.requires_grad]
    if config.model.encoder == "features":
        return SparseSGD(parameters, lr=settings.lr, weight_decay=settings.weight_decay)
    scaled = []  # (parameters, their lr_scale)
    embedding = model.word_embedding.weight
    if settings.embedding_lr_scale != 1.0 and embedding.requires_grad:
        scaled.append(([embedding], settings.embedding_lr_scale))
    for feature, module in feature_modules(dataclasses.asdict(config.model), model):
        scaled += feature.parameter_groups(module, config)
    if scaled:
        taken = {id(p) for group, _ in scaled for p in group}
        parameters = [
            {"params": [p for p in parameters if id(p) not in taken], "lr_scale": 1.0},
            *({"params": group, "lr_scale": scale} for group, scale in scaled),
        ]
    if settings.optimizer == "adam":
        kind, options = torch.optim.Adam, {"lr": settings.lr, "weight_decay": settings.weight_decay}
    else:
        kind = torch.optim.SGD
        options = {
            "lr": settings.lr,
            "momentum": settings.momentum,
            "weight_decay": settings.weight_decay,
        }
    # The fused update makes one pass over each parameter instead of several: it halves the
    # cost of stepping the large word-embedding matrix. Older torch builds lack it.
    try:
        return kind(parameters, fused=True, **options)
    except (RuntimeError, TypeError, ValueError):
        return kind(parameters, **options)


def learning_rate(settings: TrainConfig, epoch: int) -> float:
    """The rate of 1-based ``epoch``: SGD decays it as lr / (1 + lr_decay * (epoch - 1)) (Ma &
    Hovy 2016); Adam keeps it."""
    if settings.optimizer == "sgd":
        return settings.lr / (1.0 + settings.lr_decay * (epoch - 1))
    return settings.lr


def set_learning_rate(optimizer: torch.optim.Optimizer, rate: float) -> None:
    """Every parameter group's rate: ``rate`` times the group's ``lr_scale`` (1 if none)."""
    for group in optimizer.param_groups:
        group["lr"] = rate * group.get("lr_scale", 1.0)


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
