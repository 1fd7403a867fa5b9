"""evaluate_files: what `crftag eval` reports, as values from the library."""

import json

from crftag.scoring import FileScores, evaluate_files
from crftag.scoring.analysis import error_records
from crftag.scoring.evaluate import tag_sentences

DEV = "data/ner_sample.dev.conll"


def test_the_scores_are_those_eval_prints(invoke, sample_model):
    [result] = evaluate_files(str(sample_model), [DEV], device="cpu", match="strict")
    printed = invoke(["eval", DEV, "-m", str(sample_model), "--json", "--match", "strict"])
    assert printed.status == 0, printed.stderr
    assert json.loads(printed.stdout) == json.loads(json.dumps({"file": DEV, **result.scores}))
    assert isinstance(result, FileScores) and result.path == DEV and result.errors is None


def test_analyses_and_errors_are_added_where_asked(sample_model):
    from crftag.inference.loading import load

    tagger = load(str(sample_model), "cpu")
    plain, asked = (
        evaluate_files(tagger, [DEV, DEV], **options)
        for options in ({}, {"confusion": True, "calibration": True, "errors": True})
    )
    assert [r.path for r in asked] == [DEV, DEV]
    assert not {"confusion", "calibration"} & set(plain[0].scores)
    assert {"confusion", "calibration"} <= set(asked[0].scores)
    gold = tagger.config.data.read(DEV)
    tagged = tag_sentences(tagger, gold, with_spans=True)
    assert asked[0].errors == list(error_records(gold, tagged, tags_are_spans=True))
    assert asked[0].unseen == plain[0].unseen == []
