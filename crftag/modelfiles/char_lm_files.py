"""The directory ``crftag pretrain`` writes: ``char_lm.pt``, the two character language models
with their character vocabulary, their settings and their held-out perplexity, and
``perplexity.json``, the perplexity alone for people and scripts. Each file is written whole or
not at all (:func:`crftag.modelfiles.checkpoint.write_checkpoint`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from crftag.data.atomic import atomic_output
from crftag.data.char_codes import CharCodes
from crftag.errors import CrftagError
from crftag.modelfiles.checkpoint_files import read_checkpoint, write_checkpoint
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
    """What ``char_lm.pt`` holds: tensors and plain values only, as a checkpoint does."""
    return _payload(_FORMAT, pretrained, perplexity=dict(pretrained.perplexity))


def _payload(format_name: str, pretrained, **scores: dict) -> dict:
    return {
        "format": format_name,
        "symbols": list(pretrained.codes.symbols),
        "settings": dict(pretrained.settings),
        **scores,
        "state_dict": {k: v.detach().cpu() for k, v in pretrained.models.state_dict().items()},
    }


def save_char_lm(directory: str, pretrained: PretrainedCharLM) -> None:
    """Write ``directory``/char_lm.pt and perplexity.json."""
    payload = char_lm_payload(pretrained)
    _save(directory, CHAR_LM_FILE, payload, "perplexity.json", pretrained.perplexity)


def _save(directory: str, name: str, payload: dict, scores_name: str, scores: dict) -> None:
    os.makedirs(directory, exist_ok=True)
    write_checkpoint(os.path.join(directory, name), payload)
    with atomic_output(os.path.join(directory, scores_name)) as stream:
        json.dump(scores, stream, indent=2)
        stream.write("\n")


def load_char_lm(directory: str, key: str | None = None) -> PretrainedCharLM:
    """The models ``crftag pretrain`` wrote in ``directory``; anything else is a one-line error,
    which names the config ``key`` that gave the directory, if one did."""
    return _load(directory, CHAR_LM_FILE, key, char_lm_from_payload)


def _load(directory: str, name: str, key: str | None, from_payload):
    path = os.path.join(directory, name)
    try:
        if not os.path.isfile(path):
            raise CrftagError(f"{directory}: no {name} here; write one with crftag pretrain")
        return from_payload(read_checkpoint(path), path)
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
    codes, models, settings = _from_payload(
        payload, source, _FORMAT, "character language model", CharLanguageModels
    )
    return PretrainedCharLM(codes, models, settings, dict(payload.get("perplexity", {})))


def _from_payload(payload: dict, source: str, expected: str, what: str, model_class) -> tuple:
    """(codes, model, settings) of a payload of format ``expected``; else a one-line error
    naming ``source`` and ``what`` it should have held."""
    try:
        if payload.get("format") != expected:
            raise ValueError(f"not a {what} of crftag pretrain")
        settings = payload["settings"]
        codes = CharCodes(list(payload["symbols"]))
        model = model_class(len(codes), settings["char_dim"], settings["hidden_size"])
        model.load_state_dict(payload["state_dict"])
    except (KeyError, TypeError, ValueError, RuntimeError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise CrftagError(f"{source}: not a usable {what} ({reason})") from None
    return codes, model, dict(settings)
