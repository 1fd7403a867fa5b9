"""Data-parallel training across processes started by ``torchrun``: who this process is, and
the few collective steps training needs. A run without ``torchrun`` is a group of one, where
every helper here does nothing.

``torchrun`` sets RANK, WORLD_SIZE and LOCAL_RANK (and the rendezvous address); the backend is
``nccl`` when training on GPUs and ``gloo`` on CPUs.
"""

from __future__ import annotations

import math
import os
import socket
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from crftag.errors import CrftagError

__all__ = ["Group", "join", "launched_rank", "leave"]

JOIN_TIMEOUT = 60.0  # seconds for every rank to reach the rendezvous (CRFTAG_JOIN_TIMEOUT)
MAX_WORLD_SIZE = 65536


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


def launched_rank() -> int:
    """The rank ``torchrun`` gave this process (0 without ``torchrun``), before joining."""
    rank = os.environ.get("RANK", "0")
    return int(rank) if rank.isascii() and rank.isdigit() else 0


def join(device: torch.device) -> tuple[Group, torch.device]:
    """Join the process group ``torchrun`` set up, if any; return it and this rank's device.

    A half-set-up environment (``WORLD_SIZE`` without the rest, or peers that never come) is a
    one-line error: missing variables at once, absent peers after ``CRFTAG_JOIN_TIMEOUT``
    seconds (60 by default) instead of torch's half an hour."""
    world_size = _world_size()
    if world_size == 1:
        return Group(), device
    if device.type == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        store, rank = _rendezvous(world_size)
        backend = "nccl" if device.type == "cuda" else "gloo"
        dist.init_process_group(backend, store=store, rank=rank, world_size=world_size)
    return Group(rank=dist.get_rank(), world_size=dist.get_world_size()), device


def leave(group: Group) -> None:
    if group.world_size > 1 and dist.is_initialized():
        dist.destroy_process_group()


TORCHRUN_HINT = "start crftag train under torchrun (docs/distributed.md), or unset WORLD_SIZE"


def _world_size() -> int:
    value = os.environ.get("WORLD_SIZE", "1")
    if not (value.isascii() and value.isdigit() and 1 <= int(value) <= MAX_WORLD_SIZE):
        raise CrftagError(
            f"WORLD_SIZE={value[:40]!r}: expected a number of processes, 1 to {MAX_WORLD_SIZE}"
        )
    return int(value)


def _rendezvous(world_size: int) -> tuple[dist.Store, int]:
    """The store every rank meets at (torchrun's, or one rank 0 starts), reached within the
    join timeout; collectives after it keep torch's own timeout."""
    missing = [name for name in ("RANK", "MASTER_ADDR", "MASTER_PORT") if not os.environ.get(name)]
    if missing:
        raise CrftagError(
            f"WORLD_SIZE={world_size} asks for distributed training, but {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not set: {TORCHRUN_HINT}"
        )
    rank, address = os.environ["RANK"], os.environ["MASTER_ADDR"]
    port = os.environ["MASTER_PORT"]
    if not (rank.isascii() and rank.isdigit() and int(rank) < world_size):
        raise CrftagError(f"RANK={rank[:40]!r}: expected a number below WORLD_SIZE={world_size}")
    if not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        raise CrftagError(f"MASTER_PORT={port[:40]!r}: expected a port number from 1 to 65535")
    timeout = _join_timeout()
    deadline = time.monotonic() + timeout
    where = f"MASTER_ADDR={address} MASTER_PORT={port}"
    if int(rank) != 0 or os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
        _wait_for_store(
            address,
            int(port),
            deadline,
            f"{where}: nothing answered within {timeout:g} s; {TORCHRUN_HINT}",
        )
    left = timedelta(seconds=max(1.0, deadline - time.monotonic()))
    try:
        store, _, _ = next(dist.rendezvous("env://", timeout=left))
    except (dist.DistError, ValueError):
        raise CrftagError(
            f"{where}: not all {world_size} processes of WORLD_SIZE joined within {timeout:g} s; "
            f"{TORCHRUN_HINT}"
        ) from None
    store.set_timeout(dist.default_pg_timeout)
    return store, int(rank)


def _join_timeout() -> float:
    value = os.environ.get("CRFTAG_JOIN_TIMEOUT", str(JOIN_TIMEOUT))
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and 0 < seconds <= 86400):
        raise CrftagError(f"CRFTAG_JOIN_TIMEOUT={value[:40]!r}: expected seconds, 0 to 86400")
    return seconds


def _wait_for_store(address: str, port: int, deadline: float, message: str) -> None:
    """Wait until something listens at the rendezvous address: torch's client would retry as
    long, but logs every failed try to stderr."""
    while True:
        try:
            socket.create_connection((address, port), timeout=1.0).close()
            return
        except OSError:
            if time.monotonic() >= deadline:
                raise CrftagError(message) from None
            time.sleep(0.25)
