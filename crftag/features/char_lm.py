"""Character-LM states (``model.char_lm``, experimental): each word's states of a forward and a
backward character language model pretrained by ``crftag pretrain`` (flair's contextual string
embeddings, Akbik et al. 2018): the forward model's state after the word's last character and
the backward one's at its first, read over the sentence's words joined by spaces.

Its values: each sentence's codes and word edges
(:meth:`crftag.data.char_codes.CharCodes.encode_words`), collated as :class:`CharLMInputs`. The
models' characters and sizes are kept in the vocabularies (their ``char_lm`` resource, a
:class:`crftag.data.char_codes.CharCodes`), their weights under ``char_lm.``; frozen unless
``model.char_lm_finetune``. The ONNX graph refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from crftag.data.char_codes import CharCodes
from crftag.features.base import Feature, Shapes, TextBatch, lstm_shapes

if TYPE_CHECKING:
    import torch

__all__ = ["CharLM", "CharLMInputs"]

Words = tuple[list[int], list[int], list[int]]  # (codes, lasts, firsts) of one sentence
MAX_SYMBOLS = 1 << 16  # of the models' vocabulary: characters and the reserved symbols
MAX_SYMBOL_CHARS = 16  # of one symbol ("<boundary>" the longest reserved one)
MAX_SIZES = 8  # the models' sizes beside their symbols (char_dim, hidden_size)


@dataclass
class CharLMInputs:
    """What the character models read for a batch of sentences.

    codes   (B, L) long, each sentence's words joined by spaces and framed, 0 = padding
    lengths (B,) long, on the CPU
    lasts   (B, T) long, each word's last character's position in its row of ``codes``
    firsts  (B, T) long, its first character's; both 0 at padding
    """

    codes: torch.Tensor
    lengths: torch.Tensor
    lasts: torch.Tensor
    firsts: torch.Tensor

    @classmethod
    def collate(cls, encoded: Sequence[Words]) -> CharLMInputs:
        """The inputs of sentences each :meth:`CharCodes.encode_words`'d, padded."""
        import torch

        lengths = torch.tensor([len(coded) for coded, _, _ in encoded])
        longest = max(len(last) for _, last, _ in encoded)
        widest = max(len(coded) for coded, _, _ in encoded)
        rows = torch.zeros(len(encoded), widest, dtype=torch.long)
        lasts = torch.zeros(len(encoded), longest, dtype=torch.long)
        firsts = torch.zeros_like(lasts)
        for row, (coded, last, first) in enumerate(encoded):
            rows[row, : len(coded)] = torch.tensor(coded)
            lasts[row, : len(last)] = torch.tensor(last, dtype=torch.long)
            firsts[row, : len(first)] = torch.tensor(first, dtype=torch.long)
        return cls(rows, lengths, lasts, firsts)

    def to(self, device: torch.device) -> CharLMInputs:
        return CharLMInputs(
            self.codes.to(device), self.lengths, self.lasts.to(device), self.firsts.to(device)
        )


def _pretrained_sizes(state: Any) -> tuple[int, int, int]:
    """(symbols, char_dim, hidden_size) of the models' vocabulary state."""
    if not isinstance(state, Mapping) or not isinstance(state.get("symbols"), list):
        raise ValueError("model.char_lm: the vocabularies hold no char_lm symbols")
    sizes = [state.get("char_dim"), state.get("hidden_size")]
    if not all(isinstance(size, int) and 1 <= size <= 1 << 14 for size in sizes):
        raise ValueError("vocabularies.char_lm: char_dim and hidden_size must be 1 to 16384")
    return len(state["symbols"]), sizes[0], sizes[1]


class CharLM(Feature):
    name = "char_lm"
    module_name = "char_lm"
    key = "model.char_lm"
    vocabulary_key = "char_lm"
    onnx_refusal = "takes no character language models yet; use --format numpy"
    needs_bilstm = True

    def encodes(self, vocabularies) -> bool:
        return self.resource(vocabularies) is not None

    def encode(self, text: TextBatch) -> Words:
        return self.arrays(text)[0]

    def collate(self, values: Sequence[Words], length: int) -> CharLMInputs:
        return CharLMInputs.collate(values)

    def arrays(self, text: TextBatch) -> list[Words]:
        codes = self.resource(text.vocabularies)
        return [codes.encode_words(list(tokens)) for tokens in text.sentences]

    def tensors(self, arrays: list[Words]) -> CharLMInputs:
        return CharLMInputs.collate(arrays)

    def to(self, value: CharLMInputs, device: torch.device) -> CharLMInputs:
        return value.to(device)

    def read_resource(self, config) -> CharCodes | None:
        """The characters and sizes of the pretrained models ``model.char_lm`` names."""
        from crftag.modelfiles.char_lm_files import load_char_lm, pretrained_codes

        if config.model.char_lm is None:
            return None
        return pretrained_codes(load_char_lm(config.model.char_lm, self.key))

    def resource_from_state(self, state) -> CharCodes:
        return CharCodes.from_state(state)

    def check_vocabularies(self, state: Mapping, model: Mapping) -> None:
        """The models' symbols (distinct short strings, bounded in number) and their sizes
        (integers), where the state has them; ValueError saying what is wrong otherwise. A
        model with ``model.char_lm`` and no entry is refused by :meth:`shapes`."""
        where = "vocabularies.char_lm"
        codes = state.get("char_lm")
        if codes is None:
            return
        if not isinstance(codes, dict) or not isinstance(codes.get("symbols"), list):
            raise ValueError(f"{where}: expected a mapping with a symbols list")
        symbols = codes["symbols"]
        if len(symbols) > MAX_SYMBOLS:
            raise ValueError(f"{where}: more than {MAX_SYMBOLS:,} symbols")
        if not all(isinstance(s, str) and len(s) <= MAX_SYMBOL_CHARS for s in symbols):
            raise ValueError(
                f"{where}: every symbol must be a string of at most {MAX_SYMBOL_CHARS} characters"
            )
        if len(set(symbols)) != len(symbols):
            raise ValueError(f"{where}: a symbol appears twice")
        sizes = {key: value for key, value in codes.items() if key != "symbols"}
        if len(sizes) > MAX_SIZES or not all(
            isinstance(key, str) and isinstance(value, int) and not isinstance(value, bool)
            for key, value in sizes.items()
        ):
            raise ValueError(f"{where}: expected at most {MAX_SIZES} integer sizes beside symbols")

    def shapes(self, model: Mapping, vocabularies: Mapping) -> Shapes:
        symbols, char_dim, hidden = _pretrained_sizes(vocabularies.get("char_lm"))
        shapes: Shapes = {"char_lm.embedding.weight": ((symbols, char_dim), "float")}
        shapes.update(lstm_shapes("char_lm.encoder.lstm.", char_dim, hidden, 1))
        for direction in ("forward", "backward"):
            shapes[f"char_lm.{direction}_softmax.weight"] = ((symbols, hidden), "float")
            shapes[f"char_lm.{direction}_softmax.bias"] = ((symbols,), "float")
        return shapes

    def width(self, model: Mapping, vocabularies: Mapping) -> int:
        return 2 * _pretrained_sizes(vocabularies.get("char_lm"))[2]

    def torch_module(self, config, vocabularies):
        from crftag.nn.char_lm import CharLanguageModels

        codes = self.resource(vocabularies)
        if codes is None:  # sized before the pretrained models are read: no module yet
            return None
        models = CharLanguageModels(len(codes), codes.sizes["char_dim"], codes.sizes["hidden_size"])
        models.requires_grad_(config.char_lm_finetune)
        models.finetune = config.char_lm_finetune
        return models

    def torch_forward(self, module, batch):
        """(B, T, 2H') each word's states; frozen models run without gradients (torch's own
        LSTM forward, the faster one without them)."""
        import torch

        if module.finetune:
            return module.word_states(batch.char_lm)
        with torch.no_grad():
            return module.word_states(batch.char_lm)

    def load_pretrained(self, module, config, *, resumed: bool, base) -> None:
        """The weights ``crftag pretrain`` wrote, into a new run's models."""
        from crftag.modelfiles.char_lm_files import load_char_lm

        if not resumed:
            module.load_state_dict(load_char_lm(config.model.char_lm, self.key).models.state_dict())

    def numpy_forward(self, weights, model, vocabularies):
        return _WordStates(weights)


class _WordStates:
    """The two models' states at each packed token's edges, (N, 2H'), as
    :meth:`crftag.nn.char_lm.CharLanguageModels.word_states` gives them."""

    def __init__(self, weights: Mapping[str, np.ndarray]) -> None:
        from crftag.runtime.recurrent import network_layers

        self.weights = weights
        self.layers = network_layers(weights, "char_lm.encoder.lstm.")

    def __call__(self, inputs: Mapping, tokens, threads: int) -> np.ndarray:
        from crftag.runtime.recurrent import pack, packed_lstm

        encoded = inputs["char_lm"]
        lengths = np.array([len(codes) for codes, _, _ in encoded], dtype=np.int64)
        codes = np.zeros((len(encoded), int(lengths.max())), dtype=np.int64)
        longest = max(len(last) for _, last, _ in encoded)
        lasts = np.zeros((len(encoded), longest), dtype=np.int64)
        firsts = np.zeros_like(lasts)
        for row, (coded, last, first) in enumerate(encoded):
            codes[row, : len(coded)] = coded
            lasts[row, : len(last)] = last
            firsts[row, : len(first)] = first
        packing = pack(lengths)
        embedded = self.weights["char_lm.embedding.weight"][codes[packing.rows, packing.steps]]
        states, _ = packed_lstm(self.layers, embedded, packing, threads)  # (M, 2H')
        where = np.zeros(codes.shape, dtype=np.int64)  # each (row, code position)'s packed index
        where[packing.rows, packing.steps] = np.arange(len(packing.rows))
        hidden = states.shape[1] // 2
        forward = states[where[tokens.rows, lasts[tokens.rows, tokens.steps]], :hidden]
        backward = states[where[tokens.rows, firsts[tokens.rows, tokens.steps]], hidden:]
        return np.concatenate([forward, backward], axis=1)
