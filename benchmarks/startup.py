"""One sentence in a blink: `echo 'UN praises Danish plan' | crftag predict` (the bundled en-ner,
on the NumPy runtime) against a bare Typer app's `--help`, the least a Typer command line costs.

    python benchmarks/startup.py [--runs 20] [--warmup 2] [--instructions] [--profile]

The crftag timed is the checkout this script is in (its root first on PYTHONPATH, started as
the `crftag` script starts it), so running the script of another checkout, with the same
Python, times that one. The two commands run alternately, A B then B A, so a slow spell of a
shared machine falls on both; each run is a whole process, timed by its wall clock and by the
CPU time the kernel accounts to it (user + system). Printed: each command's median, and the
median of the per-pair ratios (target: at most 1.2x, wall). The bare app is written for the
run: one command with one option, as Typer's tutorial starts. Bytecode is cached as users have
it: the warm-up runs write it where PYTHONDONTWRITEBYTECODE would stop them. The load average
before and after is printed with the figures, since a busy machine stretches both sides.
--instructions counts the instructions each command executes instead, once each under
valgrind's callgrind (`apt-get install valgrind`): the same on a busy machine as on a quiet
one, so it compares two checkouts where the clock cannot, though it leaves out what costs time
without instructions (page faults, waiting for the disk).
--profile prints where crftag predict's own process spends its time instead: its imports by
time with their children (python -X importtime, the least of --runs runs each) and a cProfile
of one run, both to stdout.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What the installed `crftag` script runs, the crftag found first on PYTHONPATH.
CRFTAG_PREDICT = [
    sys.executable,
    "-c",
    "import sys; from crftag.cli import main; sys.exit(main())",
    "predict",
]
SENTENCE = b"UN praises Danish plan\n"
TARGET_RATIO = 1.2
BARE_APP = '''import typer

app = typer.Typer()


@app.command()
def main(name: str = "world") -> None:
    """Say hello to NAME."""
    typer.echo(f"Hello {name}")


if __name__ == "__main__":
    app()
'''


def environment() -> dict:
    """The children's environment: this checkout's crftag first, bytecode written."""
    children = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    children["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    return children


def timed_run(command: list[str], stdin: bytes, children: dict) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one whole process, its output discarded; a failure stops
    the benchmark with the command's own message. The CPU time is what the children reaped
    during the run were accounted, so nothing else may run children meanwhile."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    finished = subprocess.run(
        command, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=children
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if finished.returncode:
        sys.exit(f"{' '.join(command)} failed: {finished.stderr.decode(errors='replace').strip()}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def run_pairs(crftag: list[str], bare: list[str], runs: int, warmup: int) -> dict:
    """Each command's wall and CPU seconds over ``runs`` alternating pairs, after ``warmup``."""
    children = environment()
    for _ in range(warmup):
        timed_run(crftag, SENTENCE, children)
        timed_run(bare, b"", children)
    pairs = []
    for index in range(runs):
        if index % 2:
            bare_times = timed_run(bare, b"", children)
            crftag_times = timed_run(crftag, SENTENCE, children)
        else:
            crftag_times = timed_run(crftag, SENTENCE, children)
            bare_times = timed_run(bare, b"", children)
        pairs.append((crftag_times, bare_times))
    return {
        measure: {
            "crftag_s": statistics.median(pair[0][column] for pair in pairs),
            "bare_typer_s": statistics.median(pair[1][column] for pair in pairs),
            "ratio": statistics.median(pair[0][column] / pair[1][column] for pair in pairs),
        }
        for column, measure in enumerate(("wall", "cpu"))
    }


def import_times(children: dict, runs: int) -> dict[str, tuple[int, int]]:
    """Each module `crftag predict` imports: (own, with children) microseconds, the least of
    ``runs`` runs of ``python -X importtime`` (the least is the one a busy spell spared)."""
    least: dict[str, tuple[int, int]] = {}
    for _ in range(runs):
        found = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "crftag", "predict"],
            input=SENTENCE,
            capture_output=True,
            env=children,
            check=True,
        )
        for line in found.stderr.decode().splitlines():
            fields = line.removeprefix("import time:").split("|")
            if len(fields) == 3 and fields[0].strip().isdigit():
                name, own, total = fields[2].strip(), int(fields[0]), int(fields[1])
                kept = least.get(name, (own, total))
                least[name] = (min(own, kept[0]), min(total, kept[1]))
    return least


def profile(crftag: list[str], lines: int, runs: int) -> None:
    """The slowest imports of `crftag predict` and a cProfile of one run, to stdout."""
    children = environment()
    timed_run(crftag, SENTENCE, children)  # bytecode written
    least = import_times(children, runs)
    own_total = sum(own for own, _ in least.values()) / 1000
    print(f"imports: {own_total:.1f} ms in all (least of {runs} runs); the slowest:")
    for name, (own, total) in sorted(least.items(), key=lambda item: -item[1][1])[:lines]:
        print(f"  {own / 1000:6.1f} ms own {total / 1000:7.1f} ms with children  {name}")
    with tempfile.TemporaryDirectory() as folder:
        stats = os.path.join(folder, "predict.prof")
        subprocess.run(
            [sys.executable, "-m", "cProfile", "-o", stats, "-m", "crftag", "predict"],
            input=SENTENCE,
            capture_output=True,
            env=children,
            check=True,
        )
        import pstats

        pstats.Stats(stats, stream=sys.stdout).sort_stats("cumulative").print_stats(lines)


def instructions(command: list[str], stdin: bytes, children: dict) -> int:
    """The instructions ``command`` executes, counted by valgrind's callgrind."""
    counted = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        input=stdin,
        capture_output=True,
        env=children,
        check=True,
    )
    for line in counted.stderr.decode().splitlines():
        if "Collected :" in line:
            return int(line.split(":")[-1])
    sys.exit(f"no instruction count from valgrind: {counted.stderr.decode()[-500:]}")


def count_both(crftag: list[str], bare: list[str]) -> None:
    """Each command's instructions (after a run that writes the bytecode) and their ratio."""
    children = environment()
    timed_run(crftag, SENTENCE, children)
    timed_run(bare, b"", children)
    own, reference = instructions(crftag, SENTENCE, children), instructions(bare, b"", children)
    print(f"instructions: crftag predict {own:,}, bare Typer --help {reference:,}")
    print(f"ratio {own / reference:.2f}x (target {TARGET_RATIO}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="alternating pairs timed")
    parser.add_argument("--warmup", type=int, default=2, help="untimed pairs first")
    parser.add_argument("--profile", action="store_true", help="imports and cProfile instead")
    parser.add_argument("--instructions", action="store_true", help="count instructions instead")
    args = parser.parse_args()
    crftag = CRFTAG_PREDICT
    if args.profile:
        profile(crftag, 40, args.runs)
        return
    with tempfile.TemporaryDirectory() as folder:
        app = os.path.join(folder, "bare_typer.py")
        with open(app, "w", encoding="utf-8") as handle:
            handle.write(BARE_APP)
        bare = [sys.executable, app, "--help"]
        if args.instructions:
            count_both(crftag, bare)
            return
        load_before = os.getloadavg()[0]
        figures = run_pairs(crftag, bare, args.runs, args.warmup)
        load_after = os.getloadavg()[0]
    print(
        f"{args.runs} alternating pairs; load average {load_before:.2f} before, "
        f"{load_after:.2f} after"
    )
    print("           crftag predict   bare Typer --help   ratio (median of pairs)")
    for measure, row in figures.items():
        print(
            f"{measure + ' s':10s} {row['crftag_s']:14.3f}   {row['bare_typer_s']:17.3f}   "
            f"{row['ratio']:.2f}x"
        )
    verdict = "met" if figures["wall"]["ratio"] <= TARGET_RATIO else "not met"
    print(f"target: wall ratio <= {TARGET_RATIO}x: {verdict}")


if __name__ == "__main__":
    main()
