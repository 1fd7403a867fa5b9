"""What ``crftag pretrain`` trains: character language models (``--objective char_lm``, for
``model.char_lm``) or a truecaser (``--objective truecase``, for ``model.truecaser``).

An objective says which characters make the vocabulary, how a line becomes training pieces, the
loss a batch of pieces gives, the held-out score, and the file the result is written to; the
loop of :mod:`crftag.training.pretrain` is the same for both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from crftag.data.char_codes import CharCodes
from crftag.data.truecase import case_targets
from crftag.modelfiles.char_lm_files import (
    CHAR_LM_FILE,
    TRUECASER_FILE,
    PretrainedCharLM,
    PretrainedTruecaser,
    save_char_lm,
    save_truecaser,
)
from crftag.nn.char_lm import CharLanguageModels
from crftag.nn.truecaser import IGNORED, Truecaser

__all__ = ["OBJECTIVES", "CharLMObjective", "TruecaseObjective", "objective_named"]

OBJECTIVES = ("char_lm", "truecase")  # the one list of them


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


class TruecaseObjective:
    """A truecaser over lower-cased lines; scored by held-out character accuracy and the F1
    of the upper-case class."""

    result_file = TRUECASER_FILE

    def vocabulary_text(self, lines: list[str]) -> list[str]:
        return [case_targets(line)[0] for line in lines]

    def build(self, num_symbols: int, char_dim: int, hidden_size: int) -> Truecaser:
        return Truecaser(num_symbols, char_dim, hidden_size)

    def pieces(
        self, codes: CharCodes, lines: list[str], size: int
    ) -> list[tuple[list[int], list[int]]]:
        """(codes of the lower-cased piece, its targets framed by :data:`IGNORED`), pieces of
        at most ``size`` characters."""
        pieces = []
        for line in lines:
            lowered, targets = case_targets(line)
            for i in range(0, len(line), size):
                framed = [IGNORED, *targets[i : i + size], IGNORED]
                pieces.append((codes.encode(lowered[i : i + size]), framed))
        return pieces

    def batch(self, pieces: Sequence[tuple[list[int], list[int]]], device: torch.device) -> tuple:
        """(codes (B, L) padded with 0, lengths (B,), targets (B, L) padded with IGNORED)."""
        lengths = torch.tensor([len(coded) for coded, _ in pieces])
        codes = _padded([coded for coded, _ in pieces], 0, device)
        return codes, lengths, _padded([targets for _, targets in pieces], IGNORED, device)

    def loss(self, model: Truecaser, batch: tuple) -> torch.Tensor:
        """The mean loss a character."""
        codes, lengths, targets = batch
        return model.nll(codes, lengths, targets) / int((targets != IGNORED).sum())

    def score(self, model: Truecaser, batches: list[tuple]) -> dict:
        """Character accuracy and the precision, recall and F1 of the upper-case class, in %."""
        counts = torch.zeros(4, dtype=torch.long)  # correct, characters, predicted, gold upper
        true_upper = 0
        for codes, lengths, targets in batches:
            predicted = model.logits(codes, lengths).argmax(2)  # (B, L)
            real = targets != IGNORED
            counts += torch.stack(
                [
                    (predicted == targets)[real].sum(),
                    real.sum(),
                    (predicted == 1)[real].sum(),
                    (targets == 1).sum(),
                ]
            ).cpu()
            true_upper += int(((predicted == 1) & (targets == 1)).sum())
        correct, characters, predicted_upper, gold_upper = counts.tolist()
        precision = true_upper / predicted_upper if predicted_upper else 0.0
        recall = true_upper / gold_upper if gold_upper else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {
            "accuracy": round(100 * correct / characters, 4),
            "upper_precision": round(100 * precision, 4),
            "upper_recall": round(100 * recall, 4),
            "upper_f1": round(100 * f1, 4),
            "characters": characters,
        }

    def save(self, directory: str, codes: CharCodes, model, settings: dict, scores: dict):
        pretrained = PretrainedTruecaser(codes, model, settings, scores)
        save_truecaser(directory, pretrained)
        return pretrained


def objective_named(name: str) -> CharLMObjective | TruecaseObjective:
    if name not in OBJECTIVES:
        raise ValueError(f"expected an objective of {', '.join(OBJECTIVES)}, got {name!r}")
    return CharLMObjective() if name == "char_lm" else TruecaseObjective()
