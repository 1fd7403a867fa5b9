"""Data-parallel training across processes started by ``torchrun``: who this process is, and
the few collective steps training needs. A run without ``torchrun`` is a group of one, where
every helper here does nothing.

``torchrun`` sets RANK, WORLD_SIZE and LOCAL_RANK (and the rendezvous address); the backend is
``nccl`` when training on GPUs and ``gloo`` on CPUs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

__all__ = ["Group", "join", "leave"]


@dataclass(frozen=True)
class Group:
    rank: int = 0
    world_size: int = 1

    @property
    def main(self) -> bool:
        """Rank 0: the one process that evaluates, writes files and reports."""
        return self.rank == 0

    def broadcast(self, value: Any) -> Any:
        """Rank 0's ``value`` on every rank (any picklable object)."""
        if self.world_size == 1:
            return value
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def broadcast_tensors(self, tensors) -> None:
        """Overwrite each tensor in place with rank 0's."""
        if self.world_size > 1:
            for tensor in tensors:
                dist.broadcast(tensor, src=0)

    def any_signal(self, signal_number: int | None) -> int | None:
        """A stop signal any rank received, so that every rank stops at the same batch."""
        if self.world_size == 1:
            return signal_number
        flag = torch.tensor([signal_number or 0])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return int(flag) or None

    def shard(self, batches: list) -> list:
        """This rank's disjoint share of an epoch's batches, the same count on every rank (DDP
        needs every rank to take the same number of steps): at most world_size - 1 batches of
        an epoch go unused, and different ones each epoch, as the batch order is reshuffled."""
        if self.world_size == 1:
            return batches
        per_rank = len(batches) // self.world_size
        return batches[self.rank :: self.world_size][:per_rank]


def join(device: torch.device) -> tuple[Group, torch.device]:
    """Join the process group ``torchrun`` set up, if any; return it and this rank's device."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size == 1:
        return Group(), device
    if device.type == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    return Group(rank=dist.get_rank(), world_size=dist.get_world_size()), device


def leave(group: Group) -> None:
    if group.world_size > 1 and dist.is_initialized():
        dist.destroy_process_group()
