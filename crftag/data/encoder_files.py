"""A pretrained encoder's files checked before anything is built from them: its config (a kind
of encoder crftag reads, sizes within bounds, heads that divide the width) and its tokenizer
(plain file names, a ``tokenizer.json`` the tokenizers library reads, ids inside the encoder's
embedding table), whether they come from the folder ``model.transformer`` names or from a
model file that carries them. Each problem is a ``ValueError`` naming the file
(``config.json: ...``); the callers add the folder or the model file.

Keys of the config that its class does not define are ignored, as transformers ignores them:
every size the network is built from is read through the class (with its defaults), bounded
here, and checked against the weights when they are loaded, so an unknown key cannot change
what is built unseen. ``tokenizer_class`` is not read: the tokenizer is ``tokenizer.json``.

Torch-free: transformers' config classes and the tokenizers library are imported inside.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from crftag.errors import CrftagError

__all__ = [
    "ENCODER_TYPES",
    "import_transformers",
    "EncoderShape",
    "check_encoder_folder",
    "check_tokenizer_files",
    "cached_snapshot",
    "encoder_shape",
    "hub_cache",
    "model_folder",
]

# The kinds of encoder crftag reads (each tested on a tiny random model of its kind).
ENCODER_TYPES = ("bert", "roberta", "xlm-roberta", "distilbert", "deberta", "deberta-v2", "electra")
# Kinds named only to say why they are refused when their config cannot be built to ask it.
_DECODERS = ("gpt2", "gpt_neo", "gpt_neox", "gptj", "llama", "mistral", "opt", "bloom", "falcon")
_ENCODER_DECODERS = ("t5", "mt5", "umt5", "longt5", "bart", "mbart", "marian", "pegasus", "led")
_WHY_NOT = {
    "decoder": "a decoder-only model: its state of a word sees only the words before it",
    "encoder-decoder": "an encoder-decoder model: crftag reads an encoder's states of the words",
}
MAX_PARAMETERS = 1 << 30  # about 4 GB in float32, as crftag's own model files are bounded
MAX_CONFIG_BYTES = 1 << 20
MAX_TOKENIZER_BYTES = 1 << 28  # a large vocabulary's tokenizer.json
# Each size key (under any of its names) and its bounds; type_vocab_size is 0 in DeBERTa's.
_SIZES = {
    ("hidden_size", "dim", "d_model", "n_embd", "embedding_size"): (1, 16384),
    ("num_hidden_layers", "n_layers", "num_layers", "n_layer"): (1, 256),
    ("num_attention_heads", "n_heads", "n_head"): (1, 1024),
    ("intermediate_size", "hidden_dim"): (1, 1 << 18),
    ("vocab_size",): (1, 1 << 22),
    ("max_position_embeddings",): (1, 1 << 20),
    ("type_vocab_size",): (0, 1024),
}
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
_TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spm.model", "tokenizer.model")
_TOKENIZER_FILES += ("sentencepiece.bpe.model", "spiece.model")
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json")


@dataclass(frozen=True)
class EncoderShape:
    """An encoder's sizes, as its config class reads them: the width of its states, its
    layers, the rows of its embedding table and the positions a window may hold."""

    width: int
    layers: int
    vocab_size: int
    positions: int | None


def _kind(config: Mapping) -> str:
    kind = config.get("model_type")
    if kind is None:
        raise ValueError("config.json: no model_type; crftag reads " + ", ".join(ENCODER_TYPES))
    if not isinstance(kind, str):
        raise ValueError(f"config.json: model_type {kind!r}: expected a name such as 'bert'")
    if config.get("is_encoder_decoder") is True or kind in _ENCODER_DECODERS:
        raise ValueError(f"config.json: model_type {kind[:40]!r} is {_WHY_NOT['encoder-decoder']}")
    if config.get("is_decoder") is True or kind in _DECODERS:
        raise ValueError(f"config.json: model_type {kind[:40]!r} is {_WHY_NOT['decoder']}")
    return kind


def _check_sizes(values: Mapping) -> None:
    """Every size key present is a whole number within its bounds."""
    for names, (low, high) in _SIZES.items():
        for name in names:
            value = values.get(name)
            if name in values and (
                not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high
            ):
                raise ValueError(f"config.json: {name} {value!r:.40}: expected {low} to {high}")


def import_transformers(key: str = "model.transformer"):
    """The ``transformers`` module, or a one-line error saying how to install it."""
    try:
        import transformers
    except ImportError:
        raise CrftagError(
            f"{key} needs the transformers package: pip install 'crftag[transformers]'"
        ) from None
    transformers.logging.set_verbosity_error()  # its notes on unused weights are not ours
    transformers.logging.disable_progress_bar()  # nor its bars for a few files read
    return transformers


def model_folder(name: str, key: str) -> str:
    """The folder of ``name``: itself if it is one, else its snapshot in the local Hugging Face
    cache, found on disk alone; else a one-line error saying where crftag looked."""
    if os.path.isdir(name):
        return name
    import_transformers(key)
    cache = hub_cache()
    snapshot = cached_snapshot(cache, name)
    if snapshot is None:
        raise CrftagError(
            f"{key}: no model folder {os.path.abspath(name)} and no {name!r} in the Hugging "
            f"Face cache {cache}; crftag never downloads: give a folder written by "
            "save_pretrained"
        )
    return snapshot


def cached_snapshot(cache: str, name: str) -> str | None:
    """The cache's snapshot folder of model ``name`` (``ORG/NAME``), as the Hugging Face hub
    lays it out: ``models--ORG--NAME/snapshots/REVISION``, the revision ``refs/main`` names
    (else the only one there); None if it is not cached."""
    repository = os.path.join(cache, "models--" + name.replace("/", "--"))
    snapshots = os.path.join(repository, "snapshots")
    try:
        with open(os.path.join(repository, "refs", "main"), encoding="utf-8") as stream:
            chosen = [stream.read().strip()]
    except OSError:
        chosen = os.listdir(snapshots) if os.path.isdir(snapshots) else []
    folders = [os.path.join(snapshots, revision) for revision in chosen if revision]
    found = [folder for folder in folders if os.path.isdir(folder)]
    return found[0] if len(found) == 1 else None


def hub_cache() -> str | None:
    """The local Hugging Face cache's folder (``HF_HUB_CACHE``), None without the hub's
    library (installed with transformers)."""
    try:
        from huggingface_hub import constants
    except ImportError:
        return None
    return constants.HF_HUB_CACHE


def encoder_shape(config: Mapping) -> EncoderShape:
    """The sizes of the encoder ``config`` (its ``config.json`` as a dict) describes, or a
    ValueError saying what is wrong: an encoder of a kind crftag does not read, a size out of
    bounds, heads that do not divide the width, more parameters than crftag allocates."""
    if not isinstance(config, Mapping):
        raise ValueError("config.json: expected a mapping")
    kind = _kind(config)
    _check_sizes(config)
    if kind not in ENCODER_TYPES:
        raise ValueError(f"config.json: model_type {kind[:40]!r} {_why_not(config)}")
    sizes = _sizes_written(config) or _sizes_of_class(config, kind)
    positions = sizes.pop("max_position_embeddings")
    inner = sizes.pop("intermediate_size") or 4 * sizes["hidden_size"]
    _check_sizes(sizes)  # the class's defaults too, and whatever its own names map to
    width, heads = sizes["hidden_size"], sizes["num_attention_heads"]
    if width % heads:
        raise ValueError(
            f"config.json: num_attention_heads {heads} does not divide hidden_size {width}"
        )
    layers = sizes["num_hidden_layers"]
    total = (sizes["vocab_size"] + (positions or 0)) * width + layers * (
        4 * width * width + 2 * width * inner
    )
    if total > MAX_PARAMETERS:
        raise ValueError(
            f"config.json: describes about {total:,} parameters; at most {MAX_PARAMETERS:,}"
        )
    return EncoderShape(width, layers, sizes["vocab_size"], positions)


# Each size an encoder is built with, under the names the kinds crftag reads give it.
_SIZE_NAMES = {
    "hidden_size": ("hidden_size", "dim"),
    "num_hidden_layers": ("num_hidden_layers", "n_layers"),
    "num_attention_heads": ("num_attention_heads", "n_heads"),
    "vocab_size": ("vocab_size",),
    "max_position_embeddings": ("max_position_embeddings",),
    "intermediate_size": ("intermediate_size", "hidden_dim"),
}


def _sizes_written(config: Mapping) -> dict | None:
    """The encoder's sizes as its config writes them all (``to_dict`` and ``save_pretrained``
    write every one), read without transformers, so that a model file's encoder is checked by
    the torch-free runtimes too; None where one is left to its class's default."""
    sizes = {}
    for size, names in _SIZE_NAMES.items():
        found = [config[name] for name in names if name in config]
        if not found:
            return None
        sizes[size] = found[0]
    return sizes


def _sizes_of_class(config: Mapping, kind: str) -> dict:
    """The encoder's sizes as its config class reads them, with the class's defaults."""
    transformers = import_transformers()
    try:
        built = transformers.AutoConfig.for_model(**config)
    except Exception as error:  # noqa: BLE001  (any reason transformers gives is the file's)
        raise ValueError(f"config.json: not a {kind} config ({_first_line(error)})") from None
    sizes = {size: getattr(built, size, None) for size in _SIZE_NAMES}
    sizes["intermediate_size"] = sizes["intermediate_size"] or getattr(built, "hidden_dim", None)
    return sizes


def _why_not(config: Mapping) -> str:
    """Why an encoder of a kind crftag does not read is refused."""
    try:
        built = import_transformers().AutoConfig.for_model(**config)
    except Exception:  # noqa: BLE001  (an unknown kind, or no transformers: the list says)
        built = None
    if built is not None and built.is_encoder_decoder:
        return "is " + _WHY_NOT["encoder-decoder"]
    return "is not an encoder crftag reads; it reads " + ", ".join(ENCODER_TYPES)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:200] if text else type(error).__name__


def check_tokenizer_files(files: Mapping[str, str], shape: EncoderShape):
    """The tokenizer's files (names to text): plain names, a ``tokenizer.json`` the tokenizers
    library reads, whose ids all index the encoder's embedding table (``shape.vocab_size``
    rows), and a ``tokenizer_config.json`` (if any) that is a JSON mapping whose unknown and
    padding tokens the tokenizer holds. Returns the tokenizers ``Tokenizer``."""
    for name in files:
        if not _FILE_NAME.fullmatch(name) or name in (".", ".."):
            raise ValueError(f"tokenizer file name {name[:60]!r}: expected a plain file name")
    if "tokenizer.json" not in files:
        raise ValueError("tokenizer.json: missing; crftag needs a fast tokenizer")
    tokenizer = _read_tokenizer(files["tokenizer.json"])
    vocabulary = tokenizer.get_vocab(with_added_tokens=True)
    if not vocabulary:
        raise ValueError("tokenizer.json: an empty vocabulary")
    largest = max(vocabulary.values())
    if largest >= shape.vocab_size:
        raise ValueError(
            f"tokenizer.json: ids up to {largest}, past the encoder's embedding table of "
            f"{shape.vocab_size} rows (config.json vocab_size)"
        )
    settings = _json_mapping(files.get("tokenizer_config.json", "{}"), "tokenizer_config.json")
    for name in ("unk_token", "pad_token"):
        token = settings.get(name)
        token = token.get("content") if isinstance(token, dict) else token
        if isinstance(token, str) and token and tokenizer.token_to_id(token) is None:
            raise ValueError(
                f"tokenizer_config.json: {name} {token[:40]!r} is not in tokenizer.json"
            )
    return tokenizer


def _read_tokenizer(text: str):
    from tokenizers import Tokenizer

    found = _json_mapping(text, "tokenizer.json")
    if not isinstance(found.get("model"), dict):
        raise ValueError("tokenizer.json: no tokenizer model in it (not a tokenizers file)")
    try:
        return Tokenizer.from_str(text)
    except Exception as error:  # noqa: BLE001  (the library's reasons are the file's)
        raise ValueError(f"tokenizer.json: not a tokenizer ({_first_line(error)})") from None


def _json_mapping(text: str, name: str) -> dict:
    try:
        found = json.loads(text)
    except ValueError as error:
        raise ValueError(f"{name}: not JSON ({_first_line(error)})") from None
    if not isinstance(found, dict):
        raise ValueError(f"{name}: expected a JSON mapping, got {type(found).__name__}")
    return found


def check_encoder_folder(folder: str) -> EncoderShape:
    """The folder of a pretrained encoder holds a usable ``config.json``, tokenizer files (a
    ``tokenizer.json``, if there, is checked here) and weights that are a file of a known
    kind (``model.safetensors``: its header read); the sizes its config describes."""
    names = set(os.listdir(folder))
    config = _json_mapping(_read_text(folder, "config.json", MAX_CONFIG_BYTES), "config.json")
    shape = encoder_shape(config)
    if not names & set(_TOKENIZER_FILES):
        raise ValueError("tokenizer.json: missing, and no other tokenizer files are there")
    if "tokenizer.json" in names:
        text = _read_text(folder, "tokenizer.json", MAX_TOKENIZER_BYTES)
        files = {"tokenizer.json": text}
        if "tokenizer_config.json" in names:
            files["tokenizer_config.json"] = _read_text(
                folder, "tokenizer_config.json", MAX_CONFIG_BYTES
            )
        check_tokenizer_files(files, shape)
    weights = [name for name in _WEIGHT_FILES if name in names]
    if not weights:
        raise ValueError(f"{_WEIGHT_FILES[0]}: missing (no weights: {', '.join(_WEIGHT_FILES)})")
    if weights[0] == "model.safetensors":
        _check_safetensors(os.path.join(folder, "model.safetensors"))
    return shape


def _read_text(folder: str, name: str, limit: int) -> str:
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        raise ValueError(f"{name}: missing")
    if os.path.getsize(path) > limit:
        raise ValueError(f"{name}: larger than {limit:,} bytes")
    try:
        with open(path, encoding="utf-8") as stream:
            return stream.read()
    except UnicodeDecodeError as error:
        raise ValueError(f"{name}: not UTF-8 text (byte {error.start})") from None
    except OSError as error:
        raise ValueError(f"{name}: cannot be read ({error.strerror})") from None


def _check_safetensors(path: str) -> None:
    """The header of a safetensors file read, and its tensors' extents checked against the
    file's size, by the safetensors library (nothing of the data is read)."""
    from safetensors import safe_open

    try:
        with safe_open(path, framework="numpy") as weights:
            weights.keys()
    except Exception as error:  # noqa: BLE001  (the library's reasons are the file's)
        raise ValueError(
            f"model.safetensors: not a whole safetensors file ({_first_line(error)})"
        ) from None
