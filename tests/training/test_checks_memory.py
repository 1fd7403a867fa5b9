"""Training that would not fit in memory is refused before anything is allocated, with the
figure: the CRF's (batch, K, K) transition counts of a batch counted beside the weights, and
the memory an address-space limit (``ulimit -v``) leaves counted as what is free."""

import subprocess
import sys

import pytest
import torch

from crftag.config.sections import load_config
from crftag.data.vocab import PAD, UNK, Vocabularies, Vocabulary
from crftag.errors import CrftagError
from crftag.training import checks


def many_tags(count):
    return Vocabularies(
        words=Vocabulary([PAD, UNK, "w"]),
        chars=Vocabulary([PAD, UNK]),
        tags=Vocabulary([f"T{index}" for index in range(count)], has_unknown=False),
    )


def test_ten_thousand_tags_count_the_crfs_transition_counts(monkeypatch):
    monkeypatch.setattr(checks, "_free_memory", lambda device: 4 * checks.GIB)
    config = load_config("configs/sample.yaml", ["train.batch_size=16"])
    with pytest.raises(CrftagError) as caught:
        checks.check_model_size(config, many_tags(10_000), torch.device("cpu"))
    message = str(caught.value)
    # 16 x 10,000 x 10,000 float32 counts: 6.0 GiB, beside 1.5 GiB of weights and Adam's state.
    assert "the CRF's transition counts of a batch, 6.0 GiB" in message
    assert (
        "cpu memory has 4.0 GiB free; use fewer tags (10,000) or a smaller train.batch_size"
        in message
    )
    assert message.startswith("model: training ")


def test_a_few_tags_cost_nothing_to_speak_of(monkeypatch):
    monkeypatch.setattr(checks, "_free_memory", lambda device: checks.GIB)
    checks.check_model_size(load_config("configs/sample.yaml"), many_tags(20), "cpu")


def test_an_address_space_limit_is_what_is_free(tmp_path):
    data = tmp_path / "tags.conll"
    data.write_text(
        "".join(
            "".join(f"w{(s * 10 + t) % 50} T{s * 10 + t}\n" for t in range(10)) + "\n"
            for s in range(1000)
        )
    )
    config = tmp_path / "tags.yaml"
    config.write_text(
        f"data:\n  train: {data}\n  tag_scheme: none\n"
        "model:\n  word_dim: 16\n  hidden_size: 16\n  char_encoder: none\n"
    )
    run = tmp_path / "run"
    command = f"ulimit -v 4194304; {sys.executable} -m crftag train {config} -o {run} --device cpu"
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("crftag: error: model: training 200,")
    # train.batch_size 10 by default: 10 x 10,000 x 10,000 float32 counts, 3.7 GiB.
    assert "the CRF's transition counts of a batch, 3.7 GiB), and cpu memory has " in done.stderr
    assert done.stderr.count("\n") == 1 and not (run / "model.pt").exists()
