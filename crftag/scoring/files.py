"""A model scored on labelled files: what ``crftag eval`` reports, as values.

    from crftag.scoring import evaluate_files
    [result] = evaluate_files("en-ner", ["test.conll"], confusion=True)
    result.scores["entities"]["micro"]["f1"], result.scores["confusion"]

Each file is read with the model's column settings (and the format and alignment policy asked
for), tagged, and scored; the analyses asked for are added to its scores.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from crftag.scoring.evaluate import score_tagged, tag_sentences, unseen_labels
from crftag.scoring.robustness import Perturbation, perturbed_scores

if TYPE_CHECKING:
    from crftag.inference.base import TaggerBase

__all__ = ["FileScores", "evaluate_files", "gold_sentences", "scored_files"]


@dataclass(frozen=True)
class FileScores:
    """One file's result.

    scores    :func:`crftag.scoring.evaluate.score`'s dict, plus ``calibration``,
              ``confusion``, ``match`` and ``perturbed`` where asked for (and the tags are
              spans, for calibration and match)
    unseen    the gold labels the model never saw in training (scored as errors)
    errors    the error records (:func:`crftag.scoring.analysis.error_records`) where asked
              for, else None
    """

    path: str
    scores: dict
    unseen: list[str]
    errors: list[dict] | None = None


def evaluate_files(
    model: str | TaggerBase, files: Sequence[str], *, device: str = "auto", **options
) -> list[FileScores]:
    """Score ``model`` (a tagger, or what ``-m`` takes, loaded as ``crftag eval`` loads it on
    ``device``) on each labelled file; ``options`` are :func:`scored_files`'s."""
    if isinstance(model, str):
        from crftag.inference import loading

        model = loading.load(model, device)
    return list(scored_files(model, files, **options))


def scored_files(
    tagger: TaggerBase,
    files: Sequence[str],
    *,
    data_format: str = "auto",
    misaligned: str = "error",
    batch_size: int = 64,
    calibration: bool = False,
    confusion: bool = False,
    match: str | None = None,
    errors: bool = False,
    perturbation: Perturbation | None = None,
) -> Iterator[FileScores]:
    """Each file's :class:`FileScores` as soon as it is scored.

    data_format  the files' format (``auto``: as ``data.format: auto`` in training)
    misaligned   spans of span files off token boundaries (``data.misaligned``)
    calibration  span confidence against precision (:func:`crftag.scoring.evaluate.calibration`)
    confusion    the entity-type confusion table, or a tagging model's tag confusions
    match        a SemEval-2013 matching mode (``strict``, ``exact``, ...) to score spans in
    errors       also every false positive and false negative (mistagged token)
    perturbation also the scores on perturbed copies of each file (``perturbed``)
    """
    spans = tagger.tags_are_spans
    for path in files:
        gold = gold_sentences(tagger, path, data_format=data_format, misaligned=misaligned)
        tagged = tag_sentences(
            tagger, gold, batch_size=batch_size, with_spans=spans and (calibration or errors)
        )
        scores = score_tagged(gold, tagged, tags_are_spans=spans, with_calibration=calibration)
        scores |= _analyse(gold, tagged, spans, confusion, match)
        if perturbation is not None and perturbation.changes:
            scores |= perturbed_scores(tagger, gold, perturbation, batch_size)
        records = None
        if errors:
            from crftag.scoring.analysis import error_records

            records = list(error_records(gold, tagged, tags_are_spans=spans))
        yield FileScores(path, scores, unseen_labels(tagger, gold), records)


def gold_sentences(
    tagger: TaggerBase, path: str, *, data_format: str = "auto", misaligned: str = "error"
) -> list:
    """The labelled sentences of ``path`` as ``crftag eval`` reads them for ``tagger``: the
    model's reading settings in ``data_format`` (a CoNLL-U file's word always FORM)."""
    reading = replace(tagger.config.data, format=data_format, misaligned=misaligned)
    return _for_file(reading, path).read(path)


def _analyse(gold, tagged, spans: bool, with_confusion: bool, match: str | None) -> dict:
    """The analyses asked for, as keys of the file's scores: ``confusion``, ``match``."""
    from crftag.scoring.analysis import confusion, semeval, tag_confusions

    gold_tags = [sentence.tags for sentence in gold]
    result = {}
    if with_confusion:
        analyse = confusion if spans else tag_confusions
        result["confusion"] = analyse(gold_tags, tagged.tags)
    if match and spans:
        result["match"] = semeval(gold_tags, tagged.tags, match)
    return result


def _for_file(reading, path: str):
    """The reading settings for one file: a CoNLL-U file's word is always FORM, whatever word
    column the model was trained with (a word-first two-column file says nothing of CoNLL-U,
    whose first column is the ID)."""
    from crftag.data.labelled import detect_labelled_format

    chosen = reading.format if reading.format != "auto" else detect_labelled_format(path)
    return replace(reading, word_column=None) if chosen == "conllu" else reading
