"""The training loop's parts: the step, the tracker, the run state, and training in memory."""

import math

import pytest
import torch

from crftag.data.batching import build_batch
from crftag.scoring.evaluate import headline, score_sentences
from crftag.training.corpus import (
    build_vocabularies,
    encode_training_set,
    in_train_scheme,
    read_training_files,
    resolve_schemes,
)
from crftag.training.optimizers import make_optimizer
from crftag.training.state import BestScoreTracker, RunState
from crftag.training.step import drop_singletons, train_step


def test_tracker_keeps_the_best_and_counts_epochs_without_gain():
    tracker = BestScoreTracker(patience=2)
    assert [tracker.update(s) for s in (0.5, 0.7, 0.6, 0.7)] == [True, True, False, False]
    assert tracker.best_score == 0.7 and tracker.should_stop
    restored = BestScoreTracker(patience=2)
    restored.load_state_dict(tracker.state_dict())
    assert restored == tracker
    assert not BestScoreTracker(patience=0, epochs_without_gain=99).should_stop
    no_dev = BestScoreTracker(patience=1)
    assert no_dev.update(None) and no_dev.update(None) and no_dev.best_score == -math.inf


def test_run_state_finishes_epochs_and_round_trips():
    state = RunState(epoch=3, step=7, epoch_loss=2.5, epoch_seconds=1.0)
    state.finish_epoch({"epoch": 3}, ("order",))
    assert (state.epoch, state.step, state.epoch_loss, state.epoch_seconds) == (4, 0, 0.0, 0.0)
    assert state.history == [{"epoch": 3}] and state.batch_order_state == ("order",)
    # Resume files also hold the tracker's fields beside the state's.
    assert RunState.from_state({**state.state_dict(), "best_score": 0.1}) == state


def test_word_dropout_replaces_only_singletons():
    torch.manual_seed(0)
    words = torch.tensor([[2, 3, 4, 0]] * 200)
    singletons = torch.tensor([False, False, False, True, False])
    dropped = drop_singletons(words, singletons, 0.5)
    changed = dropped != words
    assert changed[:, 1].float().mean().item() == pytest.approx(0.5, abs=0.1)
    assert not changed[:, [0, 2, 3]].any() and (dropped[changed] == 1).all()


def _tiny_training_set(config):
    files = read_training_files(config)
    data_scheme, train_scheme = resolve_schemes(config, files)
    sentences = in_train_scheme([s for _, in_file in files for s in in_file], train_scheme)
    vocabularies = build_vocabularies(config, sentences, train_scheme)
    return encode_training_set(files, vocabularies, data_scheme, train_scheme)


def _tiny_model_and_batch(config):
    from crftag.nn.taggers import build_model

    training = _tiny_training_set(config)
    torch.manual_seed(0)
    model = build_model(config, training.vocabularies, training.train_scheme)
    rows = list(range(8))
    batch = build_batch(
        [training.sentences[i].tokens for i in rows],
        training.vocabularies,
        encoded=[training.encoded[i] for i in rows],
    )
    return model, batch


def test_train_step_lowers_the_loss_of_its_batch(tiny_config):
    config = tiny_config(model__dropout=0.0)
    model, batch = _tiny_model_and_batch(config)
    optimizer = make_optimizer(config, model)
    losses = [float(train_step(model, optimizer, batch, config.train)) for _ in range(5)]
    assert losses == sorted(losses, reverse=True) and losses[-1] < 0.9 * losses[0]


def test_training_in_memory_equals_training_on_disk(train_tiny, sample_model):
    """The same config and seed give the same weights whichever entry point trains them."""
    from crftag.modelfiles.checkpoint import load_model

    tagger, epochs = train_tiny()
    assert [e.epoch for e in epochs] == [1, 2, 3] and any(e.best for e in epochs)
    on_disk = load_model(str(sample_model)).model.state_dict()
    for name, value in tagger.model.state_dict().items():
        assert torch.equal(value, on_disk[name]), name
    best = max(e.dev_score for e in epochs)
    dev = tagger.config.data.dev
    scored = score_sentences(tagger, _read(tagger.config, dev))
    assert headline(scored) == best


def _read(config, path):
    from crftag.data.conll import read_corpus

    return read_corpus(path, config.data.column_spec(path))


def test_amp_runs_the_encoder_in_bfloat16_and_the_crf_in_float32(tiny_config):
    model, batch = _tiny_model_and_batch(tiny_config(model__dropout=0.0))
    exact = model.loss(batch, amp=False)
    autocast = model.loss(batch, amp=True)
    assert autocast.dtype == torch.float32
    # bfloat16 keeps 8 bits of mantissa: near the float32 loss, but not equal to it.
    assert autocast.item() != exact.item()
    assert autocast.item() == pytest.approx(exact.item(), rel=0.05)


def test_amp_on_the_cpu_is_a_config_error(invoke, tiny_args):
    result = invoke(["train", "configs/sample.yaml", *tiny_args(train__amp="true")])
    assert result.status == 2 and not result.stdout
    assert result.stderr.startswith("crftag: error: train.amp: bfloat16 autocast needs a CUDA")
    assert len(result.stderr.splitlines()) == 1
