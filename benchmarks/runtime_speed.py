"""The exported NumPy runtime against the torch path, measured in one run: start-up, throughput
and size for torch fp32, exported fp32 and exported int8 (section 6 of benchmarks/speed.py).

    python benchmarks/runtime_speed.py [--record] [--json PATH]

The bundled en-ner ships int8; the torch checkpoint and the fp32 export are written from it (the
same weights, dequantized) for the run. Start-up is the median wall time of 5 runs of
`crftag predict` on one sentence with each, beside `python -c pass` (the floor) and
`python -c "import torch"`. Throughput is `predict_files` (read, tag, write CoNLL) on the text
of eng.testb in-process, so start-up is excluded, each exported variant paired against torch in
alternating runs (median ratio of 3).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

import output  # noqa: E402  (benchmarks/output.py, beside this script)
from crf_kernels import paired_seconds  # noqa: E402

CONLL = os.path.join(ROOT, "..", "shared", "data", "conll2003")
SENTENCE = b"Angela Merkel met Emmanuel Macron in Paris .\n"
START_UP_TARGET_S = 0.6
THROUGHPUT_TARGET = 1.2


def median_wall(command: list[str], stdin: bytes = b"", repeats: int = 5) -> float:
    """Median wall seconds of a whole command (after one untimed run that warms the disk
    cache), its output discarded."""
    subprocess.run(command, input=stdin, capture_output=True, check=True)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(command, input=stdin, capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def unpacked_copies(directory: str) -> tuple[str, str]:
    """The bundled en-ner (int8) as a torch checkpoint and as a float32 export, written in
    ``directory``: the same weights on the other two paths."""
    from crftag.modelfiles.checkpoint import export_arrays, load_model, save_model

    loaded = load_model("en-ner")
    checkpoint = os.path.join(directory, "en-ner.pt")
    exported = os.path.join(directory, "en-ner.fp32.npz")
    save_model(checkpoint, loaded)
    export_arrays(exported, loaded)
    return checkpoint, exported


def start_up(checkpoint: str, fp32: str) -> dict:
    crftag = [sys.executable, "-m", "crftag", "predict"]
    return {
        "python_pass_s": median_wall([sys.executable, "-c", "pass"]),
        "import_torch_s": median_wall([sys.executable, "-c", "import torch"]),
        "torch_fp32_s": median_wall([*crftag, "-m", checkpoint], SENTENCE),
        "exported_fp32_s": median_wall([*crftag, "-m", fp32], SENTENCE),
        "exported_int8_s": median_wall(crftag, SENTENCE),  # the bundled default: its int8 file
        "target_s": START_UP_TARGET_S,
    }


def tagging_run(tagger, source: str):
    """A function that runs ``predict_files`` over ``source`` (one sentence of tokens a line)
    as ``crftag predict`` does (CoNLL out, batches of 64), its output discarded."""
    from crftag.inference.streaming import predict_files

    def run():
        with open(os.devnull, "w", encoding="utf-8") as sink:
            predict_files(
                tagger,
                [source],
                input_format="tokens",
                output_format="conll",
                batch_size=64,
                output=sink,
            )

    return run


def throughput(checkpoint: str, exported: dict[str, str], directory: str) -> dict:
    """Tokens/s of each path on eng.testb, and each export's median ratio to torch."""
    import torch

    from crftag.data.conll import ColumnSpec, read_corpus
    from crftag.inference.array_tagger import ArrayTagger
    from crftag.inference.loading import load

    torch.set_num_threads(2)
    sentences = [
        list(s.tokens) for s in read_corpus(os.path.join(CONLL, "eng.testb"), ColumnSpec())
    ]
    tokens = sum(map(len, sentences))
    source = os.path.join(directory, "testb.tokens")
    with open(source, "w", encoding="utf-8") as handle:
        handle.writelines(" ".join(sentence) + "\n" for sentence in sentences)

    reference = tagging_run(load(checkpoint, "cpu"), source)
    results = {"tokens": tokens, "target_ratio": THROUGHPUT_TARGET}
    for name, path in exported.items():
        exported_s, torch_s, ratio = paired_seconds(
            tagging_run(ArrayTagger.load(path), source), reference, 3
        )
        results[name] = {
            "tokens_per_s": tokens / exported_s,
            "torch_fp32_tokens_per_s": tokens / torch_s,
            "ratio_to_torch": ratio,  # torch seconds / exported seconds: above 1 is faster
        }
    return results


def measure() -> dict:
    from crftag.modelfiles.registry import resolve_model_path

    shipped = resolve_model_path("en-ner")
    with tempfile.TemporaryDirectory() as directory:
        checkpoint, fp32 = unpacked_copies(directory)
        report = {
            "size_bytes": {
                "torch_checkpoint": os.path.getsize(checkpoint),
                "exported_fp32": os.path.getsize(fp32),
                "exported_int8": os.path.getsize(shipped),
            },
            "start_up": start_up(checkpoint, fp32),
            "throughput_eng_testb": throughput(
                checkpoint, {"exported_fp32": fp32, "exported_int8": shipped}, directory
            ),
        }
    return report


def rows(report: dict) -> list[tuple[str, str, str, str]]:
    """Table rows (what, figure, reference, ratio) for speed.py's table."""
    start = report["start_up"]
    floor = f"python -c pass {start['python_pass_s']:.2f} s"
    table = [
        (
            f"one sentence, {name.replace('_s', '').replace('_', ' ')}",
            f"{start[name]:.2f} s",
            f"{floor}; import torch {start['import_torch_s']:.2f} s",
            f"target <= {start['target_s']} s" if name != "torch_fp32_s" else "",
        )
        for name in ("torch_fp32_s", "exported_fp32_s", "exported_int8_s")
    ]
    speed = report["throughput_eng_testb"]
    for name in ("exported_fp32", "exported_int8"):
        table.append(
            (
                f"predict eng.testb, {name.replace('_', ' ')}, excluding start-up",
                f"{speed[name]['tokens_per_s']:.0f} tok/s",
                f"torch fp32 {speed[name]['torch_fp32_tokens_per_s']:.0f} tok/s",
                f"{speed[name]['ratio_to_torch']:.2f}x (target >= {speed['target_ratio']})",
            )
        )
    sizes = report["size_bytes"]
    for name in ("exported_fp32", "exported_int8"):
        table.append(
            (
                f"model file, {name.replace('_', ' ')}",
                f"{sizes[name] / 1e6:.1f} MB",
                f"torch checkpoint {sizes['torch_checkpoint'] / 1e6:.1f} MB",
                f"{sizes[name] / sizes['torch_checkpoint']:.2f}x",
            )
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write here instead (default: see --record)")
    output.add_record_option(parser)
    args = parser.parse_args()
    args.json = args.json or output.result_path("runtime_speed.json", args.record)
    report = measure()
    with open(args.json, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2)
        handle.write("\n")
    for row in rows(report):
        print("  ".join(row))


if __name__ == "__main__":
    main()
