"""Tagging token lists with a trained model: batching by length, decoding, and writing the tags
in IOB2 (or as they are, for tags that are not spans)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from crftag.batching import bucketed_batches, collate, encode
from crftag.checkpoint import LoadedModel, load_model
from crftag.schemes import convert

__all__ = ["Tagger"]


class Tagger:
    """A loaded model ready to tag; ``Tagger.load(path)`` reads a checkpoint or run directory."""

    def __init__(self, loaded: LoadedModel, device: torch.device | str = "cpu") -> None:
        self.loaded = loaded
        self.device = torch.device(device)
        self.model = loaded.model.to(self.device)

    @classmethod
    def load(cls, path: str, device: torch.device | str = "cpu") -> Tagger:
        return cls(load_model(path, device), device)

    @property
    def spans(self) -> bool:
        """Whether the tags are entity spans (NER) rather than one label per token (POS)."""
        return self.loaded.train_scheme != "none"

    @torch.inference_mode()
    def tag(self, sentences: Sequence[Sequence[str]], batch_size: int = 64) -> list[list[str]]:
        """Tags for each token list, in input order; an empty sentence gets no tags."""
        self.model.eval()
        vocabularies = self.loaded.vocabularies
        results: list[list[str]] = [[] for _ in sentences]
        non_empty = [i for i, tokens in enumerate(sentences) if tokens]
        lengths = [len(sentences[i]) for i in non_empty]
        symbols = vocabularies.tags.symbols
        for batch_rows in bucketed_batches(lengths, batch_size):
            indices = [non_empty[row] for row in batch_rows]
            batch = collate([encode(sentences[i], vocabularies) for i in indices]).to(self.device)
            tags, _ = self.model.decode(batch)
            for index, row in zip(indices, tags.tolist(), strict=True):  # one host copy a batch
                predicted = [symbols[t] for t in row[: len(sentences[index])]]
                results[index] = convert(predicted, "iob2") if self.spans else predicted
        return results
