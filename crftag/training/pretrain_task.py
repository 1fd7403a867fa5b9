"""``crftag pretrain``'s training as the loop (:func:`crftag.training.loop.fit`) runs it: its
settings, the run (the objective's models, Adam, the text's pieces, where the run stands), and
the task: each epoch's batches of pieces in an order drawn from the seed and the epoch number
(so a resumed run visits what an uninterrupted one does), the objective's loss on each, its
gradient clipped to ``clip``, and Adam's step at a constant rate."""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from crftag.data.char_codes import CharCodes
from crftag.training.averaging import WeightAverage
from crftag.training.distributed import Group
from crftag.training.pretrain_objectives import CharLMObjective, objective_named
from crftag.training.state import RESUME_FILE, BestScoreTracker, RunState, save_resume

__all__ = ["PretrainRun", "PretrainSettings", "PretrainTask"]


@dataclass(frozen=True)
class PretrainSettings:
    hidden_size: int = 256  # each model's LSTM units (flair's small models: 1024)
    char_dim: int = 32  # the character embedding, shared by the two models
    max_length: int = 250  # characters a training piece: longer lines are cut
    batch_size: int = 32  # pieces a batch
    epochs: int = 10
    learning_rate: float = 0.002  # Adam's
    clip: float = 1.0  # the gradients' largest norm
    seed: int = 1
    max_symbols: int = 300  # the most frequent characters kept; the rest read as unknown
    held_out: float = 0.05  # the share of lines, the last ones, kept for the held-out score
    objective: str = "char_lm"  # crftag.training.pretrain_objectives.OBJECTIVES


@dataclass
class PretrainRun:
    """A pretraining under way: what it reads, what it trains, and where it stands (the
    moving parts of :class:`crftag.training.loop.LoopRun`)."""

    paths: list[str]  # the text files, absolute
    directory: str
    settings: PretrainSettings
    minutes: float | None  # the time budget, all processes together
    text_digest: str  # of the lines read, which a resumed run reads again
    codes: CharCodes
    training: list  # the objective's pieces
    held_out: list
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    device: torch.device
    average: WeightAverage = field(init=False)  # never added to: the models are not averaged
    state: RunState = field(default_factory=RunState)
    tracker: BestScoreTracker = field(default_factory=BestScoreTracker)
    batch_order: random.Random = field(init=False)  # unused: the order comes from the seed
    group: Group = field(default_factory=Group)

    def __post_init__(self) -> None:
        self.average = WeightAverage(self.model)
        self.batch_order = random.Random(self.settings.seed)
        self.state.batch_order_state = self.batch_order.getstate()

    @property
    def objective(self) -> CharLMObjective:
        return objective_named(self.settings.objective)

    def save_state(self) -> None:
        """Write DIR/resume.pt, all that ``crftag pretrain --resume DIR`` needs."""
        described = {
            "paths": self.paths,
            "settings": dataclasses.asdict(self.settings),
            "minutes": self.minutes,
            "symbols": list(self.codes.symbols),
            "state_dict": {k: v.detach().cpu() for k, v in self.model.state_dict().items()},
        }
        save_resume(
            os.path.join(self.directory, RESUME_FILE),
            "pretrain",
            described,
            self.optimizer,
            self.average,
            self.state,
            self.tracker,
            {"text": self.text_digest},
        )


class PretrainTask:
    """The :class:`crftag.training.loop.Task` of pretraining ``run``'s models."""

    average_from = None
    diverged_hint = "begin again in another directory, with another --seed"

    def __init__(self, run: PretrainRun) -> None:
        self.run = run
        self.epochs = run.settings.epochs
        self.examples = len(run.training)
        self.tokens = sum(len(piece) for piece in run.training)
        self.resume_command = f"crftag pretrain --resume {run.directory}"

    def learning_rate(self, epoch: int) -> float:
        return self.run.settings.learning_rate

    def epoch_batches(self, epoch: int, order: random.Random) -> list[list[int]]:
        """The epoch's batches of training pieces, in an order drawn from the seed and the
        epoch (``order`` is not drawn from)."""
        settings = self.run.settings
        generator = torch.Generator().manual_seed(settings.seed * 100_003 + epoch)
        rows = torch.randperm(len(self.run.training), generator=generator).tolist()
        size = settings.batch_size
        return [rows[i : i + size] for i in range(0, len(rows), size)]

    def batch_maker(self, epoch: int) -> Callable[[list[int]], tuple[int, tuple]]:
        """make(rows) -> (pieces, the objective's batch of them on the run's device)."""
        run = self.run
        objective = run.objective

        def make(rows: list[int]) -> tuple[int, tuple]:
            return len(rows), objective.batch([run.training[row] for row in rows], run.device)

        return make

    def step(self, batch: tuple, examples: int) -> torch.Tensor:
        """One update on the objective's mean loss a character; returns that mean times the
        batch's pieces."""
        run = self.run
        run.optimizer.zero_grad()
        loss = run.objective.loss(run.model, batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(run.model.parameters(), run.settings.clip)
        run.optimizer.step()
        return loss.detach() * examples
