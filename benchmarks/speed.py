"""Speed and memory of crftag, each figure beside a reference measured in the same run.

    python benchmarks/speed.py [--model RUN_DIR] [--quick] [--record] [--json PATH]

Writes runs/bench/speed.json; --record replaces benchmarks/results/speed.json (output.py).

1. CRF kernels against pytorch-crf (benchmarks/crf_kernels.py).
2. Training step of configs/conll03.yaml's network (or --model's): tokens/s of whole steps
   against the encoder's forward+backward alone, same batches.
3. Predict throughput on the text of CoNLL-2003 eng.testb, end to end and in-process, and the
   ratio to the network alone on the same batches: `crftag predict -m en-ner`, which runs the
   bundled NumPy export (or --model's checkpoint on the torch path).
4. Start-up, the commands in turn, medians of 9: `crftag --help` against a one-command Typer
   app (target <= 1.3x); one sentence through the bundled NumPy export (target <= 0.25 s) and
   through the torch checkpoint against `python -c "import torch"` (target <= +1.0 s).
5. Memory: peak RSS of predict on a large input against a 1 MB one.
6. The exported NumPy runtime against the torch path: start-up, throughput and size for torch
   fp32, exported fp32 and exported int8 (benchmarks/runtime_speed.py; bundled en-ner only).

Without --model, the bundled en-ner model is timed; where it is not built, an untrained model of
configs/conll03.yaml's shape stands in (speed does not depend on the weights).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import output  # noqa: E402
import predict_speed  # noqa: E402
import runtime_speed  # noqa: E402
import web_text  # noqa: E402
from crf_kernels import SHAPES, bench_shape, paired_seconds, viterbi_kernel  # noqa: E402

from crftag.config.sections import load_config  # noqa: E402
from crftag.data.batching import encode  # noqa: E402
from crftag.data.conll import (  # noqa: E402
    ColumnSpec,
    open_binary,
    read_columns,
)
from crftag.data.schemes import convert  # noqa: E402
from crftag.inference.loading import load  # noqa: E402
from crftag.modelfiles.checkpoint import LoadedModel, load_model, save_model  # noqa: E402
from crftag.modelfiles.registry import BUNDLED_MODELS  # noqa: E402
from crftag.nn.encoders import use_fast_training  # noqa: E402
from crftag.nn.taggers import build_model  # noqa: E402
from crftag.training.corpus import build_vocabularies, encode_training_set  # noqa: E402
from crftag.training.embeddings import set_trained_rows  # noqa: E402
from crftag.training.optimizers import make_optimizer, set_learning_rate  # noqa: E402
from crftag.training.step import epoch_batches, train_step, training_batch  # noqa: E402

CONLL = os.path.join(ROOT, "..", "shared", "data", "conll2003")
CRFTAG = [sys.executable, "-m", "crftag"]


def read(path):
    with open_binary(path) as stream:
        return list(read_columns(stream, path, ColumnSpec("conll", 0, -1)))


def bundled_checkpoint(directory):
    """The bundled en-ner (one int8 export) written as a torch checkpoint: the start-up and
    memory rows time the torch path with the shipped weights."""
    path = os.path.join(directory, "en-ner.pt")
    save_model(path, load_model("en-ner"))
    return path


def untrained_model(directory):
    """A conll03-shaped model (vocabulary from eng.train, no embedding file) saved to disk."""
    config = load_config(os.path.join(ROOT, "configs", "conll03.yaml"), ["model.embeddings=null"])
    sentences = read(config.data.train)
    sentences = [type(s)(s.tokens, tuple(convert(s.tags, "bioes")), s.line) for s in sentences]
    vocabularies = build_vocabularies(config, sentences, "bioes")
    model = build_model(config, vocabularies, "bioes")
    path = os.path.join(directory, "model.pt")
    save_model(path, LoadedModel(model, vocabularies, config, "iob1", "bioes", {}))
    return path


def training_step(model_path, batches_to_time, fast=False):
    """A whole training step (crftag's own train_step on the batches training makes) against
    the encoder's forward and backward alone; ``fast``: with ``train.fast_encoder``."""
    tagger = load(model_path, "cpu")
    model, vocabularies, config = tagger.model, tagger.vocabularies, tagger.config
    use_fast_training(model, fast)
    sentences = read(os.path.join(CONLL, "eng.train"))
    # Prepared as training prepares it: only the rows of words in eng.train are trained.
    set_trained_rows(
        model, config, torch.cat([encode(s.tokens, vocabularies).words for s in sentences])
    )
    kept = [
        s
        for s in sentences[:2000]
        if all(tag in vocabularies.tags for tag in convert(s.tags, "bioes"))
    ]
    training = encode_training_set([("eng.train", kept)], vocabularies, "iob1", "bioes")
    whole_documents = config.model.document_context
    batches = epoch_batches(training, 10, random.Random(0), whole_documents=whole_documents)
    batches = batches[:batches_to_time]
    no_singletons = torch.zeros(len(vocabularies.words), dtype=torch.bool)

    def make_batch(rows):
        return training_batch(
            training,
            rows,
            document_context=whole_documents,
            singletons=no_singletons,
            word_dropout=0.0,
        )

    # The optimizer training builds, at learning rate 0 so the timed weights do not drift.
    optimizer = make_optimizer(config, model)
    set_learning_rate(optimizer, 0.0)
    model.train()
    parts = {"batch": 0.0, "train_step": 0.0}

    def full_step(rows):
        t0 = time.perf_counter()
        batch = make_batch(rows)
        t1 = time.perf_counter()
        train_step(model, optimizer, batch, config.train)
        t2 = time.perf_counter()
        parts["batch"] += t1 - t0
        parts["train_step"] += t2 - t1

    collated = [make_batch(rows) for rows in batches]

    def encoder_only(batch):
        model.zero_grad(set_to_none=True)
        model.emissions(batch).sum().backward()

    for rows, batch in zip(batches[:5], collated[:5], strict=True):  # warm-up
        full_step(rows)
        encoder_only(batch)
    parts = dict.fromkeys(parts, 0.0)
    # Alternating in blocks of 10 batches, so that the machine's slow spells hit both sides
    # alike; blocks rather than single batches, because alternating batch by batch lets each
    # side evict the other's weights, gradients and momentum from the caches, which real
    # training, one full step after another, does not do.
    full = encoder = 0.0
    for start in range(0, len(batches), 10):
        started = time.perf_counter()
        for rows in batches[start : start + 10]:
            full_step(rows)
        full += time.perf_counter() - started
        started = time.perf_counter()
        for batch in collated[start : start + 10]:
            encoder_only(batch)
        encoder += time.perf_counter() - started
    tokens = sum(int(batch.lengths.sum()) for batch in collated)
    return {
        "batches": len(batches),
        "tokens": tokens,
        "tokens_per_s": tokens / full,
        "encoder_floor_tokens_per_s": tokens / encoder,
        "target_tokens_per_s": 12_000,
        "full_step_s": full,
        "encoder_forward_backward_s": encoder,
        "ratio": full / encoder,
        "target_ratio": 1.25,
        "breakdown_s": parts,
    }


def predict_throughput(model, directory):
    """`crftag predict -m MODEL` on eng.testb's text: end to end, start-up alone, and in-process
    (start-up excluded) against the network alone on the very batches predict makes. MODEL is
    a path (the torch tagger) or a bundled name (its NumPy export, what `crftag predict` runs)."""
    source = os.path.join(directory, "testb.tokens")
    tokens = predict_speed.write_tokens(source)
    count = sum(len(t) for t in tokens)
    command = [*CRFTAG, "predict", "-m", model, "--input-format", "tokens"]

    started = time.perf_counter()
    subprocess.run([*command, source], stdout=subprocess.DEVNULL, check=True)
    end_to_end = time.perf_counter() - started
    started = time.perf_counter()
    subprocess.run(command, input=b"", stdout=subprocess.DEVNULL, check=True)
    start_up = time.perf_counter() - started

    tagger = load(model, "cpu")
    batches = []
    for chunk in range(0, len(tokens), 64):
        batches.extend(batch for _, batch in tagger._batches(tokens[chunk : chunk + 64], 64, None))
    encoder = network_alone(tagger, batches)

    whole_predict = runtime_speed.tagging_run(tagger, source)
    # 5 alternating pairs; the ratio is the median of the per-pair ratios.
    encoder_seconds, in_process, ratio = paired_seconds(encoder, whole_predict, 5)
    return {
        "model": model,
        "tokens": count,
        "sentences": len(tokens),
        "end_to_end_s": end_to_end,
        "end_to_end_tokens_per_s": count / end_to_end,
        "start_up_s": start_up,
        "excluding_start_up_tokens_per_s": count / in_process,
        "encoder_only_s": encoder_seconds,
        "ratio_to_encoder": ratio,  # median of 5 alternating pairs
        "target_ratio": 1.3,
        "target_tokens_per_s": 50_000,
    }


def network_alone(tagger, batches):
    """A function that runs the tagger's network, emission scores only, over the batches: the
    torch model under inference mode, or the NumPy runtime on the threads predict gives it."""
    if hasattr(tagger, "model"):

        def encode_torch():
            with torch.inference_mode():
                for batch in batches:
                    tagger.model.emissions(batch)

        return encode_torch

    def encode_arrays():
        with tagger._running():
            for batch in batches:
                tagger._emissions(batch)

    return encode_arrays


def start_up(model_path, directory):
    bare = os.path.join(directory, "bare.py")
    with open(bare, "w", encoding="utf-8") as handle:
        handle.write(
            "import typer\napp = typer.Typer()\n\n@app.command()\n"
            "def hello(name: str = 'x'):\n    print(name)\n\napp()\n"
        )

    sentence = b"A sentence .\n"
    walls = alternating_medians(
        {
            "help": ([*CRFTAG, "--help"], b""),
            "bare_help": ([sys.executable, bare, "--help"], b""),
            "one_exported": ([*CRFTAG, "predict", "-m", "en-ner"], sentence),
            "one": ([*CRFTAG, "predict", "-m", model_path], sentence),
            "import_torch": ([sys.executable, "-c", "import torch"], b""),
        },
        START_UP_REPEATS,
    )
    crftag_help, bare_help, one = walls["help"], walls["bare_help"], walls["one"]
    torch_import = walls["import_torch"]
    imports_torch = (
        subprocess.run(
            [sys.executable, "-c", "import sys, crftag.cli; print('torch' in sys.modules)"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        == "True"
    )
    # Loading a bundled model and tagging one sentence, in a fresh process after torch is
    # imported: what crftag itself adds to the start-up every PyTorch tool pays.
    load_and_tag = {}
    for name in BUNDLED_MODELS:
        timed = subprocess.run(
            [sys.executable, "-c", LOAD_AND_TAG, name], capture_output=True, text=True, check=True
        )
        load_and_tag[name] = float(timed.stdout)
    return {
        "bundled_load_and_tag_one_sentence_s": load_and_tag,
        "bundled_load_and_tag_target_s": 2.0,
        "help_s": crftag_help,
        "bare_typer_help_s": bare_help,
        "help_ratio": crftag_help / bare_help,
        "help_target_ratio": 1.3,
        "help_imports_torch": imports_torch,
        "one_sentence_exported_s": walls["one_exported"],
        "one_sentence_exported_target_s": 0.25,
        "one_sentence_s": one,
        "import_torch_s": torch_import,
        "one_sentence_over_import_torch_s": one - torch_import,
        "one_sentence_target_s": 1.0,
    }


START_UP_REPEATS = 9


def alternating_medians(commands: dict, repeats: int) -> dict[str, float]:
    """Median wall seconds of each ``name: (command, stdin)``, the commands run in turn
    ``repeats`` times (after one run each not counted), so that the machine's slow spells fall
    on all of them alike."""
    walls: dict[str, list[float]] = {name: [] for name in commands}
    # As after an install: the uncounted first run leaves the bytecode the later ones load,
    # even where the benchmark's own environment says not to write it.
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for repeat in range(repeats + 1):
        for name, (command, stdin) in commands.items():
            started = time.perf_counter()
            subprocess.run(command, input=stdin, capture_output=True, check=True, env=environment)
            if repeat:
                walls[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in walls.items()}


LOAD_AND_TAG = (
    "import sys, time\nimport torch\nstarted = time.perf_counter()\n"
    "import crftag\n"
    "crftag.load(sys.argv[1], 'cpu').tag([['A', 'sentence', '.']])\n"
    "print(time.perf_counter() - started)\n"
)

PEAK = (
    "import resource, sys\nfrom crftag import cli\nstatus = cli.run(sys.argv[1:])\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(status)\n"
)


def memory(model_path, directory, large_mb):
    line = "Maria Lindqvist said the Scottish Parliament met in Kirkwall on Tuesday .\n"
    results = {}
    for megabytes in (1, large_mb):
        path = os.path.join(directory, f"input{megabytes}")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(line * (megabytes * 1_000_000 // len(line)))
        with open(path, "rb") as stdin:
            done = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    PEAK,
                    "predict",
                    "-m",
                    model_path,
                    "--input-format",
                    "tokens",
                ],
                stdin=stdin,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                check=True,
            )
        results[f"peak_rss_kb_{megabytes}mb"] = int(done.stderr.strip().splitlines()[-1])
    results["ratio"] = results[f"peak_rss_kb_{large_mb}mb"] / results["peak_rss_kb_1mb"]
    results["target_ratio"] = 1.2
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a trained run directory or model.pt")
    parser.add_argument("--quick", action="store_true", help="fewer repeats, a smaller input")
    parser.add_argument("--large-mb", type=int, default=20)
    parser.add_argument("--json", help="write here instead (default: see --record)")
    output.add_record_option(parser)
    args = parser.parse_args()
    args.json = args.json or output.result_path("speed.json", args.record)
    torch.set_num_threads(2)
    report = {
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "torch": torch.__version__,
            "python": platform.python_version(),
            "viterbi_kernel": viterbi_kernel(),
        }
    }
    with tempfile.TemporaryDirectory() as directory:
        model = args.model or bundled_checkpoint(directory)
        print("CRF kernels ...", file=sys.stderr)
        report["crf_kernels"] = [bench_shape(*shape, 5 if args.quick else 20) for shape in SHAPES]
        print("training step ...", file=sys.stderr)
        # The shipped recipe's network (configs/conll03.yaml: 50 character units, 100 word
        # units); the bundled en-ner is a larger one (25 and 200).
        recipe = args.model or untrained_model(directory)
        for key, fast in (("training_step", False), ("training_step_fast", True)):
            report[key] = training_step(recipe, 20 if args.quick else 100, fast)
            report[key]["network"] = args.model or "configs/conll03.yaml"
            report[key]["fast_encoder"] = fast
        print("web text against news ...", file=sys.stderr)
        report["web_text"] = web_text.measure(model, 20 if args.quick else 100)
        print("predict throughput ...", file=sys.stderr)
        # What `crftag predict` runs: the bundled name's NumPy export, or --model's checkpoint.
        report["predict"] = predict_throughput(args.model or "en-ner", directory)
        print("start-up ...", file=sys.stderr)
        report["start_up"] = start_up(model, directory)
        print("memory ...", file=sys.stderr)
        report["memory"] = memory(model, directory, 5 if args.quick else args.large_mb)
        if not args.model:
            print("exported runtime ...", file=sys.stderr)
            report["exported_runtime"] = runtime_speed.measure()
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2)
        handle.write("\n")
    print_table(report)


def print_table(report):
    rows = []
    for result in report["crf_kernels"]:
        shape = result["shape"]
        name = f"B={shape['batch']} T<={shape['lengths'][1]} K={shape['tags']}"
        nll, decode = result["nll_forward_backward"], result["viterbi_decode"]
        rows.append(
            (
                f"CRF NLL f+b, {name}",
                f"{nll['crftag_s'] * 1e3:.2f} ms",
                f"pytorch-crf {nll['pytorch_crf_s'] * 1e3:.2f} ms",
                f"{nll['speedup']:.2f}x faster (target 3x)",
            )
        )
        rows.append(
            (
                f"CRF Viterbi, {name}",
                f"{decode['crftag_s'] * 1e3:.2f} ms",
                f"pytorch-crf {decode['pytorch_crf_s'] * 1e3:.2f} ms",
                f"{decode['speedup']:.2f}x faster (target 5x)",
            )
        )
        rows.append(
            (
                f"CRF marginals, {name}",
                f"{result['marginals_s'] * 1e3:.2f} ms",
                f"own NLL f+b {result['marginals_nll_s'] * 1e3:.2f} ms",
                f"{result['marginals_over_nll']:.2f}x (target <= 1)",
            )
        )
        grad = result.get("decode_requires_grad")
        if grad is not None:
            rows.append(
                (
                    f"CRF decode, emissions requiring grad, {name}",
                    f"{grad['requires_grad_s'] * 1e3:.2f} ms",
                    f"detached {grad['detached_s'] * 1e3:.2f} ms",
                    f"{grad['ratio']:.2f}x (target <= 1.5)",
                )
            )
    step = report["training_step"]
    for key, label in (("training_step", ""), ("training_step_fast", ", fast_encoder")):
        if "tokens_per_s" in report.get(key, {}):
            rows.append(
                (
                    f"training, CoNLL-2003 batches of 10 (whole steps{label})",
                    f"{report[key]['tokens_per_s']:.0f} tok/s",
                    f"encoder f+b alone {report[key]['encoder_floor_tokens_per_s']:.0f} tok/s",
                    "target >= 12,000 tok/s",
                )
            )
    rows.append(
        (
            "training step",
            f"{step['full_step_s']:.2f} s / {step['batches']} batches",
            f"encoder f+b {step['encoder_forward_backward_s']:.2f} s",
            f"{step['ratio']:.2f}x (target <= 1.25)",
        )
    )
    web = report.get("web_text")
    for name in ("training", "tagging") if web else ():
        rows.append(
            (
                f"{name}, EWT web genres against eng.train, per token",
                f"{web[name]['web_tokens_per_s']:.0f} tok/s",
                f"news {web[name]['news_tokens_per_s']:.0f} tok/s",
                f"{web[name]['web_over_news_per_token']:.2f}x the time (target <= 1.3)",
            )
        )
    predict = report["predict"]
    rows.append(
        (
            "predict eng.testb, end to end",
            f"{predict['end_to_end_tokens_per_s']:.0f} tok/s",
            f"{predict['tokens']} tokens",
            f"start-up {predict['start_up_s']:.2f} s",
        )
    )
    rows.append(
        (
            f"predict -m {predict['model']}, excluding start-up",
            f"{predict['excluding_start_up_tokens_per_s']:.0f} tok/s (target >= 50,000)",
            f"network alone {predict['encoder_only_s']:.2f} s",
            f"{predict['ratio_to_encoder']:.2f}x (target <= 1.3)",
        )
    )
    start = report["start_up"]
    rows.append(
        (
            "crftag --help",
            f"{start['help_s']:.2f} s",
            f"bare Typer app {start['bare_typer_help_s']:.2f} s",
            f"{start['help_ratio']:.2f}x (target <= 1.5); imports torch: "
            f"{start['help_imports_torch']}",
        )
    )
    rows.append(
        (
            "one sentence through predict",
            f"{start['one_sentence_s']:.2f} s",
            f"import torch {start['import_torch_s']:.2f} s",
            f"+{start['one_sentence_over_import_torch_s']:.2f} s (target <= +1.0 s)",
        )
    )
    for name, seconds in start["bundled_load_and_tag_one_sentence_s"].items():
        rows.append(
            (
                f"load {name} and tag one sentence (after import torch)",
                f"{seconds:.2f} s",
                "",
                "target < 2 s",
            )
        )
    mem = report["memory"]
    large = [k for k in mem if k.startswith("peak_rss_kb_") and k != "peak_rss_kb_1mb"][0]
    rows.append(
        (
            f"predict peak RSS, {large[12:]}",
            f"{mem[large] / 1024:.0f} MB",
            f"1 MB input {mem['peak_rss_kb_1mb'] / 1024:.0f} MB",
            f"{mem['ratio']:.2f}x (target <= 1.2)",
        )
    )
    if "exported_runtime" in report:
        rows.extend(runtime_speed.rows(report["exported_runtime"]))
    width = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(width[i]) for i, cell in enumerate(row)))


if __name__ == "__main__":
    main()
