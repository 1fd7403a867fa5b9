"""Where a benchmark's figures come from: the commit of the code that ran them."""

from __future__ import annotations

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def commit() -> str:
    """The short hash of the checkout's HEAD (taken before a long run: commits may follow)."""
    result = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    )
    return result.stdout.strip()
