"""Weight averaging over the ends of epochs (stochastic weight averaging, Izmailov et al. 2018).

The weights SGD ends an epoch with wander around a good region; their mean usually sits nearer
its centre and generalises better than any one of them. Training itself goes on from the raw
weights; only evaluation and the saved model use the mean.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

__all__ = ["WeightAverage"]


class WeightAverage:
    """The running mean of a model's trained parameters, one sample per :meth:`add`.

    Only parameters that train are averaged; the others (frozen embeddings, the fixed rows kept
    as buffers) are the same in every sample.
    """

    def __init__(self, model: torch.nn.Module) -> None:
        self._parameters = [p for p in model.parameters() if p.requires_grad]
        self._mean: list[torch.Tensor] = []
        self.count = 0

    @torch.no_grad()
    def add(self) -> None:
        """Fold the model's current weights into the mean."""
        if not self._mean:
            self._mean = [p.detach().clone() for p in self._parameters]
        else:
            # mean_n = mean_{n-1} + (w - mean_{n-1}) / n, kept in the parameters' own dtype
            for mean, parameter in zip(self._mean, self._parameters, strict=True):
                mean.lerp_(parameter, 1.0 / (self.count + 1))
        self.count += 1

    @contextmanager
    def applied(self) -> Iterator[None]:
        """Within the block the model holds the mean (if any); the raw weights come back after.

        The weights are copied in place, so views of them (cuDNN's flattened LSTM weights, an
        optimizer's references) stay valid.
        """
        if not self.count:
            yield
            return
        with torch.no_grad():
            raw = [p.detach().clone() for p in self._parameters]
            for parameter, mean in zip(self._parameters, self._mean, strict=True):
                parameter.copy_(mean)
        try:
            yield
        finally:
            with torch.no_grad():
                for parameter, weights in zip(self._parameters, raw, strict=True):
                    parameter.copy_(weights)

    def state_dict(self) -> dict:
        return {"count": self.count, "mean": [m.detach().cpu() for m in self._mean]}

    def load_state_dict(self, state: dict) -> None:
        self.count = state["count"]
        if not self.count:  # nothing averaged yet: no mean was kept
            self._mean = []
            return
        self._mean = [
            m.to(device=p.device, dtype=p.dtype)
            for m, p in zip(state["mean"], self._parameters, strict=True)
        ]
