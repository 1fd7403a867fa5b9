"""A pretrained encoder's word representations (``model.transformer``): a Hugging Face model's
states of each word's subwords, pooled, from its last layer or a learned scalar mix of its last
N (:class:`crftag.nn.transformer.TransformerWords`); docs/transformer.md.

Its values: each sentence's tokens, which the encoder's own tokenizer splits; frozen, they are
also the key of the cache of the encoder's states, so a sentence that augmentation changed is
read afresh. The encoder's config and tokenizer files are kept in the vocabularies
(their ``transformer`` resource), its weights under ``transformer.encoder.``, so a model file
needs nothing but the ``transformers`` package. The NumPy runtime refuses it; the ONNX graph
takes it (:mod:`crftag.features.transformer_onnx`), tagged without torch or transformers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from crftag.data.encoder_files import check_tokenizer_files, encoder_shape
from crftag.data.subwords import EncoderFiles
from crftag.errors import CrftagError
from crftag.features.base import Feature, Shapes, TextBatch

__all__ = ["Transformer"]

Tokens = tuple[str, ...]
MAX_FILE_CHARS = 1 << 28  # the tokenizer's files in all: a large vocabulary's tokenizer.json
_REFUSAL = (
    "takes no pretrained transformer; tag with the model itself (model.pt) or export it "
    "with --format onnx"
)


class Transformer(Feature):
    name = "transformer"
    module_name = "transformer"
    key = "model.transformer"
    vocabulary_key = "transformer"
    numpy_refusal = _REFUSAL
    needs_bilstm = True
    without_bilstm = True

    def encodes(self, vocabularies) -> bool:
        return self.resource(vocabularies) is not None

    def encode(self, text: TextBatch) -> Tokens:
        return tuple(text.sentences[0])

    def collate(self, values: Sequence[Tokens], length: int) -> list[Tokens]:
        return list(values)

    def arrays(self, text: TextBatch) -> list[Tokens]:
        return [tuple(tokens) for tokens in text.sentences]

    def tensors(self, arrays: list[Tokens]) -> list[Tokens]:
        return arrays

    def to(self, value: list[Tokens], device) -> list[Tokens]:
        return value  # the module tokenizes and moves its own tensors

    def read_resource(self, config) -> EncoderFiles | None:
        """The encoder's config and tokenizer files; with ``train.init_from``, none (the base
        model's own are kept)."""
        from crftag.nn.transformer import load_encoder_files

        if config.model.transformer is None or config.train.init_from is not None:
            return None
        return load_encoder_files(config.model.transformer)

    def resource_from_state(self, state) -> EncoderFiles:
        return EncoderFiles.from_state(state)

    def check_vocabularies(self, state: Mapping, model: Mapping) -> None:
        """The encoder's config (a mapping) and its tokenizer's files (names to strings,
        bounded in all), for a model with ``model.transformer`` only."""
        where = "vocabularies.transformer"
        files = state.get("transformer")
        if files is None:
            if self.active(model):
                raise ValueError(f"{where}: missing, and {self.key} needs it")
            return
        if not isinstance(files, dict) or not isinstance(files.get("config"), dict):
            raise ValueError(f"{where}: expected the encoder's config and tokenizer files")
        tokenizer = files.get("tokenizer")
        if not isinstance(tokenizer, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in tokenizer.items()
        ):
            raise ValueError(f"{where}.tokenizer: expected file names and their text")
        if sum(len(k) + len(v) for k, v in tokenizer.items()) > MAX_FILE_CHARS:
            raise ValueError(f"{where}.tokenizer: larger than {MAX_FILE_CHARS:,} characters")
        # The encoder's kind, sizes and tokenizer, bounded before anything is built from them.
        try:
            check_tokenizer_files(tokenizer, encoder_shape(files["config"]))
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None

    def shapes(self, model: Mapping, vocabularies: Mapping) -> Shapes:
        raise ValueError(f"{self.key}: an export {_REFUSAL}")

    def width(self, model: Mapping, vocabularies: Mapping) -> int:
        files = vocabularies.get("transformer")
        if files is None:  # a skeleton sized before the encoder is read counts no encoder
            return 0
        try:  # the config class's width, under whichever name the encoder's config keeps it
            return encoder_shape(files.get("config")).width
        except ValueError as error:
            raise ValueError(f"vocabularies.transformer: {error}") from None

    def torch_module(self, config, vocabularies):
        from crftag.nn.transformer import TransformerWords

        files = self.resource(vocabularies)
        if files is None:
            return None  # the skeleton of a size check, before the encoder is read
        return TransformerWords(
            files,
            layers=config.transformer_layers,
            pooling=config.transformer_pooling,
            finetune=config.transformer_finetune,
            max_length=config.transformer_max_length,
        )

    def torch_forward(self, module, batch):
        return module(batch.transformer)  # (B, T, D)

    def load_pretrained(self, module, config, *, resumed: bool, base) -> None:
        """The encoder's pretrained weights, into a new run's module (with ``train.init_from``
        the base model's, copied with the rest)."""
        from crftag.nn.transformer import load_encoder_weights

        if not resumed and base is None:
            module.encoder.load_state_dict(load_encoder_weights(config.model.transformer))

    def prepare(self, module, sentences, *, show_progress: bool) -> None:
        """A frozen encoder's states of every distinct training sentence, once for all
        epochs."""
        if not module.finetune:
            module.extract(sentences, show_progress=show_progress)

    def parameter_groups(self, module, config) -> list[tuple[list, float]]:
        """A fine-tuned encoder's weights, at ``model.transformer_lr_scale`` times the rate."""
        if not config.model.transformer_finetune:
            return []
        return [(list(module.encoder.parameters()), config.model.transformer_lr_scale)]

    def numpy_forward(self, weights, model, vocabularies):
        raise CrftagError(f"{self.key}: the NumPy runtime {_REFUSAL}")  # numpy_refusal stops it

    def onnx_inputs(self) -> list[tuple[str, list[str]]]:
        return [
            ("subword_ids", ["windows", "window_length"]),
            ("subword_mask", ["windows", "window_length"]),
            ("subword_rows", ["batch", "length", "pieces"]),
        ]

    def onnx_forward(self, graph, weights, model, vocabularies) -> str:
        from crftag.features.transformer_onnx import encoder_graph

        return encoder_graph(graph, weights, model, self.resource(vocabularies))

    def onnx_encoding(self, model, vocabularies, properties, source):
        from crftag.features.transformer_onnx import subword_encoding

        return subword_encoding(self.resource(vocabularies), properties, source)
