"""The analyses of ``crftag eval`` as tables for people: the entity-type confusion table (or a
tagging model's most frequent tag confusions) and the SemEval-2013 span scores, as (title,
headers, rows, note) for :func:`crftag.scoring.tables.print_table`."""

from __future__ import annotations

__all__ = ["TOP_TAG_CONFUSIONS", "analysis_tables"]

TOP_TAG_CONFUSIONS = 20  # rows of a part-of-speech model's confusion table; --json has all


def analysis_tables(path: str, scores: dict) -> list[tuple[str, list[str], list[list], str]]:
    """The tables of ``confusion``, ``perturbed`` and ``match`` in ``scores``: (title, headers,
    rows, note)."""
    tables = []
    result = scores.get("confusion")
    if result and "pairs" in result:
        tables.append(_span_confusion_table(path, result))
    elif result:
        shown = result["confusions"][:TOP_TAG_CONFUSIONS]
        title = (
            f"{path}: the {len(shown)} most frequent tag confusions "
            f"({result['mistagged']} of {result['tokens']} tokens mistagged)"
        )
        rows = [
            [row["gold"], row["predicted"], str(row["count"]), _share(row["count"], result)]
            for row in shown
        ]
        tables.append((title, ["gold", "predicted", "count", "% of errors"], rows, ""))
    if "perturbed" in scores:
        from crftag.scoring.robustness import perturbed_table

        tables.append((*perturbed_table(path, scores), ""))
    result = scores.get("match")
    if result:
        title = f"{path}: SemEval-2013 {result['mode']} match"
        rows = [
            _match_row(label, counts)
            for label, counts in [*result["types"].items(), ("overall", result["overall"])]
        ]
        tables.append((title, MATCH_HEADERS, rows, ""))
    return tables


MATCH_COUNTS = ("correct", "incorrect", "partial", "missed", "spurious")
MATCH_HEADERS = ["type", *MATCH_COUNTS, "precision", "recall", "f1"]


def _match_row(label: str, counts: dict) -> list[str]:
    figures = [f"{100 * counts[key]:.2f}" for key in ("precision", "recall", "f1")]
    return [label, *(str(counts[key]) for key in MATCH_COUNTS), *figures]


def _share(count: int, result: dict) -> str:
    return f"{100 * count / result['mistagged']:.2f}"


def _span_confusion_table(path: str, result: dict) -> tuple[str, list[str], list[list], str]:
    """Gold types in rows, predicted types in columns (the diagonal: exactly right), then the
    gold spans missed, those found with the right type but another extent (boundary), and the
    row's total; a last row of spurious spans per predicted type."""
    labels = result["labels"]
    headers = ["gold \\ predicted", *labels, "missed", "boundary", "total"]
    rows = []
    for gold in labels:
        cells = [result["pairs"].get(gold, {}).get(predicted, 0) for predicted in labels]
        cells += [result["missed"].get(gold, 0), result["boundary"].get(gold, 0)]
        rows.append([gold, *map(str, [*cells, sum(cells)])])
    spurious = [result["spurious"].get(predicted, 0) for predicted in labels]
    rows.append(["spurious", *map(str, spurious), "", "", str(sum(spurious))])
    note = (
        f"correct {result['correct']}; false positives {result['false_positives']} "
        f"(= {result['predicted']} predicted - {result['correct']} correct: spurious, boundary "
        f"and off the diagonal); false negatives {result['false_negatives']} "
        f"(= {result['gold']} gold - {result['correct']} correct: missed, boundary and off "
        "the diagonal)"
    )
    title = f"{path}: entity type confusion, gold spans (rows) by predicted spans (columns)"
    return title, headers, rows, note
