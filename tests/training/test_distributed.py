"""Outgrowing one process: DDP training under torchrun (gloo on CPU)."""

import json
import os
import subprocess
import sys

import pytest
import torch

from crftag import cli
from tests.conftest import SAMPLE_CONFIG, _tiny_settings
from tests.training.test_loop import _tiny_training_set

TORCHRUN = os.path.join(os.path.dirname(sys.executable), "torchrun")


@pytest.mark.skipif(not os.path.exists(TORCHRUN), reason="torchrun is not installed beside python")
def test_two_process_training_matches_one_process(tmp_path, invoke):
    single, double = tmp_path / "single", tmp_path / "double"
    common = ["configs/sample.yaml", "--device", "cpu", "-q", "--seed", "5"]
    assert cli.run(["train", *common, "-o", str(single)]) == 0
    done = subprocess.run(
        [
            TORCHRUN,
            "--nproc_per_node",
            "2",
            "--master_port",
            "29517",
            "-m",
            "crftag",
            "train",
            *common,
            "-o",
            str(double),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(os.listdir(double)) == ["metrics.json", "model.pt"]  # one checkpoint, rank 0's
    assert done.stderr.count("saved ") == 1  # one report, rank 0's
    one = json.loads((single / "metrics.json").read_text())
    two = json.loads((double / "metrics.json").read_text())
    assert two["processes"] == 2
    # Two ranks take half the optimizer steps of one process, each on two batches' averaged
    # gradient, so the runs follow different trajectories: on this sample their dev F1 differ
    # by up to 0.044 over seeds 1-5 (both ways round). Both must have learned; that each step
    # is the exact average is checked by test_each_step_averages_the_ranks_gradients.
    assert one["dev"] > 0.7 and two["dev"] > 0.7, (one["dev"], two["dev"])
    loaded = invoke(["eval", "data/ner_sample.dev.conll", "-m", str(double), "--json"])
    assert loaded.status == 0, loaded.stderr
    assert abs(json.loads(loaded.stdout)["entities"]["micro"]["f1"] - two["dev"]) < 1e-9


def rank_model_and_batch(rank):
    """The tiny model (dropout off, so both ranks compute what one process computes, on the
    hand-written backward pass) and rank ``rank``'s half of the batch: its four sentences."""
    from crftag.config.sections import load_config
    from crftag.data.batching import build_batch
    from crftag.nn.encoders import use_fast_training
    from crftag.nn.taggers import build_model

    config = load_config(SAMPLE_CONFIG, _tiny_settings({"model.dropout": 0.0}))
    training = _tiny_training_set(config)
    torch.manual_seed(0)
    model = build_model(config, training.vocabularies, training.train_scheme)
    use_fast_training(model, True)
    rows = range(4 * rank, 4 * rank + 4)
    batch = build_batch(
        [training.sentences[i].tokens for i in rows],
        training.vocabularies,
        encoded=[training.encoded[i] for i in rows],
    )
    return model, batch


# One rank of a two-process group: rank_model_and_batch's model under DistributedDataParallel
# over gloo, the loss of this rank's half of the batch; rank 0 saves the synchronised gradients.
_RANK_SCRIPT = """
import sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
sys.path[:0] = ["."]
from tests.training.test_distributed import rank_model_and_batch

rank, store, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
torch.set_num_threads(1)
model, batch = rank_model_and_batch(rank)
dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=2)
network = DistributedDataParallel(model, broadcast_buffers=False)
network(batch).backward()
# Both ranks past their last collective, and DDP's reducer (which holds the group) gone,
# before the group is torn down: otherwise a rank may exit while gloo's threads still
# run, which aborts it ("terminate called without an active exception").
dist.barrier()
del network
dist.destroy_process_group()
torch.save({n: p.grad for n, p in model.named_parameters() if p.grad is not None}, out)
"""


def half_gradients(rank):
    """The gradients of rank ``rank``'s half of the batch alone, computed in this process (no
    group, so no process of its own is needed)."""
    model, batch = rank_model_and_batch(rank)
    model.loss(batch).backward()
    return {n: p.grad for n, p in model.named_parameters() if p.grad is not None}


def test_each_step_averages_the_ranks_gradients(tmp_path):
    """Under DistributedDataParallel every parameter's gradient, the fused LSTM's included, is
    the mean of the gradients each rank's batch gives alone: the rule that makes N processes
    train as one process with N times the batch."""
    script = tmp_path / "rank.py"
    script.write_text(_RANK_SCRIPT)
    store = tmp_path / "store"

    def start(rank):
        out = tmp_path / f"{rank}.pt"
        command = [sys.executable, str(script), str(rank), str(store), str(out)]
        return subprocess.Popen(command, stderr=subprocess.PIPE, text=True), out

    ranks = [start(0), start(1)]
    halves = [half_gradients(0), half_gradients(1)]  # while the ranks start
    for process, _ in ranks:
        assert process.wait(timeout=120) == 0, process.stderr.read()[-3000:]
    synced = torch.load(ranks[0][1])
    assert synced.keys() == halves[0].keys() and any("lstm" in name for name in synced)
    for name, gradient in synced.items():
        mean = (halves[0][name] + halves[1][name]) / 2
        assert torch.allclose(gradient, mean, rtol=1e-5, atol=1e-6), name
        assert not torch.allclose(halves[0][name], halves[1][name]), name
