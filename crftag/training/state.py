"""Where a training run stands, so it can stop and go on: the best-score tracker, the run state,
and the resume file that holds them with the weights and the optimizer's state."""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field

import torch

from crftag.checkpoint import LoadedModel, model_payload, read_checkpoint, write_atomically
from crftag.errors import CrftagError
from crftag.training.averaging import WeightAverage

__all__ = ["RESUME_FILE", "BestScoreTracker", "RunState", "load_resume", "save_resume"]

RESUME_FILE = "resume.pt"
RESUME_FORMAT = "crftag-resume"


@dataclass
class BestScoreTracker:
    """The best dev score so far, and how many epochs have passed without beating it (early
    stopping, as allennlp's metric tracker). Without a dev score every epoch counts as best."""

    patience: int = 0  # epochs without gain before stopping; 0 = never stop early
    best_score: float = -math.inf
    epochs_without_gain: int = 0

    def update(self, score: float | None) -> bool:
        """Record an epoch's dev score; return whether its model is the best so far."""
        if score is None or score > self.best_score:
            self.best_score = self.best_score if score is None else score
            self.epochs_without_gain = 0
            return True
        self.epochs_without_gain += 1
        return False

    @property
    def should_stop(self) -> bool:
        return bool(self.patience) and self.epochs_without_gain >= self.patience

    def state_dict(self) -> dict:
        return {"best_score": self.best_score, "epochs_without_gain": self.epochs_without_gain}

    def load_state_dict(self, state: dict) -> None:
        self.best_score = float(state["best_score"])
        self.epochs_without_gain = int(state["epochs_without_gain"])


@dataclass
class RunState:
    """Where a run stands: with the weights, the optimizer's state and the tracker, all that
    resuming needs. The learning-rate schedule is a function of ``epoch`` alone."""

    epoch: int = 1  # the epoch under way, 1-based
    step: int = 0  # batches of it already done
    batch_order_state: tuple | None = None  # the batch-order generator at the epoch's start
    epoch_loss: float = 0.0  # summed loss of the batches done
    epoch_seconds: float = 0.0  # time spent on the epoch before an interruption
    history: list = field(default_factory=list)  # one EpochResult dict per finished epoch

    def finish_epoch(self, result: dict, batch_order_state: tuple) -> None:
        """Record a finished epoch and stand at the start of the next."""
        self.history.append(result)
        self.epoch, self.step = self.epoch + 1, 0
        self.epoch_loss, self.epoch_seconds = 0.0, 0.0
        self.batch_order_state = batch_order_state

    def state_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_state(cls, state: dict) -> RunState:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in state.items() if key in names})


def save_resume(
    path: str,
    loaded: LoadedModel,
    optimizer: torch.optim.Optimizer,
    average: WeightAverage,
    run_state: RunState,
    tracker: BestScoreTracker,
) -> None:
    """Write everything a resumed run needs, atomically: the model as a checkpoint describes
    it, plus the optimizer, the weight average, the run state and the random generator."""
    payload = {
        **model_payload(loaded),
        "format": RESUME_FORMAT,
        "optimizer": optimizer.state_dict(),
        "average": average.state_dict(),
        "run_state": {**run_state.state_dict(), **tracker.state_dict()},
        "torch_rng": torch.get_rng_state(),
    }
    write_atomically(path, payload)


def load_resume(output_dir: str) -> dict:
    """The resumable state of a run directory, loaded without executing anything."""
    path = os.path.join(output_dir, RESUME_FILE)
    if not os.path.exists(path):
        raise CrftagError(
            f"{output_dir}: no {RESUME_FILE} here; nothing to resume (finished, or not a run)"
        )
    state = read_checkpoint(path)
    if state.get("format") != RESUME_FORMAT:
        raise CrftagError(f"{path}: not a crftag resume file")
    if "state_dict" not in state:
        raise CrftagError(f"{path}: written by an older crftag that this one cannot continue")
    return state
