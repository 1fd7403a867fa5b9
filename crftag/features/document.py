"""Document context (``model.document_context``): each token also sees the mean of the BiLSTM
states of every occurrence of its word in its document (a team name in a results table, a
person named in full earlier), beside its own states before the tag projection.

Its values: (B, T) int64 group ids, made for a whole batch of whole documents
(:func:`crftag.data.indices.group_ids`: the same id for each occurrence of a word in one
document; padding an id of its own). No weights of its own: the projection (or the tanh layer)
is twice as wide. The NumPy and ONNX runtimes take the means after the linear map, the mean of
the mapped states being the mapped mean: K' columns averaged instead of 2H.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from crftag.data.indices import group_ids
from crftag.features.base import STATES, Feature, TextBatch

__all__ = ["DocumentContext", "group_means"]


def group_means(states: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """states (N, D), groups (N,) ids -> (N, D): each position the mean over the positions with
    its id. Only real positions are packed, so padding (an id of its own) never counts."""
    # Sorted by id, each group's rows are one run: np.add.reduceat sums the runs (np.add.at,
    # which would do it unsorted, is many times slower).
    order = np.argsort(groups, kind="stable")
    sorted_ids = groups[order]
    firsts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    sizes = np.diff(np.r_[firsts, len(groups)])
    means = np.add.reduceat(states[order], firsts, axis=0) / sizes[:, None].astype(np.float32)
    result = np.empty_like(states)
    result[order] = np.repeat(means, sizes, axis=0)
    return result


class DocumentContext(Feature):
    name = "groups"
    key = "model.document_context"
    stage = STATES
    per_sentence = False
    needs_bilstm = True

    def encodes(self, vocabularies) -> bool:
        return True  # whenever a batch is given its documents

    def arrays(self, text: TextBatch) -> np.ndarray | None:
        """(B, T) int64 group ids, or None for a batch given without documents."""
        if text.documents is None:
            return None
        return group_ids(text.sentences, text.documents, text.vocabularies)

    def width(self, model: Mapping, vocabularies: Mapping) -> int:
        return 1

    def torch_states(self, states, batch):
        """states (B, T, D) -> (B, T, D): each position the mean of the states of every
        position with its group id."""
        import torch

        groups = batch.groups
        width = states.size(2)
        flat_ids = groups.reshape(-1)
        flat = states.reshape(-1, width)
        count = int(flat_ids.max()) + 1
        sums = flat.new_zeros(count, width).index_add_(0, flat_ids, flat)
        sizes = torch.bincount(flat_ids, minlength=count).clamp_(min=1).to(flat.dtype)
        return (sums / sizes.unsqueeze(1))[flat_ids].view_as(states)

    def numpy_states(self, states, block, inputs, packing):
        groups = inputs["groups"][packing.rows, packing.steps]
        return group_means(states @ block.T, groups)

    def onnx_inputs(self) -> list[tuple[str, list[str]]]:
        return [("groups", ["batch", "length"])]

    def onnx_states(self, graph, states: str, block: np.ndarray) -> str:
        from crftag.modelfiles.onnx_graph import group_means as graph_group_means

        mapped = graph.op("MatMul", states, graph.const(block.T, np.float32))
        return graph_group_means(graph, mapped, "groups")
