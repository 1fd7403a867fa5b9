"""A teacher for distillation: a trained model loaded in torch, whose CRF's exact posteriors on
sentences are read batch by batch: each token's marginals, the transition marginals summed over
each sentence, and the Viterbi path.

Any crftag model teaches: a run directory or checkpoint (with or without ``model.transformer``),
or an export or a bundled name, whose weights are rebuilt in torch as ``crftag.load`` does for
``--device cuda`` (the NumPy runtime has no transition marginals). An ONNX graph is refused: its
checkpoint or export teaches instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from crftag.crf.distillation import teacher_marginals
from crftag.data.batching import build_batch
from crftag.data.indices import batch_rows
from crftag.data.unlabelled_text import file_digest
from crftag.errors import CrftagError
from crftag.inference.base import TaggerBase
from crftag.inference.tagger import Tagger
from crftag.modelfiles.checkpoint import load_model
from crftag.modelfiles.kinds import model_file

__all__ = ["TeacherLabels", "label_sentences", "load_teacher", "teacher_digest", "torch_teacher"]


@dataclass
class TeacherLabels:
    """What the teacher says about each of N sentences, in order (K tags, n_i tokens each).

    token_marginals       N arrays (n_i, K) float32: p(y_t = k | x)
    transition_marginals  (N, K, K) float32: sum over t of p(y_{t-1} = i, y_t = j | x)
    viterbi               N arrays (n_i,) int64: the best path's tag ids
    """

    token_marginals: list[np.ndarray]
    transition_marginals: np.ndarray
    viterbi: list[np.ndarray]


def teacher_digest(teacher_path: str) -> str:
    """SHA-256 (hex) of the model file that ``teacher_path`` names (a run directory's
    ``model.pt``, a checkpoint, an export, a bundled name's file)."""
    return file_digest(model_file(os.fspath(teacher_path)).path, "model file")


def load_teacher(teacher_path: str, device: torch.device | str = "cpu") -> Tagger:
    """The torch tagger of any crftag model but an ONNX graph, on ``device``; a missing or
    damaged model is a one-line error naming it."""
    found = model_file(os.fspath(teacher_path))
    if found.kind == "onnx":
        raise CrftagError(
            f"{found.path}: an ONNX graph cannot teach (it gives no CRF to read posteriors "
            "from); pass the model's checkpoint or its .npz export"
        )
    tagger = Tagger.from_loaded(load_model(found.path, device), device)
    tagger.source = found.path
    return tagger


def torch_teacher(teacher: TaggerBase) -> Tagger:
    """``teacher`` as a torch tagger: itself, or, for a model ``crftag.load`` runs in NumPy (an
    export, a bundled name), its weights rebuilt in torch on the CPU."""
    if isinstance(teacher, Tagger):
        return teacher
    return load_teacher(teacher.source, "cpu")


@torch.inference_mode()
def label_sentences(
    teacher: Tagger,
    sentences: Sequence[Sequence[str]],
    documents: Sequence[Hashable],
    *,
    temperature: float = 1.0,
    batch_size: int = 64,
    on_batch: Callable[[int], None] | None = None,
) -> TeacherLabels:
    """The teacher's posteriors at ``temperature`` and its Viterbi paths for non-empty
    ``sentences``, batched as the tagger batches them (``documents``: one key per sentence, equal
    for the sentences of one document, for a model with document context). ``on_batch`` is
    told the number of sentences of each batch done."""
    teacher.model.eval()
    count, num_tags = len(sentences), len(teacher.tag_symbols)
    tokens: list[np.ndarray | None] = [None] * count
    paths: list[np.ndarray | None] = [None] * count
    transitions = np.zeros((count, num_tags, num_tags), dtype=np.float32)
    rows = batch_rows(sentences, batch_size, documents, teacher.document_context)
    for indices, groups in rows:
        batch = build_batch([sentences[i] for i in indices], teacher.vocabularies, documents=groups)
        batch = batch.to(teacher.device)
        emissions = teacher.model.emissions(batch).float()  # (B, T, K)
        crf = teacher.model.crf
        token_marginals, transition_marginals = teacher_marginals(
            crf, emissions, batch.mask, temperature
        )
        best, _ = crf.decode(emissions, batch.mask)  # (B, T); a temperature changes no argmax
        lengths = batch.lengths.tolist()
        token_marginals, best = token_marginals.cpu().numpy(), best.cpu().numpy()
        transitions[indices] = transition_marginals.cpu().numpy()
        for row, (index, length) in enumerate(zip(indices, lengths, strict=True)):
            tokens[index] = token_marginals[row, :length]
            paths[index] = best[row, :length]
        if on_batch is not None:
            on_batch(len(indices))
    return TeacherLabels(tokens, transitions, paths)
