"""The GPU section of benchmarks/RESULTS.md, from benchmarks/results/gpu.json
(benchmarks/gpu.py): the CUDA tests, the GPU recipe's training and tagging (``make bench-gpu``),
the encoder and distillation (benchmarks/gpu_encoder.py), and the CRF's loop against scan
(``--crf``); the ``train`` and ``predict`` sections of a file as the script wrote them at
b533331, where present."""

from __future__ import annotations


def _speed_up(slow: float, fast: float) -> str:
    return f"{slow / fast:.1f}x"


def _crf_row(case: dict) -> str:
    return (
        f"| {case['num_tags']} | {case['batch_size']} | {case['length']} "
        f"| {case['loop_log_z_s'] * 1e3:.2f} | {case['scan_log_z_s'] * 1e3:.2f} "
        f"| {_speed_up(case['loop_log_z_s'], case['scan_log_z_s'])} "
        f"| {case['loop_viterbi_s'] * 1e3:.2f} | {case['scan_viterbi_s'] * 1e3:.2f} "
        f"| {_speed_up(case['loop_viterbi_s'], case['scan_viterbi_s'])} "
        f"| {case['equal_paths']:.2f} | {case['loop_path_shortfall']:.1e} "
        f"| {case['scan_path_shortfall']:.1e} |"
    )


def _training_row(run: dict) -> str:
    return (
        f"| {run['name']} | {run['device']} | {run['tokens_per_s']:,.0f} "
        f"| {run['sentences_per_s']:,.0f} | {run['dev_after_one_epoch'] * 100:.2f} |"
    )


def _predict_row(run: dict) -> str:
    return (
        f"| {run['device']} | {run['batch_size']} | {run['tokens_per_s']:,.0f} "
        f"| {run['sentences_per_s']:,.0f} |"
    )


def _tagging_row(run: dict) -> str:
    return (
        f"| `{run['path']}` | {run['device']} | {run['batch_size']} | {run['sentences']:,} "
        f"| {run['tokens_per_s']:,.0f} |"
    )


# Each list section of gpu.json: its caption, header, alignment row and row renderer.
TABLES = {
    "tagging": (
        "The trained model on the test file's sentences in-process, start-up excluded: `tag` "
        "(tags only) and `predict_files` (read tokens, tag, write CoNLL):",
        "| path | device | batch | sentences | tokens/s |",
        "|---|---|---:|---:|---:|",
        _tagging_row,
    ),
    "crf": (
        "CRF on the GPU, median ms of a call: log Z forward and backward, and Viterbi; the "
        "sequential loop against the parallel scan. A path's shortfall is how far its float64 "
        "score falls below the float64 Viterbi's best (0: an exact argmax).",
        "| K | B | T | log Z loop | log Z scan | scan speed-up | Viterbi loop | Viterbi scan "
        "| scan speed-up | equal paths | loop path shortfall | scan path shortfall |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        _crf_row,
    ),
    "train": (
        "One epoch of `crftag train configs/conll03.yaml --seed 1` on each device (CPU: 2 "
        "threads on 2 of the machine's cores), from the epoch log:",
        "| run | device | tokens/s | sentences/s | dev F1 after the epoch |",
        "|---|---|---:|---:|---:|",
        _training_row,
    ),
    "predict": (
        "`predict_files` on eng.testb's tokens (read, tag, write CoNLL), start-up excluded, "
        "with the model of the cuda-fp32 run:",
        "| device | batch | tokens/s | sentences/s |",
        "|---|---:|---:|---:|",
        _predict_row,
    ),
}


def _recipe_table(recipe: dict) -> str:
    """The training run of ``make bench-gpu``: its scores, then every epoch's speed."""
    stopped = "" if recipe["finished"] else " Stopped by the time limit."
    scores = ""
    if recipe["test"] is not None:
        scores = (
            f" Best dev F1 {100 * recipe['dev']:.2f} (epoch {recipe['best_epoch']}), "
            f"test F1 {100 * recipe['test']:.2f}."
        )
    lines = [
        f"`{recipe['command']}` on {recipe['device']}: {len(recipe['epochs'])} epochs in "
        f"{recipe['wall_s']:.0f} s wall.{scores}{stopped}",
        "",
        "| epoch | tokens/s | seconds | dev F1 |",
        "|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {epoch['epoch']} | {epoch['tokens_per_s']:,.0f} | {epoch['seconds']:.1f} "
        f"| {100 * epoch['dev']:.2f} |"
        for epoch in recipe["epochs"]
    ]
    return "\n".join(lines) + "\n"


def _cuda_tests_line(tests: dict) -> str:
    return (
        f"`{tests['command']}`: {tests['passed']} passed, {tests['skipped']} skipped, "
        f"{tests['failures']} failed, {tests['errors']} errors (exit status "
        f"{tests['exit_status']}).\n"
    )


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _part_row(what: str, part: dict, unit: str, target: str) -> str:
    done = "all" if part["complete"] else "stopped by the time limit"
    return (
        f"| {what} | {part['sentences']:,} of {part['of_sentences']:,} ({done}) "
        f"| {_rate(part[f'{unit}_per_s'])} {unit}/s | {target} |"
    )


def _encoder_table(section: dict) -> str:
    """The encoder section: what each part measured, beside the targets (docs/gpu.md)."""
    if "extraction" not in section:
        why = section.get("error") or section.get("skipped")
        return f"The encoder section on {section['device']}: {why}.\n"
    finetune = section["finetune"]
    projected = finetune["projected_btc_epoch_s"]
    lines = [
        f"The encoder on {section['device']}: {section['encoder']} ({section['weights']}), "
        f"the mean of its last {section['layers']} layers, under `{section['config']}`'s tagger; "
        f"{section['seconds']:.0f} s allowed, {section['wall_s']:.0f} s taken.",
        "",
        "| part | sentences | rate | target |",
        "|---|---|---:|---|",
        _part_row(
            "frozen extraction (training sentences)", section["extraction"], "words", ">= 20,000"
        ),
        f"| fine-tuning, {finetune['steps']} of {finetune['of_steps']} steps "
        f"({finetune['sentences_per_step'] or 0:.1f} sentences a step) "
        f"| {finetune['tokens']:,} tokens | {_rate(finetune['tokens_per_s'])} tokens/s "
        f"| a BTC-sized epoch < 60 s: projected {_rate(projected)} s |",
        *(
            _part_row(f"tagging, batch {row['batch_size']}", row, "tokens", "")
            for row in section["tagging"]
        ),
        _part_row(
            f"labelling: {section['labelling']['what']}", section["labelling"], "words", ">= 20,000"
        ),
    ]
    return "\n".join(lines) + "\n"


def gpu_tables(report: dict) -> str:
    parts = []
    if "cuda_tests" in report:
        parts.append(_cuda_tests_line(report["cuda_tests"]))
    if "recipe" in report:
        parts.append(_recipe_table(report["recipe"]))
    if "encoder" in report:
        parts.append(_encoder_table(report["encoder"]))
    for key, (caption, columns, alignment, row) in TABLES.items():
        if key in report:
            lines = [caption, "", columns, alignment, *(row(item) for item in report[key])]
            parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)
