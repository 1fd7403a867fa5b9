"""One self-contained checkpoint file per model: weights, vocabularies, resolved config, tag
schemes, and the format and crftag versions.

The file holds only tensors and plain Python values, so it loads with
``torch.load(weights_only=True)``, which never runs code from the file. It is written to a
temporary file beside the target and renamed over it, so a crash mid-write leaves the previous
checkpoint intact.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from crftag import __version__
from crftag.config.sections import Config
from crftag.data.vocab import Vocabularies
from crftag.errors import CrftagError
from crftag.features.registry import active_features, vocabularies_from_state
from crftag.modelfiles.checkpoint_files import read_checkpoint, write_checkpoint
from crftag.modelfiles.checkpoint_schema import (
    check_export,
    check_payload,
    check_weights,
)
from crftag.modelfiles.kinds import model_file
from crftag.nn.taggers import CRFTagger, build_model
from crftag.runtime.archive import read_archive, write_archive

__all__ = [
    "FORMAT_VERSION",
    "LoadedModel",
    "exported_arrays",
    "load_model",
    "loaded_from_payload",
    "model_payload",
    "read_checkpoint",
    "save_model",
    "write_checkpoint",
]

# 2: the vocabularies stored as one JSON string (version 1 held them as Python lists, which
# torch's weights-only unpickler reads an opcode at a time: about a second for 100,000 words).
FORMAT_VERSION = 2


@dataclass
class LoadedModel:
    """Everything needed to tag: the network, its vocabularies and how to read its tags.

    data_scheme   the scheme of the training files' tags (``none`` for POS-like tags)
    train_scheme  the scheme the network predicts in
    distillation  a ``crftag distill`` student's teacher (path, digest), text digest and
                  objective (:data:`crftag.modelfiles.checkpoint_schema.DISTILLATION_KEYS`);
                  None for a model trained on labelled data alone
    """

    model: CRFTagger
    vocabularies: Vocabularies
    config: Config
    data_scheme: str
    train_scheme: str
    metrics: dict
    distillation: dict | None = None


def model_payload(loaded: LoadedModel, *, half: bool = False) -> dict:
    """What a checkpoint file holds, as plain values and CPU tensors: the one description of a
    model that both model files and resume files (which add the optimizer and run state) store.
    ``half`` stores floating-point weights in float16 (half the file; they are widened back to
    float32 when loaded)."""
    weights = {k: v.detach().cpu() for k, v in loaded.model.state_dict().items()}
    if half:
        weights = {k: v.half() if v.is_floating_point() else v for k, v in weights.items()}
    payload = {
        "format": "crftag",
        "format_version": FORMAT_VERSION,
        "crftag_version": __version__,
        "config": loaded.config.to_dict(),
        "vocabularies": loaded.vocabularies.to_state(),
        "data_scheme": loaded.data_scheme,
        "train_scheme": loaded.train_scheme,
        "metrics": loaded.metrics,
        "state_dict": weights,
    }
    if loaded.distillation is not None:
        payload["distillation"] = dict(loaded.distillation)
    return payload


def save_model(path: str, loaded: LoadedModel, *, half: bool = False) -> None:
    """Write ``loaded`` to ``path`` whole or not at all (see :func:`write_checkpoint`)."""
    write_checkpoint(path, model_payload(loaded, half=half))


def exported_arrays(path: str, loaded: LoadedModel) -> tuple[dict, dict[str, np.ndarray]]:
    """(description, float32 weights) of a BiLSTM-CRF to export to ``path``: the checkpoint's
    payload without its state dict, and the state dict as arrays."""
    if loaded.config.model.encoder != "bilstm":
        raise CrftagError(
            f"{path}: the exported runtime runs the BiLSTM-CRF; this model's encoder is "
            f"{loaded.config.model.encoder}"
        )
    payload = model_payload(loaded)
    weights = {
        name: (tensor.float() if tensor.is_floating_point() else tensor).numpy()
        for name, tensor in payload.pop("state_dict").items()
    }
    return payload, weights


def export_arrays(
    path: str, loaded: LoadedModel, *, int8: bool = False, int8_embeddings: bool = False
) -> None:
    """Write ``loaded`` as an exported model (:mod:`crftag.runtime.archive`): the checkpoint's
    description and weights in one ``.npz`` that tags without torch.

    Weights that are exactly float16 (a checkpoint saved with ``--half``, as the bundled models
    are) are stored in float16, half the file, and read back identical (:func:`write_archive`).
    ``int8`` stores the weight matrices of every LSTM (``weight_ih``, ``weight_hh``) and linear
    layer as int8 with one scale per row, the layers torch's dynamic quantization covers;
    ``int8_embeddings`` the word embedding table too (most of the file). The runtime
    dequantizes them on loading, so int8 makes the file smaller, not the tagging faster."""
    for feature in active_features(dataclasses.asdict(loaded.config.model)):
        if feature.numpy_refusal is not None:
            raise CrftagError(f"{feature.key}: the NumPy export {feature.numpy_refusal}")
    payload, weights = exported_arrays(path, loaded)
    quantized = []
    if int8:
        quantized = [
            f"{prefix}.{name}"
            for prefix, module in loaded.model.named_modules()
            if isinstance(module, (torch.nn.LSTM, torch.nn.Linear))
            for name, parameter in module.named_parameters(recurse=False)
            if parameter.dim() == 2
        ]
    if int8_embeddings:
        quantized.append("word_embedding.weight")
    write_archive(path, payload, weights, quantized=quantized)


def load_model(path: str, device: torch.device | str = "cpu") -> LoadedModel:
    """Load a checkpoint, or an exported model (its weights as the export holds them),
    without executing anything stored in it."""
    found = model_file(path)
    path = found.path
    if found.exported:
        loaded = loaded_from_export(path)
    else:
        state = read_checkpoint(path)
        if state.get("format") != "crftag":
            raise CrftagError(f"{path}: not a crftag checkpoint")
        version = state.get("format_version")
        if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
            raise CrftagError(
                f"{path}: checkpoint format {version} is newer than this crftag reads "
                f"({FORMAT_VERSION}); upgrade crftag"
            )
        loaded = loaded_from_payload(state, path)  # other versions: check_payload says why
    loaded.model.to(device).eval()
    return loaded


def loaded_from_export(path: str) -> LoadedModel:
    """The model of an exported file, rebuilt in torch once the export has been checked
    (:func:`crftag.modelfiles.checkpoint_schema.check_export`): int8-quantized weights as the export
    holds them, dequantized."""
    metadata, arrays = read_archive(path)
    check_export(metadata, arrays, path)
    described = {key: value for key, value in metadata.items() if key not in _ARCHIVE_KEYS}
    weights = {name: torch.from_numpy(array.copy()) for name, array in arrays.items()}
    return loaded_from_payload({**described, "format": "crftag", "state_dict": weights}, path)


_ARCHIVE_KEYS = ("format", "archive_version", "quantized")  # an export's own, not the model's


def loaded_from_payload(state: dict, source: str) -> LoadedModel:
    """The model that :func:`model_payload` described, rebuilt on the CPU once the payload has
    been checked against what it describes (:mod:`crftag.modelfiles.checkpoint_schema`)."""
    check_payload(state, source)
    config = Config.from_dict(state["config"], source=source)  # the network's sizes bounded
    vocabularies = vocabularies_from_state(state["vocabularies"])
    # Built on the CPU, within the sizes checked above, then checked against the weights: a
    # skeleton on the meta device would cost more than the model, since its initialisers
    # import torch's compiler stack (about 1.7 s of start-up).
    model = build_model(config, vocabularies, state["train_scheme"])
    check_weights(state["state_dict"], model.state_dict(), source)
    model.load_state_dict(state["state_dict"])  # float16 weights are widened as they are copied
    return LoadedModel(
        model=model,
        vocabularies=vocabularies,
        config=config,
        data_scheme=state["data_scheme"],
        train_scheme=state["train_scheme"],
        metrics=dict(state.get("metrics", {})),
        distillation=state.get("distillation"),
    )
