"""How a training step uses the cores (crftag/training/step.py): its torch operations on the
calling thread, the compiled BiLSTM loops on as many threads as torch had, torch's thread
count restored after it."""

import types

import pytest
import torch

from crftag.nn import fused_lstm
from crftag.nn.encoders import use_fast_training
from crftag.training.optimizers import make_optimizer
from crftag.training.step import train_step
from tests.training.test_loop import _tiny_model_and_batch


@pytest.fixture
def two_torch_threads():
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(threads)


def test_a_step_runs_torch_on_one_thread_and_the_loops_on_two(
    tiny_config, monkeypatch, compiled_loops, two_torch_threads
):
    config = tiny_config(model__dropout=0.0)
    model, batch = _tiny_model_and_batch(config)
    use_fast_training(model, True)
    optimizer = make_optimizer(config, model)
    seen = []  # (torch's thread count, the loops' thread count) at each loop call
    compiled = fused_lstm._lstm

    def spy(name, threads_argument):
        def call(*args):
            seen.append((torch.get_num_threads(), args[threads_argument]))
            return getattr(compiled, name)(*args)

        return call

    loops = types.SimpleNamespace(forward=spy("forward", 7), backward=spy("backward", 10))
    monkeypatch.setattr(fused_lstm, "_lstm", loops)
    train_step(model, optimizer, batch, config.train)
    assert torch.get_num_threads() == 2
    assert len(seen) == 2 and set(seen) == {(1, 2)}  # the word BiLSTM: forward, backward


def test_loop_threads_is_undone_on_leaving_even_by_an_error():
    with pytest.raises(RuntimeError), fused_lstm.loop_threads(2):
        assert fused_lstm._threads() == 2
        raise RuntimeError
    assert fused_lstm._threads() == torch.get_num_threads()
