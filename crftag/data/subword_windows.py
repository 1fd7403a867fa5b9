"""A batch of sentences' subwords as the windows an encoder reads, and those windows grouped
into encoder calls of similar lengths: the one layout of the torch encoder
(:class:`crftag.nn.transformer.TransformerWords`) and of the exported one
(:mod:`crftag.runtime.subword_encoding`).

Torch-free: plain lists. Each sentence is cut into windows by
:func:`crftag.data.subwords.window_starts` (one window if it fits), each window framed with the
tokenizer's special tokens; every subword takes its state from the window
:func:`crftag.data.subwords.assign_windows` gives it.

Encoder calls: an encoder pads every window of a call to the call's longest, and pays for the
padding as for real subwords. Windows sorted by length and cut into calls whose shortest window
is within :data:`SLACK` subwords (or a quarter) of the longest waste at most that on each, and a
call holds at most ``max_subwords`` positions, which bounds its memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crftag.data.subwords import Subwords, assign_windows, window_starts

__all__ = ["SLACK", "WindowLayout", "encoder_calls", "lay_out_windows"]

SLACK = 8  # padding a window may carry in a call, beyond a quarter of the call's longest


@dataclass(frozen=True)
class WindowLayout:
    """The windows of a batch of sentences.

    windows  each window's subword ids, special tokens included
    places   for each sentence, each of its subwords' (window, position in that window, the
             special tokens before it counted)
    """

    windows: list[list[int]]
    places: list[list[tuple[int, int]]]


def lay_out_windows(
    pieces: Sequence[Subwords], width: int, frame: tuple[Sequence[int], Sequence[int]]
) -> WindowLayout:
    """The windows of sentences' subwords ``pieces``, at most ``width`` subwords each between
    ``frame``'s special tokens (ids before, ids after)."""
    before, after = list(frame[0]), list(frame[1])
    windows, places = [], []
    for found in pieces:
        count = len(found.ids)
        starts = window_starts(count, width)
        first = len(windows)
        windows.extend([*before, *found.ids[start : start + width], *after] for start in starts)
        assigned = assign_windows(count, width, starts)
        places.append([(first + window, len(before) + offset) for window, offset in assigned])
    return WindowLayout(windows, places)


def encoder_calls(lengths: Sequence[int], max_subwords: int) -> list[list[int]]:
    """Windows of ``lengths`` grouped into encoder calls: indices into ``lengths``, longest
    first, each call's windows within ``SLACK`` subwords or a quarter of its longest, and at
    most ``max_subwords`` padded positions a call (at least one window)."""
    order = sorted(range(len(lengths)), key=lambda index: -lengths[index])
    calls: list[list[int]] = []
    for index in order:
        call = calls[-1] if calls else None
        if call is not None:
            longest = lengths[call[0]]
            close = longest - lengths[index] <= max(SLACK, longest // 4)
            if close and (len(call) + 1) * longest <= max_subwords:
                call.append(index)
                continue
        calls.append([index])
    return calls
