"""What a GPU does for crftag, in one command: `make bench-gpu` (at most 10 minutes on an H100).

    python benchmarks/gpu.py [--device cuda|cpu] [--config CONFIG] [--set KEY=VALUE ...]
        [--time-limit SECONDS] [--crf] [--record | --json PATH]
        [--encoder-seconds S] [--encoder FOLDER] [--encoder-config CONFIG] [--encoder-sentences N]

1. The machine: the device, torch, CUDA and cuDNN versions, the driver, the CPU cores.
2. The CUDA tests, `pytest -m cuda tests/cuda` (CRF against the CPU, a training step, predict),
   in a subprocess; counts from its JUnit report (all skipped on a CPU).
3. Training: `crftag train CONFIG --seed 1 --device DEVICE` to the end (configs/conll03_gpu.yaml
   by default), in a subprocess; the tokens/s of every epoch from metrics.json, the final dev
   and test F1, the wall time. A run still going when the time limit leaves only the tagging's
   share is stopped by SIGTERM (resumable), and said so (``finished: false``).
4. Tagging: the config's test file (eng.testb) with the trained model, in-process, a warm-up
   pass and then timed passes: ``Tagger.tag`` (tags only) at batch 1 and 1024 sentences, and
   ``predict_files`` (read tokens, tag, write CoNLL) at 1024.
5. The encoder and distillation (benchmarks/gpu_encoder.py), within ``--encoder-seconds``:
   all-MiniLM-L6-v2's frozen extraction of the training sentences, a few hundred fine-tuning
   steps (configs/conll03.yaml, the BTC rows' recipe, with the encoder trained), that tagger's
   tagging at batch 1 and 1024, and its labelling rate as a distillation teacher.
6. With ``--crf``, the CRF's sequential loop against the parallel scan (crftag/crf/scan.py) at
   T = 4 to 5,000 (a few minutes more; the figures in docs/gpu.md's scan table).

``make bench-gpu DEVICE=cpu`` runs the same path on the CPU on configs/sample.yaml for 2 epochs,
the encoder section with the tests' tiny random BERT (a minute or two). Writes
runs/bench/gpu.json, section by section as each ends (benchmarks/results/gpu.json with --record:
benchmarks/output.py); run directories go to runs/bench/gpu/.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchmarks import gpu_encoder, output  # noqa: E402
from crftag.config import load_config  # noqa: E402
from crftag.crf import kernels, scan  # noqa: E402
from crftag.crf.posteriors import path_scores_arrays  # noqa: E402
from crftag.crf.viterbi import viterbi, viterbi_torch  # noqa: E402

GPU_CONFIG = os.path.join(ROOT, "configs", "conll03_gpu.yaml")
RUNS = os.path.join(output.SCRATCH, "gpu")
LENGTHS = (4, 8, 16, 32, 50, 100, 200, 500, 1000, 5000)
TAG_BATCHES = (1, 1024)
# Seconds kept back from training for the tagging section, when a time limit is set.
TAGGING_RESERVE_S = 60
# The encoder section's own limit (its set-up, reading GloVe and the corpus, included).
ENCODER_S = 120


def timed(function, device, seconds=0.5, at_least=5, at_most=200):
    """Median seconds of one call, after two untimed calls, synchronising the device."""
    for _ in range(2):
        function()
    times = []
    started = time.perf_counter()
    while len(times) < at_least or time.perf_counter() - started < seconds:
        _synchronize(device)
        begin = time.perf_counter()
        function()
        _synchronize(device)
        times.append(time.perf_counter() - begin)
        if len(times) >= at_most:
            break
    return statistics.median(times)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# 1. The machine.


def machine(device: torch.device) -> dict:
    """What the figures were measured on."""
    report = {
        "device": str(device),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpu_cores": os.cpu_count(),
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "compiled_kernels": kernels.compiled_kernels_available(),
    }
    if device.type == "cuda":
        report["gpu"] = torch.cuda.get_device_name(device)
        report["driver"] = _driver_version()
    return report


def _driver_version() -> str | None:
    """The NVIDIA driver's version, as nvidia-smi reports it (None without nvidia-smi)."""
    try:
        answer = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return answer.stdout.strip().splitlines()[0] if answer.returncode == 0 else None


# 2. The CUDA tests.


def cuda_tests(scratch: str) -> dict:
    """`pytest -m cuda tests/cuda` in a subprocess: its exit status and the counts of its JUnit
    report. Exit status 0 with everything skipped is what a CPU gives."""
    report_path = os.path.join(scratch, "cuda-tests.xml")
    command = [sys.executable, "-m", "pytest", "-q", "-m", "cuda", "-rs", "tests/cuda"]
    started = time.perf_counter()
    result = subprocess.run([*command, "--junitxml", report_path], cwd=ROOT)
    suite = ElementTree.parse(report_path).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    counts = {key: int(suite.get(key, 0)) for key in ("tests", "failures", "errors", "skipped")}
    return {
        "command": " ".join(["python", *command[1:]]),
        "exit_status": result.returncode,
        "passed": counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"],
        **{key: counts[key] for key in ("failures", "errors", "skipped")},
        "seconds": time.perf_counter() - started,
    }


# 3. Training.


def train_recipe(
    config_path: str, device: str, overrides: list[str], run_dir: str, seconds: float | None
) -> dict:
    """`crftag train` to the end (or to ``seconds``, then SIGTERM); its epochs and scores."""
    command = [sys.executable, "-m", "crftag", "train", config_path, "--seed", "1", "-q"]
    command += ["--device", device, "-o", run_dir, "--overwrite"]
    for override in overrides:
        command += ["--set", override]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL)
    finished = True
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        finished = False
        process.send_signal(signal.SIGTERM)  # stops after the batch under way, resumable
        process.wait()
    wall = time.perf_counter() - started
    if finished and process.returncode != 0:
        raise SystemExit(f"benchmarks/gpu.py: {' '.join(command)} failed ({process.returncode})")
    metrics = _run_metrics(run_dir)
    epochs = [
        {
            "epoch": epoch["epoch"],
            "tokens_per_s": epoch["tokens_per_second"],
            "seconds": epoch["seconds"],
            "dev": epoch["dev_score"],
        }
        for epoch in metrics["history"]
    ]
    return {
        "command": " ".join(["crftag", *(_relative(part) for part in command[3:])]),
        "finished": finished,
        "device": metrics.get("device", device),
        "epochs": epochs,
        "best_epoch": metrics.get("best_epoch"),
        "dev": metrics.get("dev"),
        "test": metrics.get("test"),
        "train_seconds": metrics.get("train_seconds"),
        "tokens_per_s": metrics.get("tokens_per_second"),
        "median_epoch_tokens_per_s": statistics.median(e["tokens_per_s"] for e in epochs)
        if epochs
        else None,
        "wall_s": wall,
    }


def _relative(part: str) -> str:
    """A path inside the repository as the repository's root sees it; anything else as is."""
    if os.path.isabs(part) and part.startswith(ROOT + os.sep):
        return os.path.relpath(part, ROOT)
    return part


def _run_metrics(run_dir: str) -> dict:
    """metrics.json of a finished run, or the history of a stopped one (resume.pt; none when
    stopped before its first batch)."""
    path = os.path.join(run_dir, "metrics.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    resume_path = os.path.join(run_dir, "resume.pt")
    if not os.path.exists(resume_path):
        return {"history": []}
    resume = torch.load(resume_path, weights_only=False)
    return {"history": resume["run_state"]["history"]}


# 4. Tagging.


def tagging(
    model_dir: str,
    test_path: str,
    device: torch.device,
    scratch: str,
    sentence_count: int | None = None,
) -> list[dict]:
    """Tokens/s of the trained model on the test file's sentences (the first
    ``sentence_count``, or all), each its own document: each case warmed up on 64 sentences,
    then timed once at batch 1 and as the median of three passes at larger batches."""
    from crftag.data.conll import ColumnSpec, read_corpus
    from crftag.inference.loading import load
    from crftag.inference.streaming import predict_files

    sentences = [list(s.tokens) for s in read_corpus(test_path, ColumnSpec())][:sentence_count]
    tokens = sum(len(sentence) for sentence in sentences)
    source = os.path.join(scratch, "test.tokens")
    with open(source, "w", encoding="utf-8") as handle:
        handle.writelines(" ".join(sentence) + "\n" for sentence in sentences)
    tagger = load(model_dir, str(device))

    def predict(batch_size):
        with open(os.devnull, "w", encoding="utf-8") as sink:
            predict_files(
                tagger,
                [source],
                input_format="tokens",
                output_format="conll",
                batch_size=batch_size,
                output=sink,
            )

    cases = [("tag", size) for size in TAG_BATCHES] + [("predict_files", TAG_BATCHES[-1])]
    rows = []
    for path, batch_size in cases:
        tagger.tag(sentences[:64], batch_size=batch_size)  # warm-up: kernels, caches, allocator
        passes = []
        for _ in range(1 if batch_size == 1 else 3):
            _synchronize(device)
            begin = time.perf_counter()
            if path == "tag":
                tagger.tag(sentences, batch_size=batch_size)
            else:
                predict(batch_size)
            _synchronize(device)
            passes.append(time.perf_counter() - begin)
        seconds = statistics.median(passes)
        rows.append(
            {
                "path": path,
                "device": str(device),
                "batch_size": batch_size,
                "sentences": len(sentences),
                "tokens": tokens,
                "seconds": seconds,
                "tokens_per_s": tokens / seconds,
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


# 5. The CRF: loop against scan.


def crf_case(batch_size, length, num_tags, device):
    """Loop against scan for one shape: seconds and agreement."""
    generator = torch.Generator().manual_seed(length)
    emissions = (3 * torch.randn(batch_size, length, num_tags, generator=generator)).to(device)
    lengths = torch.randint(length // 2, length + 1, (batch_size,), generator=generator)
    lengths[0] = length
    mask = (torch.arange(length).unsqueeze(0) < lengths.unsqueeze(1)).to(device)
    potentials = [
        torch.randn(*shape, generator=generator).to(device)
        for shape in ((num_tags, num_tags), (num_tags,), (num_tags,))
    ]
    leaf = emissions.clone().requires_grad_()
    params = [p.clone().requires_grad_() for p in potentials]

    def loop_nll():
        kernels._LogPartition.apply(leaf, mask, *params).sum().backward()

    def scan_nll():
        scan.log_partition(leaf, mask, *params).sum().backward()

    with torch.no_grad():
        loop_log_z = kernels._LogPartition.apply(emissions, mask, *potentials)
        scan_log_z = scan.log_partition(emissions, mask, *potentials)
        loop_tags, _ = viterbi_torch(emissions, mask, *potentials)
    scan_tags, _ = scan.viterbi(emissions, mask, *potentials)
    return {
        "batch_size": batch_size,
        "length": length,
        "num_tags": num_tags,
        "loop_log_z_s": timed(loop_nll, device),
        "scan_log_z_s": timed(scan_nll, device),
        "loop_viterbi_s": timed(lambda: viterbi_torch(emissions, mask, *potentials), device),
        "scan_viterbi_s": timed(lambda: scan.viterbi(emissions, mask, *potentials), device),
        "log_z_max_relative_difference": float(
            ((scan_log_z - loop_log_z).abs() / loop_log_z.abs()).max()
        ),
        "equal_paths": float((scan_tags == loop_tags).all(1).float().mean()),
        **optimality_gaps(emissions, mask, potentials, loop=loop_tags, scan=scan_tags),
    }


def optimality_gaps(emissions, mask, potentials, **paths):
    """For each method's float32 paths, the largest amount by which its float64 score falls short
    of the float64 Viterbi's best, beside float32's rounding at the largest score: a path that
    differs from another method's but falls short by less than the rounding is as optimal."""
    as_float64 = [tensor.detach().double().cpu() for tensor in (emissions, *potentials)]
    lengths = mask.sum(1).cpu().numpy()
    _, best = viterbi(as_float64[0], mask.cpu(), *as_float64[1:])
    arrays = [tensor.numpy() for tensor in as_float64]
    gaps = {}
    for name, tags in paths.items():
        chosen = path_scores_arrays(arrays[0], lengths, *arrays[1:], tags.cpu().numpy()[:, None])
        gaps[f"{name}_path_shortfall"] = float((best.numpy() - chosen[:, 0]).max())
    gaps["float32_rounding_at_best"] = float(best.abs().max()) * torch.finfo(torch.float32).eps
    return gaps


def crf_section(device):
    cases = []
    for num_tags in (9, 17):
        for batch_size in (1, 32):
            for length in LENGTHS:
                case = crf_case(batch_size, length, num_tags, device)
                print(json.dumps(case), file=sys.stderr, flush=True)
                cases.append(case)
    return cases


# 6. The encoder section.


def encoder_report(encoder: dict, overrides: list[str], device, seconds: float) -> dict:
    """benchmarks/gpu_encoder.py's section in ``seconds``; a failure, or too little time left,
    is recorded in the report instead of ending the run, so the sections after it still run."""
    if seconds < 20:
        return {"device": str(device), "skipped": f"{seconds:.0f} s left of the time limit"}
    try:
        return gpu_encoder.encoder_section(
            encoder["config"],
            overrides,
            device,
            os.path.join(RUNS, "encoder"),
            seconds,
            folder=encoder.get("folder"),
            limit=encoder.get("sentences"),
        )
    except Exception as error:  # one run on a lent device: keep what the others measured
        import traceback

        traceback.print_exc()
        return {"device": str(device), "error": f"{type(error).__name__}: {error}"}


# The command.


def test_file(config_path: str, overrides: list[str]) -> str:
    """The config's test file, as training resolves it (relative to the config's folder)."""
    config = load_config(config_path, overrides)
    path = config.data.test
    if not path:
        raise SystemExit(f"benchmarks/gpu.py: {config_path} names no data.test to tag")
    return path


def run_benchmark(
    device: torch.device,
    config_path: str,
    overrides: list[str],
    json_path: str,
    *,
    time_limit: float | None = None,
    with_crf: bool = False,
    with_tests: bool = True,
    tag_sentences: int | None = None,
    encoder: dict | None = None,
) -> dict:
    """Every section in order, the report written after each; returns the report.
    ``encoder``: the encoder section's ``config``, ``seconds`` and, optionally, ``folder``
    and ``sentences`` (:func:`encoder_report`); None leaves the section out."""
    started = time.perf_counter()
    os.makedirs(RUNS, exist_ok=True)
    report = {"date": time.strftime("%Y-%m-%d"), "commit": _commit()}
    report["machine"] = machine(device)
    print(json.dumps(report["machine"]), file=sys.stderr, flush=True)
    _write(report, json_path)
    if with_tests:
        report["cuda_tests"] = cuda_tests(RUNS)
        _write(report, json_path)
    run_dir = os.path.join(RUNS, "recipe")
    budget = None
    if time_limit is not None:
        reserve = TAGGING_RESERVE_S + (encoder["seconds"] if encoder else 0)
        budget = max(0.0, time_limit - (time.perf_counter() - started) - reserve)
    report["recipe"] = train_recipe(config_path, device.type, overrides, run_dir, budget)
    print(json.dumps(report["recipe"]), file=sys.stderr, flush=True)
    _write(report, json_path)
    if os.path.exists(os.path.join(run_dir, "model.pt")):
        test_path = test_file(config_path, overrides)
        report["tagging"] = tagging(run_dir, test_path, device, RUNS, tag_sentences)
        _write(report, json_path)
    if encoder:
        seconds = encoder["seconds"]
        if time_limit is not None:
            seconds = min(seconds, time_limit - (time.perf_counter() - started))
        report["encoder"] = encoder_report(encoder, overrides, device, seconds)
        _write(report, json_path)
    if with_crf:
        report["crf"] = crf_section(device)
        _write(report, json_path)
    report["wall_s"] = time.perf_counter() - started
    _write(report, json_path)
    return report


def _commit() -> str | None:
    answer = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    return answer.stdout.strip() or None


def _write(report: dict, path: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2)
        handle.write("\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda (the default) or cpu")
    parser.add_argument("--config", default=GPU_CONFIG)
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], help="KEY=VALUE for crftag train"
    )
    parser.add_argument("--time-limit", type=float, default=None, help="seconds for all of it")
    parser.add_argument("--crf", action="store_true", help="also the CRF's loop against scan")
    parser.add_argument("--tag-sentences", type=int, help="tag only the test file's first N")
    parser.add_argument(
        "--encoder-seconds",
        type=float,
        default=ENCODER_S,
        help="the encoder section's limit (0: none)",
    )
    parser.add_argument(
        "--encoder", help="its encoder folder (default: all-MiniLM-L6-v2; on a CPU a tiny BERT)"
    )
    parser.add_argument("--encoder-config", help="its corpus and tagger (default: conll03.yaml)")
    parser.add_argument("--encoder-sentences", type=int, help="its corpora's first N sentences")
    parser.add_argument("--json", help="write here instead (default: see --record)")
    output.add_record_option(parser)
    arguments = parser.parse_args()
    device = torch.device(arguments.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("benchmarks/gpu.py: no CUDA device here; DEVICE=cpu runs the CPU path")
    json_path = arguments.json or output.result_path("gpu.json", arguments.record)
    encoder = None
    if arguments.encoder_seconds > 0:
        encoder = {
            "config": arguments.encoder_config or gpu_encoder.FINETUNE_CONFIG,
            "seconds": arguments.encoder_seconds,
            "folder": arguments.encoder,
            "sentences": arguments.encoder_sentences,
        }
    report = run_benchmark(
        device,
        arguments.config,
        arguments.overrides,
        json_path,
        time_limit=arguments.time_limit,
        with_crf=arguments.crf,
        tag_sentences=arguments.tag_sentences,
        encoder=encoder,
    )
    print(summary(report))
    print(f"written: {json_path}", file=sys.stderr)


def summary(report: dict) -> str:
    """The figures the targets are about, a line each."""
    recipe, lines = report["recipe"], []
    lines.append(f"device: {report['machine'].get('gpu', report['machine']['device'])}")
    if "cuda_tests" in report:
        tests = report["cuda_tests"]
        lines.append(
            f"cuda tests: {tests['passed']} passed, {tests['skipped']} skipped, "
            f"{tests['failures'] + tests['errors']} failed"
        )
    lines.append(
        f"training: {len(recipe['epochs'])} epochs in {recipe['wall_s']:.0f} s"
        f"{'' if recipe['finished'] else ' (stopped by the time limit)'}, median "
        f"{recipe['median_epoch_tokens_per_s'] or 0:,.0f} tokens/s an epoch"
    )
    if recipe["test"] is not None:
        lines.append(f"dev F1 {100 * recipe['dev']:.2f}, test F1 {100 * recipe['test']:.2f}")
    for row in report.get("tagging", []):
        lines.append(
            f"{row['path']} batch {row['batch_size']}: {row['tokens_per_s']:,.0f} tokens/s"
        )
    if "encoder" in report:
        lines += gpu_encoder.summary(report["encoder"])
    return "\n".join(lines)


if __name__ == "__main__":
    main()
