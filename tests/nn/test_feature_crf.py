"""The linear feature CRF (``model.encoder: features``): its sparse gradient, its training, and a
run through the same CLI as the BiLSTM-CRF."""

import json

import pytest
import torch
from torch.nn import functional

from crftag import cli
from crftag.data.batching import Batch
from crftag.data.features import NUM_FEATURES, FeatureHasher
from crftag.nn.taggers import FeatureCRF, _SparseRowSum
from crftag.training.optimizers import SparseSGD


def test_sparse_row_sum_matches_dense_autograd():
    torch.manual_seed(0)
    rows = torch.randint(0, 50, (12, 7))
    weights = torch.randn(50, 4, dtype=torch.float64, requires_grad=True)
    upstream = torch.randn(12, 4, dtype=torch.float64)
    (_SparseRowSum.apply(rows, weights) * upstream).sum().backward()
    sparse_grad = weights.grad.to_dense()
    weights.grad = None
    (functional.embedding(rows, weights).sum(1) * upstream).sum().backward()
    assert torch.allclose(sparse_grad, weights.grad)


def test_feature_crf_trains_and_its_padding_row_stays_zero():
    torch.manual_seed(0)
    model = FeatureCRF(buckets=100, num_tags=3)
    hasher = FeatureHasher(100)
    features = torch.zeros(2, 3, NUM_FEATURES, dtype=torch.long)
    features[0] = hasher(["a", "b", "c"])
    features[1, :2] = hasher(["b", "a"])
    mask = torch.tensor([[True, True, True], [True, True, False]])
    batch = Batch(
        mask=mask,
        lengths=mask.sum(1),
        tags=torch.tensor([[0, 1, 2], [1, 0, 0]]),
        inputs={
            "words": torch.ones(2, 3, dtype=torch.long),
            "chars": torch.ones(2, 3, 1, dtype=torch.long),
            "hashed": features,
        },
    )
    optimizer = SparseSGD(model.parameters(), lr=0.1, weight_decay=0.01)
    losses = []
    for _ in range(30):
        loss = model.loss(batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.1 * losses[0]
    assert torch.count_nonzero(model.weights[0]) == 0
    tags, _ = model.decode(batch)
    assert tags[0].tolist() == [0, 1, 2] and tags[1, :2].tolist() == [1, 0]


def test_feature_crf_through_the_cli(tmp_path, invoke):
    run = tmp_path / "run"
    args = ["train", "configs/sample_features.yaml", "-o", str(run), "--quiet", "--device", "cpu"]
    assert cli.run(args) == 0
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["dev"] > 0.8
    result = invoke(["eval", "data/ner_sample.test.conll", "-m", str(run), "--json"])
    assert result.status == 0
    assert json.loads(result.stdout)["entities"]["micro"]["f1"] == pytest.approx(metrics["test"])
    result = invoke(
        ["predict", "-m", str(run), "--format", "jsonl"], stdin="Anna Schmidt visited Paris .\n"
    )
    assert result.status == 0 and result.stdout.count("\n") == 1


@pytest.mark.parametrize(
    "setting, message",
    [
        ("train.momentum=0.9", "train.momentum: 0"),
        ("train.clip_grad_norm=5", "clip_grad_norm: null"),
        ("model.embeddings=data/sentences.txt", "uses no word vectors"),
        ("model.hidden_layer=50", "model.hidden_layer needs the BiLSTM encoder"),
        ("model.document_context=true", "model.document_context needs the BiLSTM encoder"),
        ("model.locked_dropout=true", "model.locked_dropout needs the BiLSTM encoder"),
        ("model.lexicons={ORG: data/sentences.txt}", "model.lexicons needs the BiLSTM encoder"),
        ("train.embedding_lr_scale=0.1", "the features encoder has no word embeddings"),
    ],
)
def test_feature_crf_config_mistakes(tmp_path, invoke, setting, message):
    args = ["train", "configs/sample_features.yaml", "-o", str(tmp_path), "--set", setting]
    result = invoke(args)
    assert result.status == 2 and message in result.stderr
    assert result.stderr.count("\n") == 1
