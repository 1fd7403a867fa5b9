"""A model over the tiny random BERT (tests/nn/tiny_bert.py), exported to ONNX, for the tests
of exported encoders (tests/inference/test_onnx_encoder.py, tests/hostile)."""

from __future__ import annotations

from crftag import cli
from tests.nn.tiny_bert import save_tiny_bert


def encoder_model(folder, tiny_args, *, int8: bool = True, **settings):
    """(checkpoint, float32 export, int8 export or None) of a model over the tiny BERT whose
    weights are drawn, not trained (lr 0: varied tags, in a second), windows of 6 subwords."""
    bert = save_tiny_bert(folder / "bert")
    train = folder / "train.conll"
    with open("data/ner_sample.dev.conll", encoding="utf-8") as stream:
        blocks = stream.read().split("\n\n")
    train.write_text("\n\n".join(blocks[:20]) + "\n", encoding="utf-8")
    options = tiny_args(
        data__train=str(train),
        data__dev=None,
        data__test=None,
        train__epochs=1,
        train__lr=0,
        model__transformer=str(bert),
        model__transformer_max_length=8,
        **settings,
    )
    run = folder / "run"
    assert cli.run(["train", "configs/sample.yaml", "-o", str(run), *options]) == 0
    exported = folder / "m.onnx", folder / "m8.onnx"
    assert cli.run(["export", str(run), str(exported[0]), "--format", "onnx"]) == 0
    if not int8:
        return run / "model.pt", exported[0], None
    assert cli.run(["export", str(run), str(exported[1]), "--format", "onnx", "--int8"]) == 0
    return run / "model.pt", *exported
