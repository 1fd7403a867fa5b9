"""What ``crftag pretrain`` trains: character language models (``--objective char_lm``, for
``model.char_lm``).

An objective says which characters make the vocabulary, how a line becomes training pieces, the
loss a batch of pieces gives, the held-out score, and the file the result is written to; the
loop of :mod:`crftag.training.pretrain` runs any of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from crftag.config.removed import REMOVED_OBJECTIVES
from crftag.data.char_codes import CharCodes
from crftag.errors import CrftagError
from crftag.modelfiles.char_lm_files import CHAR_LM_FILE, PretrainedCharLM, save_char_lm
from crftag.nn.char_lm import CharLanguageModels

__all__ = ["OBJECTIVES", "CharLMObjective", "objective_named"]

OBJECTIVES = ("char_lm",)  # the one list of them


def _padded(rows: Sequence[list[int]], fill: int, device: torch.device) -> torch.Tensor:
    """(B, L) long: the rows padded with ``fill`` to the longest."""
    padded = torch.full((len(rows), max(len(row) for row in rows)), fill, dtype=torch.long)
    for index, row in enumerate(rows):
        padded[index, : len(row)] = torch.tensor(row)
    return padded.to(device)


class CharLMObjective:
    """A forward and a backward character language model; scored by held-out perplexity."""

    result_file = CHAR_LM_FILE

    def vocabulary_text(self, lines: list[str]) -> list[str]:
        return lines

    def build(self, num_symbols: int, char_dim: int, hidden_size: int) -> CharLanguageModels:
        return CharLanguageModels(num_symbols, char_dim, hidden_size)

    def pieces(self, codes: CharCodes, lines: list[str], size: int) -> list[list[int]]:
        """The lines' codes, cut into pieces of at most ``size`` characters."""
        return [
            codes.encode(line[i : i + size]) for line in lines for i in range(0, len(line), size)
        ]

    def batch(self, pieces: Sequence[list[int]], device: torch.device) -> tuple:
        """(codes (B, L) padded with 0, lengths (B,))."""
        return _padded(pieces, 0, device), torch.tensor([len(piece) for piece in pieces])

    def loss(self, model: CharLanguageModels, batch: tuple) -> torch.Tensor:
        """The mean loss a predicted character, both directions."""
        codes, lengths = batch
        return model.nll(codes, lengths).sum() / (2 * int((lengths - 1).sum()))

    def score(self, model: CharLanguageModels, batches: list[tuple]) -> dict:
        """The two models' perplexity: exp of the mean negative log-likelihood of a predicted
        character, each direction."""
        total = torch.zeros(2, dtype=torch.float64)
        count = 0
        for codes, lengths in batches:
            total += model.nll(codes, lengths).double().cpu()
            count += int((lengths - 1).sum())
        forward, backward = (math.exp(float(value) / count) for value in total)
        return {"forward": round(forward, 4), "backward": round(backward, 4), "characters": count}

    def save(self, directory: str, codes: CharCodes, model, settings: dict, scores: dict):
        pretrained = PretrainedCharLM(codes, model, settings, scores)
        save_char_lm(directory, pretrained)
        return pretrained


def objective_named(name: str) -> CharLMObjective:
    """The objective ``name``; a removed one (a resume state written before) is a one-line
    error saying why."""
    if name in REMOVED_OBJECTIVES:
        raise CrftagError(f"--objective {name}: {REMOVED_OBJECTIVES[name]}")
    if name not in OBJECTIVES:
        raise ValueError(f"expected an objective of {', '.join(OBJECTIVES)}, got {name!r}")
    return CharLMObjective()
