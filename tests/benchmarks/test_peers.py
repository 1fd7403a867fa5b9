"""benchmarks/peers.py's own pieces, without the peers: CoNLL-2003's IOB1 tags as the IOB2
spaCy takes, the cut corpus of --sentences, the ratios against the targets, and GloVe as flair
holds it; and, behind the slow marker, `make bench-peers` on a cut corpus from a fresh clone."""

import gzip
import json
import os
import subprocess

import pytest


@pytest.fixture
def peers(load_benchmark):
    return load_benchmark("peers")


def test_iob1_becomes_iob2_entity_for_entity(peers):
    tags = ["I-ORG", "O", "I-MISC", "I-MISC", "B-MISC", "I-PER", "I-LOC", "I-LOC", "O"]
    assert peers.iob2(tags) == [
        "B-ORG", "O", "B-MISC", "I-MISC", "B-MISC", "B-PER", "B-LOC", "I-LOC", "O"
    ]  # fmt: skip


def test_a_cut_corpus_keeps_its_first_sentences_and_document_starts(peers, tmp_path):
    source = tmp_path / "eng.train"
    source.write_text(
        "-DOCSTART- -X- O O\n\nAcme NNP I-NP I-ORG\nhires VBZ I-VP O\n\n"
        "Maria NNP I-NP I-PER\n\n-DOCSTART- -X- O O\n\nLisbon NNP I-NP I-LOC\n",
        encoding="utf-8",
    )
    target = tmp_path / "cut"
    assert peers.write_subset(str(source), str(target), 2) == [["Acme", "hires"], ["Maria"]]
    assert peers.sentence_blocks(str(target)) == [
        ["-DOCSTART- -X- O O"],
        ["Acme NNP I-NP I-ORG", "hires VBZ I-VP O"],
        ["Maria NNP I-NP I-PER"],
    ]
    whole = peers.write_subset(str(source), str(tmp_path / "whole"), None)
    assert whole == [["Acme", "hires"], ["Maria"], ["Lisbon"]]


def test_ratios_are_crftag_against_each_peer_from_the_medians(peers):
    files = {"eng.train.tokens": 1000, "eng.testb.tokens": 600}

    def runs(training, tagging):
        return {
            "training_s": training,
            "tagging": [{"command_s": 2 * t, "load_s": 1.0, "tag_s": t} for t in tagging],
        }

    measured = {
        "crftag": runs([1.0, 3.0], [0.1, 0.3]),
        "flair": runs([20.0, 40.0], [1.0, 1.0]),
        "spacy": runs([2.0, 10.0], [0.4, 0.4]),
    }
    found = peers.summary(measured, files)
    assert found["tools"]["crftag"]["training_tokens_per_s"] == 500
    assert found["ratios"]["training_flair"] == pytest.approx(15.0)
    assert found["ratios"]["training_spacy"] == pytest.approx(3.0)
    assert found["ratios"]["tagging_flair"] == pytest.approx(5.0)
    assert found["ratios"]["tagging_spacy"] == pytest.approx(2.0)
    assert found["targets_met"] == {
        "training_flair": True,
        "training_spacy": True,
        "tagging_flair": True,
        "tagging_spacy": False,
    }


def test_the_readme_table_gives_each_figure_and_crftag_as_a_multiple(peers):
    def tool(training, tagging, command):
        return {
            "training_tokens_per_s": training,
            "tagging_tokens_per_s_after_load": tagging,
            "tagging_command_s": command,
        }

    report = {
        "versions": {"flair": "0.15.1", "spacy": "3.8.18"},
        "tools": {
            "crftag": tool(7685.2, 33866.4, 1.234),
            "flair": tool(676.0, 3833.0, 25.05),
            "spacy": tool(2028.4, 6379.0, 9.3),
        },
        "ratios": {
            "training_flair": 11.369,
            "training_spacy": 3.789,
            "tagging_flair": 8.835,
            "tagging_spacy": 5.309,
        },
    }
    assert peers.readme_table(report).splitlines() == [
        "| | crftag | flair 0.15.1 | spaCy 3.8.18 |",
        "|---|---|---|---|",
        "| training: one CoNLL-2003 epoch, whole command, tokens/s | 7,685 | 676 (crftag 11.37x) "
        "| 2,028 (crftag 3.79x) |",
        "| tagging eng.testb after load, tokens/s | 33,866 | 3,833 (crftag 8.84x) "
        "| 6,379 (NER only; crftag 5.31x) |",
        "| tagging eng.testb, whole command | 1.23 s | 25.05 s | 9.30 s |",
    ]


def test_glove_for_flair_holds_what_gensim_reads_of_the_file(peers, tmp_path):
    """The conversion of GloVe for flair, without gensim, gives the words and float32 vectors
    gensim's reader (which flair's WordEmbeddings used) gives: trailing white space dropped,
    every digit of a number parsed; a word given twice stops it."""
    gensim = pytest.importorskip("gensim", reason="gensim (the reference reader) is missing")
    numpy = pytest.importorskip("numpy")
    source = tmp_path / "glove.txt.gz"
    text = "the 0.418 0.24968 -0.41242\nçà -1e-05 3.4028234e38 0.1000000000000000055511 \n"
    text += ", 0.013441 0.23682 -0.16899\n"
    source.write_bytes(gzip.compress(text.encode("utf-8")))
    target = str(tmp_path / "glove")
    peers.glove_for_flair(str(source), target)
    reference = gensim.models.KeyedVectors.load_word2vec_format(
        str(source), binary=False, no_header=True
    )
    with open(target + ".json", encoding="utf-8") as handle:
        assert json.load(handle) == reference.index_to_key == ["the", "çà", ","]
    vectors = numpy.load(target + ".npy")
    assert vectors.dtype == numpy.float32 and numpy.array_equal(vectors, reference.vectors)
    source.write_bytes(gzip.compress((text + "the 9 9 9\n").encode("utf-8")))
    with pytest.raises(SystemExit, match="'the' is given twice"):
        peers.glove_for_flair(str(source), target)


@pytest.mark.slow
def test_bench_peers_runs_from_a_fresh_clone(tmp_path):
    """`make bench-peers SENTENCES=50 ROUNDS=1` in a clone of the committed tree with nothing
    installed: it builds crftag's and the peers' environments (from PyPI) and runs every step
    of every tool on a cut corpus. Minutes to an hour, as the downloads go."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    clone = tmp_path / "crftag"
    subprocess.run(["git", "clone", "-q", root, str(clone)], check=True)
    (tmp_path / "shared").symlink_to(os.path.realpath(os.path.join(root, "..", "shared")))
    done = subprocess.run(
        ["make", "bench-peers", "SENTENCES=50", "ROUNDS=1"],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=4 * 3600,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    with open(clone / "runs" / "bench" / "peers.json", encoding="utf-8") as handle:
        report = json.load(handle)
    assert report["sentences"] == 50 and set(report["tools"]) == {"crftag", "flair", "spacy"}
    assert "gensim" not in report["versions"]
