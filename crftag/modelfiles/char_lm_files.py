"""The directory ``crftag pretrain`` writes: ``char_lm.pt``, the two character language models
with their character vocabulary, their settings and their held-out perplexity, and
``perplexity.json``, the perplexity alone for people and scripts. Each file is written whole or
not at all (:func:`crftag.modelfiles.checkpoint.write_checkpoint`)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from crftag.data.atomic import atomic_output
from crftag.data.char_codes import CharCodes
from crftag.errors import CrftagError
from crftag.modelfiles.checkpoint import read_checkpoint, write_checkpoint
from crftag.nn.char_lm import CharLanguageModels

__all__ = [
    "CHAR_LM_FILE",
    "PretrainedCharLM",
    "char_lm_payload",
    "load_char_lm",
    "pretrained_codes",
    "save_char_lm",
]

CHAR_LM_FILE = "char_lm.pt"
_FORMAT = "crftag-char-lm"


@dataclass
class PretrainedCharLM:
    """The models, their vocabulary, the settings they were built with (``char_dim``,
    ``hidden_size``, ...) and the held-out perplexity of each direction."""

    codes: CharCodes
    models: CharLanguageModels
    settings: dict
    perplexity: dict


def char_lm_payload(pretrained: PretrainedCharLM) -> dict:
    """What ``char_lm.pt`` holds: tensors and plain values only, as a checkpoint does; a tagger's
    checkpoint carries the same dict (``model.char_lm``)."""
    return {
        "format": _FORMAT,
        "symbols": list(pretrained.codes.symbols),
        "settings": dict(pretrained.settings),
        "perplexity": dict(pretrained.perplexity),
        "state_dict": {k: v.detach().cpu() for k, v in pretrained.models.state_dict().items()},
    }


def save_char_lm(directory: str, pretrained: PretrainedCharLM) -> None:
    """Write ``directory``/char_lm.pt and perplexity.json."""
    os.makedirs(directory, exist_ok=True)
    write_checkpoint(os.path.join(directory, CHAR_LM_FILE), char_lm_payload(pretrained))
    with atomic_output(os.path.join(directory, "perplexity.json")) as stream:
        json.dump(pretrained.perplexity, stream, indent=2)
        stream.write("\n")


def load_char_lm(directory: str, key: str | None = None) -> PretrainedCharLM:
    """The models ``crftag pretrain`` wrote in ``directory``; anything else is a one-line error,
    which names the config ``key`` that gave the directory, if one did."""
    path = os.path.join(directory, CHAR_LM_FILE)
    try:
        if not os.path.isfile(path):
            raise CrftagError(
                f"{directory}: no {CHAR_LM_FILE} here; write one with crftag pretrain"
            )
        return char_lm_from_payload(read_checkpoint(path), path)
    except CrftagError as error:
        if key is None:
            raise
        raise CrftagError(f"{key}: {error}") from None


def pretrained_codes(pretrained: PretrainedCharLM) -> CharCodes:
    """The models' characters with their sizes, as a tagger's vocabularies keep them."""
    sizes = {name: pretrained.settings[name] for name in ("char_dim", "hidden_size")}
    return CharCodes(pretrained.codes.symbols, sizes)


def char_lm_from_payload(payload: dict, source: str) -> PretrainedCharLM:
    """The models of a :func:`char_lm_payload` dict read from ``source``."""
    try:
        if payload.get("format") != _FORMAT:
            raise ValueError("not a character language model of crftag pretrain")
        settings = payload["settings"]
        codes = CharCodes(list(payload["symbols"]))
        models = CharLanguageModels(len(codes), settings["char_dim"], settings["hidden_size"])
        models.load_state_dict(payload["state_dict"])
    except (KeyError, TypeError, ValueError, RuntimeError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise CrftagError(f"{source}: not a usable character language model ({reason})") from None
    return PretrainedCharLM(codes, models, dict(settings), dict(payload.get("perplexity", {})))
