"""Word representations from a pretrained transformer encoder (``model.transformer``), as
flair's ``TransformerWordEmbeddings`` and AllenNLP's ``pretrained_transformer_mismatched``
embedder give them: each word's subwords' states, pooled, from one layer or a learned scalar mix
of the last N layers (Peters et al. 2018).

Sentences longer than the encoder's window are read as overlapping windows
(:func:`crftag.data.subwords.window_starts`), so no word is cut off or read without context.
Frozen (``model.transformer_finetune: false``), the encoder runs without gradients in evaluation
mode, and the layer states of sentences seen before are taken from an in-memory cache keyed by
the sentence's tokens: training fills it once for its sentences (:meth:`TransformerWords.extract`,
with a progress bar), and the dev sentences join it the first time they are scored.

Nothing here reaches the network: every Hugging Face call passes ``local_files_only=True``.
Shapes: B sentences, T words, S subwords, N mixed layers, D the encoder's hidden size.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence

import torch
from torch import nn

from crftag.data.encoder_files import (
    check_encoder_folder,
    check_tokenizer_files,
    encoder_shape,
    import_transformers,
    model_folder,
)
from crftag.data.progress import progress_bar
from crftag.data.subword_windows import encoder_calls, lay_out_windows
from crftag.data.subwords import POOLINGS, EncoderFiles, special_frame, subwords_of
from crftag.errors import CrftagError

__all__ = [
    "ScalarMix",
    "TransformerWords",
    "import_transformers",
    "load_encoder_files",
    "load_encoder_weights",
]

# Sentences an extraction step reads at once: enough that their windows fill calls of similar
# lengths; their states are kept anyway.
_EXTRACTION_BATCH = 256
_MAX_SUBWORDS = 8192  # padded positions one encoder call reads, to bound its memory


def load_encoder_files(name: str, key: str = "model.transformer") -> EncoderFiles:
    """The config and tokenizer files of the model folder or cached model ``name``, checked
    (:mod:`crftag.data.encoder_files`); a one-line error naming ``key``, the folder and the
    file if anything in the folder is missing or unusable."""
    transformers = import_transformers(key)
    folder = model_folder(name, key)
    with _usable(folder, key):
        shape = check_encoder_folder(folder)
        config = transformers.AutoConfig.from_pretrained(folder, local_files_only=True)
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
        if not tokenizer.is_fast:
            raise ValueError("tokenizer.json: missing; crftag needs a fast tokenizer")
        with tempfile.TemporaryDirectory() as saved:
            tokenizer.save_pretrained(saved, legacy_format=False)
            files = {}
            for file_name in sorted(os.listdir(saved)):
                with open(os.path.join(saved, file_name), encoding="utf-8") as stream:
                    files[file_name] = stream.read()
        check_tokenizer_files(files, shape)
    return EncoderFiles(config.to_dict(), files)


def load_encoder_weights(name: str, key: str = "model.transformer") -> dict[str, torch.Tensor]:
    """The pretrained weights of the model folder or cached model ``name``, as the state dict
    of :attr:`TransformerWords.encoder`: every weight the encoder needs, of its shape (the
    pooler, which crftag does not use, aside), and none for a layer its config does not
    have; else a one-line error naming ``key`` and the folder."""
    transformers = import_transformers(key)
    folder = model_folder(name, key)
    with _usable(folder, key):
        check_encoder_folder(folder)
        model, report = transformers.AutoModel.from_pretrained(
            folder, local_files_only=True, output_loading_info=True, ignore_mismatched_sizes=True
        )
        modules = {module for module, _ in model.named_modules()}
        wrong = [k for k in report["missing_keys"] if not k.startswith("pooler.")]
        wrong += [k for k in report["unexpected_keys"] if _owner(k, modules)]
        wrong += [k if isinstance(k, str) else k[0] for k in report.get("mismatched_keys", [])]
        if wrong:
            raise ValueError(f"the weights do not fit config.json (first: {wrong[0]})")
    return {k: v.detach().cpu() for k, v in model.state_dict().items()}


def _owner(key: str, modules: set[str]) -> bool:
    """Whether weight ``key`` belongs to a numbered layer the model lacks, in a list of layers
    the model has (``encoder.layer.5.…`` of a model with ``encoder.layer`` of 2)."""
    parts = key.split(".")
    return any(
        part.isdigit() and ".".join(parts[:at]) in modules for at, part in enumerate(parts) if at
    )


@contextlib.contextmanager
def _usable(folder: str, key: str) -> Iterator[None]:
    """Any error in reading the folder (a ValueError of the checks naming the file, or
    Hugging Face's own) as one line naming ``key`` and the folder: the folder is input."""
    try:
        yield
    except CrftagError:
        raise
    except Exception as error:  # noqa: BLE001  (checked first; what is left is still the folder's)
        reason = str(error).splitlines()[0] if str(error).strip() else type(error).__name__
        raise CrftagError(f"{key}: {folder}: {reason}") from None


_SPECIAL_TOKENS = ("unk", "pad", "cls", "sep", "mask", "bos", "eos")


def _tokenizer(files: EncoderFiles):
    """The fast tokenizer the files describe: ``tokenizer.json`` run by the tokenizers library,
    with the special tokens and length limit of ``tokenizer_config.json``.

    Built as a plain ``PreTrainedTokenizerFast`` rather than through ``AutoTokenizer``, whose
    choice of class follows ``tokenizer_class``: transformers 5 writes ``TokenizersBackend``
    there, a class transformers 4 does not have, so a model trained under one major version
    would not load under the other.
    """
    transformers = import_transformers()
    from tokenizers import Tokenizer

    settings = json.loads(files.tokenizer.get("tokenizer_config.json") or "{}")
    tokens = {
        f"{name}_token": _token_text(settings.get(f"{name}_token"))
        for name in _SPECIAL_TOKENS
        if _token_text(settings.get(f"{name}_token")) is not None
    }
    limit = settings.get("model_max_length")
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(files.tokenizer["tokenizer.json"]),
        model_max_length=limit if isinstance(limit, int) and limit > 0 else _NO_LIMIT,
        **tokens,
    )


# Encoders whose positions count from the padding id's, so that many fewer are usable.
_POSITIONS_AFTER_PADDING = ("roberta", "xlm-roberta")
_NO_LIMIT = int(1e30)  # what transformers itself sets where a tokenizer names no limit


def _token_text(value) -> str | None:
    """A special token as tokenizer_config.json holds it: its text, or a serialised AddedToken
    (a dict with ``content``) as transformers 4 writes some of them."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) and value else None


class ScalarMix(nn.Module):
    """layers (..., N, D) -> (..., D): gamma * sum_n softmax(w)_n layers[n] (ELMo's scalar
    mix). The weights start equal, so an untrained mix is the mean of the layers."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(count))
        self.gamma = nn.Parameter(torch.ones(1))

    def forward(self, layers: torch.Tensor) -> torch.Tensor:
        shares = torch.softmax(self.weights, dim=0).to(layers.dtype)  # (N,)
        return self.gamma.to(layers.dtype) * torch.einsum("...nd,n->...d", layers, shares)


class TransformerWords(nn.Module):
    """sentences (B token lists) -> (B, T, D) word representations, zeros past each end.

    ``files`` describe the encoder (its weights are this module's ``encoder.*``, loaded by
    training from the pretrained model or with a checkpoint); ``layers``: the last layer (1) or
    a scalar mix of the last ``layers``; ``pooling``: a word's first subword or the mean of its
    subwords; ``max_length``: subwords an encoder window holds, special tokens included
    (None: the encoder's own limit).
    """

    def __init__(
        self,
        files: EncoderFiles,
        *,
        layers: int = 1,
        pooling: str = "first",
        finetune: bool = False,
        max_length: int | None = None,
    ) -> None:
        super().__init__()
        transformers = import_transformers()
        try:  # a model file's are checked as it loads; these may come from code
            check_tokenizer_files(files.tokenizer, encoder_shape(files.config))
        except ValueError as error:
            raise CrftagError(f"model.transformer: {error}") from None
        config = transformers.AutoConfig.for_model(**files.config)
        self.encoder = transformers.AutoModel.from_config(config)
        self.tokenizer = _tokenizer(files)
        available = config.num_hidden_layers + 1  # the embeddings' output counts as a layer
        if not 1 <= layers <= available:
            raise CrftagError(
                f"model.transformer_layers: {layers}; the encoder has {available} "
                "(its embeddings and each layer)"
            )
        if pooling not in POOLINGS:
            raise ValueError(f"expected pooling in {POOLINGS}, got {pooling!r}")
        self.layers, self.pooling, self.finetune = layers, pooling, finetune
        self.mix = ScalarMix(layers) if layers > 1 else None
        self.output_size = self.encoder.config.hidden_size  # the width of the states it gives
        self.width, self.prefix = self._window(config, max_length)
        self.encoder.requires_grad_(finetune)
        self.cache: dict[tuple[str, ...], torch.Tensor] | None = None
        self.train()  # from_config leaves the encoder in training mode, with dropout

    def _window(self, config, max_length: int | None) -> tuple[int, int]:
        """(subwords of a sentence a window holds, special tokens before them)."""
        positions = getattr(config, "max_position_embeddings", None)
        if positions and config.model_type in _POSITIONS_AFTER_PADDING:
            positions -= (config.pad_token_id or 0) + 1
        limits = [positions, self.tokenizer.model_max_length]
        if max_length is not None:
            limits.append(max_length)
        self.frame = special_frame(self.tokenizer)  # (ids before, ids after) a window's subwords
        specials = len(self.frame[0]) + len(self.frame[1])
        width = min(limit for limit in limits if limit and limit > 0) - specials
        if width < 2:
            raise CrftagError(
                f"model.transformer_max_length: {max_length} leaves fewer than 2 subwords "
                "beside the special tokens"
            )
        return width, len(self.frame[0])

    def train(self, mode: bool = True) -> TransformerWords:
        """A frozen encoder stays in evaluation mode (no dropout): its states are those cached."""
        super().train(mode)
        if not self.finetune:
            self.encoder.eval()
        return self

    def forward(self, sentences: Sequence[Sequence[str]]) -> torch.Tensor:
        layers = self.layer_states(sentences)  # B tensors (T_b, N, D)
        padded = nn.utils.rnn.pad_sequence(layers, batch_first=True)  # (B, T, N, D)
        return padded[:, :, 0] if self.mix is None else self.mix(padded)

    def layer_states(self, sentences: Sequence[Sequence[str]]) -> list[torch.Tensor]:
        """Each sentence's (T, N, D) word states of the N layers, on the encoder's device:
        frozen, from the cache where it holds them."""
        if self.finetune:
            return self._encode(sentences)
        device = next(self.encoder.parameters()).device
        keys = [tuple(tokens) for tokens in sentences]
        found = {key: self.cache[key] for key in keys if self.cache and key in self.cache}
        missing = list(dict.fromkeys(key for key in keys if key not in found))
        if missing:
            with torch.no_grad():
                fresh = dict(zip(missing, self._encode(missing), strict=True))
            if self.cache is not None and not self.training:  # dev sentences; not augmented ones
                self.cache.update({key: value.cpu() for key, value in fresh.items()})
            found.update(fresh)
        return [found[key].to(device) for key in keys]

    def extract(self, sentences: Sequence[Sequence[str]], *, show_progress: bool = True) -> None:
        """Start a cache of the frozen encoder's states, holding those of ``sentences``
        (computed in batches of similar lengths, with a progress bar)."""
        if self.finetune:
            raise ValueError("a fine-tuned encoder's states change every step: nothing to cache")
        self.cache = {} if self.cache is None else self.cache
        distinct = sorted({tuple(tokens) for tokens in sentences} - set(self.cache), key=len)
        bar = progress_bar(
            total=len(distinct), show=show_progress, desc="transformer features", unit="sentence"
        )
        started = time.perf_counter()
        with torch.no_grad(), bar:
            for first in range(0, len(distinct), _EXTRACTION_BATCH):
                chunk = distinct[first : first + _EXTRACTION_BATCH]
                for key, states in zip(chunk, self._encode(chunk), strict=True):
                    self.cache[key] = states.cpu()
                bar.update(len(chunk))
        if show_progress and distinct:
            words = sum(map(len, distinct))
            seconds = time.perf_counter() - started
            print(
                f"transformer features: {len(distinct)} sentences, {words} words in "
                f"{seconds:.1f} s ({words / seconds:.0f} words/s)",
                file=sys.stderr,
            )

    def _encode(self, sentences: Sequence[Sequence[str]]) -> list[torch.Tensor]:
        """Each sentence's (T, N, D) word states, read through the encoder window by window."""
        pieces = subwords_of(self.tokenizer, sentences)
        layout = lay_out_windows(pieces, self.width, self.frame)
        flat, offsets = self._window_states(layout.windows)  # (sum of window lengths, N, D)
        states = []
        for found, placed in zip(pieces, layout.places, strict=True):
            rows = torch.tensor([offsets[window] + position for window, position in placed])
            states.append(self._pool(flat[rows.to(flat.device)], found.starts, found.counts))
        return states

    def _window_states(self, windows: list[list[int]]) -> tuple[torch.Tensor, list[int]]:
        """(every window's states one after another, (sum of lengths, N, D); where each
        window's first state is). The windows are read in calls of similar lengths
        (:func:`crftag.data.subword_windows.encoder_calls`), so little of a call is padding."""
        device = next(self.encoder.parameters()).device
        states: list[torch.Tensor | None] = [None] * len(windows)
        for call in encoder_calls([len(window) for window in windows], _MAX_SUBWORDS):
            longest = len(windows[call[0]])
            ids = torch.full((len(call), longest), self.tokenizer.pad_token_id or 0)
            mask = torch.zeros(len(call), longest, dtype=torch.long)
            for row, index in enumerate(call):
                ids[row, : len(windows[index])] = torch.tensor(windows[index])
                mask[row, : len(windows[index])] = 1
            output = self.encoder(
                input_ids=ids.to(device), attention_mask=mask.to(device), output_hidden_states=True
            )
            layers = torch.stack(output.hidden_states[-self.layers :], dim=2)  # (W, L, N, D)
            for row, index in enumerate(call):
                states[index] = layers[row, : len(windows[index])]
        offsets = list(itertools.accumulate((len(window) for window in windows), initial=0))
        return torch.cat(states), offsets[:-1]

    def _pool(self, subwords: torch.Tensor, starts: list[int], counts: list[int]) -> torch.Tensor:
        """subwords (S, N, D) -> (T, N, D): each word's first subword, or the mean of its
        subwords (``counts[t]`` of them from ``starts[t]``)."""
        if self.pooling == "first":
            return subwords[torch.tensor(starts, device=subwords.device)]
        sizes = torch.tensor(counts, device=subwords.device)
        words = torch.repeat_interleave(torch.arange(len(counts), device=subwords.device), sizes)
        sums = subwords.new_zeros(len(counts), *subwords.shape[1:]).index_add_(0, words, subwords)
        return sums / sizes.to(subwords.dtype).view(-1, 1, 1)
