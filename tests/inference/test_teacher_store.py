"""The teacher's store: the stored posteriors are the teacher's (crftag.crf.distillation's
teacher_marginals, checked there against enumeration), a stopped labelling continues
to the very store an unstopped one writes, a finished store is reused as it is, and a store of
another teacher, text or format, or one changed since, is refused in one line."""

import gzip
import math
import os
import pathlib

import numpy as np
import pytest
import torch

from crftag.crf.distillation import teacher_marginals
from crftag.data.batching import build_batch
from crftag.errors import CrftagError
from crftag.inference import teacher as teacher_module
from crftag.inference import teacher_store
from crftag.inference.teacher import load_teacher
from crftag.inference.teacher_store import label_text, open_store, teacher_digest, text_digest

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "encoder_models"
LINES = [
    "John Smith lives in Berlin.",
    "Shares in Siemens rose 3.5 percent in Tokyo on Friday. The deal was signed in Oslo.",
    "",
    "Anna Lindqvist",
    "UN backs Dutch plan to ban Danish cheese .",
    "Greta Holloway, a spokesman for Vestas, said so.",
    "OSLO 2024-03-11",
    "Anna Lindqvist",
]
DEV_AND_TEST = {("Anna", "Lindqvist"), ("not", "in", "the", "text")}


@pytest.fixture(scope="module")
def teacher(teacher_path):
    return load_teacher(teacher_path)


@pytest.fixture
def text(tmp_path):
    path = tmp_path / "text.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return str(path)


def label(teacher, text, folder, **options):
    options.setdefault("exclude", DEV_AND_TEST)
    return label_text(teacher, [text], str(folder), show_progress=False, **options)


def test_the_stored_posteriors_are_the_teachers(teacher, text, tmp_path, capsys):
    store = label(teacher, text, tmp_path / "store", temperature=2.0)
    assert "removed 2 sentences" in capsys.readouterr().err
    assert store.removed == 2 and store.temperature == 2.0
    assert store.labels == teacher.tag_symbols and store.scheme == teacher.train_scheme
    assert len(store) == 6  # 8 sentences in 7 non-blank lines, less the two "Anna Lindqvist"
    assert store.sentence(2) == ("The", "deal", "was", "signed", "in", "Oslo", ".")
    crf = teacher.model.crf
    for i in range(len(store)):
        tokens = store.sentence(i)
        batch = build_batch([tokens], teacher.vocabularies)
        with torch.inference_mode():
            emissions = teacher.model.emissions(batch)
            expected, pairs = teacher_marginals(crf, emissions, batch.mask, 2.0)
            best, _ = crf.decode(emissions, batch.mask)
        token_marginals, transition_marginals = store.marginals(i)
        assert token_marginals.dtype == transition_marginals.dtype == np.float32
        # float16 keeps 11 significant bits: 2^-11 relative, at most 2^-12 absolute below 1.
        np.testing.assert_allclose(token_marginals, expected[0].numpy(), rtol=2**-11, atol=1e-7)
        np.testing.assert_allclose(transition_marginals, pairs[0].numpy(), rtol=1e-6)
        assert math.isclose(transition_marginals.sum(), len(tokens) - 1, abs_tol=1e-4)
        assert store.viterbi(i) == [teacher.tag_symbols[t] for t in best[0].tolist()]


def test_at_temperature_one_the_token_marginals_are_the_crfs_own(teacher, text, tmp_path):
    """Against the CRF's own forward-backward (CRF.marginals), another implementation."""
    store = label(teacher, text, tmp_path / "store")
    for i in range(len(store)):
        batch = build_batch([store.sentence(i)], teacher.vocabularies)
        with torch.inference_mode():
            emissions = teacher.model.emissions(batch)
            expected = teacher.model.crf.marginals(emissions, batch.mask)[0].numpy()
        np.testing.assert_allclose(store.marginals(i)[0], expected, rtol=2**-11, atol=1e-7)


def test_a_stopped_labelling_continues_to_the_same_store(
    teacher, text, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(teacher_store, "SHARD_SENTENCES", 1)  # a shard a line
    whole = label(teacher, text, tmp_path / "whole")
    written = []
    real_write = teacher_store._write_shard

    def stop_after_two(path, data):
        if len(written) == 2:
            raise KeyboardInterrupt
        written.append(path)
        return real_write(path, data)

    monkeypatch.setattr(teacher_store, "_write_shard", stop_after_two)
    with pytest.raises(KeyboardInterrupt):
        label(teacher, text, tmp_path / "stopped")
    assert "stopped with 2 of 5 shards written" in capsys.readouterr().err
    with pytest.raises(CrftagError, match="unfinished \\(2 of 5 shards\\)"):
        open_store(str(tmp_path / "stopped"))
    (tmp_path / "stopped" / ".partial-left-by-a-kill").write_bytes(b"half a shard")
    monkeypatch.setattr(teacher_store, "_write_shard", real_write)
    resumed = label(teacher, text, tmp_path / "stopped")
    assert files(tmp_path / "stopped") == files(tmp_path / "whole")
    assert len(files(tmp_path / "whole")) == 6  # the manifest and 5 shards
    assert [resumed.sentence(i) for i in range(len(resumed))] == [
        whole.sentence(i) for i in range(len(whole))
    ]


def files(folder):
    return {name: (folder / name).read_bytes() for name in sorted(os.listdir(folder))}


def test_a_finished_store_is_reused_without_work(teacher, text, tmp_path, monkeypatch):
    first = label(teacher, text, tmp_path / "store")
    monkeypatch.setattr(teacher_store, "label_sentences", fail_if_called)
    monkeypatch.setattr(teacher_store, "read_unlabelled_text", fail_if_called)
    again = label(teacher, text, tmp_path / "store")
    assert again.manifest == first.manifest


def fail_if_called(*args, **kwargs):
    raise AssertionError("a finished store was labelled again")


def test_a_store_of_another_teacher_or_text_is_refused(teacher, teacher_path, text, tmp_path):
    folder = str(tmp_path / "store")
    label(teacher, text, folder)
    store = open_store(folder, teacher_digest=teacher_digest(teacher_path))
    assert store.teacher_digest == teacher_digest(teacher_path)
    assert store.text_digest == text_digest([text])
    with pytest.raises(CrftagError, match="another teacher"):
        open_store(folder, teacher_digest="0" * 64)
    with pytest.raises(CrftagError, match="another text"):
        open_store(folder, text_digest=text_digest([teacher_path]))
    with pytest.raises(CrftagError, match="other dev and test sentences"):
        label(teacher, text, folder, exclude=set())
    with pytest.raises(CrftagError, match="temperature 1.0"):
        label(teacher, text, folder, temperature=2.0)
    pathlib.Path(text).write_text("Another text .\n", encoding="utf-8")
    with pytest.raises(CrftagError, match=f"^{folder}: .*another text"):
        label(teacher, text, folder)


def test_a_changed_or_missing_shard_is_refused(teacher, text, tmp_path, monkeypatch):
    monkeypatch.setattr(teacher_store, "SHARD_SENTENCES", 4)
    folder = tmp_path / "store"
    label(teacher, text, folder)
    shard = folder / "shard-00001.npz"
    data = shard.read_bytes()
    shard.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(CrftagError, match=f"^{shard}: damaged or changed"):
        open_store(str(folder))
    shard.unlink()
    with pytest.raises(CrftagError, match=f"^{shard}: cannot read"):
        open_store(str(folder))


def test_a_store_of_another_format_is_refused(teacher, text, tmp_path):
    folder = tmp_path / "store"
    label(teacher, text, folder)
    manifest = folder / "manifest.json"
    original = manifest.read_text()
    manifest.write_text(original.replace('"format_version": 1', '"format_version": 2'))
    with pytest.raises(CrftagError, match="format 2; this crftag reads format 1"):
        open_store(str(folder))
    manifest.write_text(original.replace('"removed": 2', '"removed": -2'))
    with pytest.raises(CrftagError, match="manifest.json: damaged \\(removed\\)"):
        open_store(str(folder))
    manifest.write_text("{")
    with pytest.raises(CrftagError, match="manifest.json: damaged"):
        open_store(str(folder))
    with pytest.raises(CrftagError, match="no teacher store here"):
        open_store(str(tmp_path))


def test_compressed_text_gives_the_same_sentences(teacher, text, tmp_path):
    compressed = tmp_path / "text.txt.gz"
    compressed.write_bytes(gzip.compress(pathlib.Path(text).read_bytes()))
    plain = label(teacher, text, tmp_path / "plain")
    packed = label(teacher, str(compressed), tmp_path / "packed")
    assert packed.text_digest != plain.text_digest  # the digest is of the bytes on disk
    assert [packed.sentence(i) for i in range(len(packed))] == [
        plain.sentence(i) for i in range(len(plain))
    ]
    assert all(
        np.array_equal(packed.marginals(i)[0], plain.marginals(i)[0]) for i in range(len(plain))
    )


def test_a_teacher_with_an_encoder_labels(text, tmp_path):
    pytest.importorskip("transformers")
    model = str(FIXTURES / "tf5.pt")
    store = label(load_teacher(model), text, tmp_path / "store")
    assert store.teacher_digest == teacher_digest(model) and len(store) == 6
    token_marginals, transition_marginals = store.marginals(0)
    np.testing.assert_allclose(token_marginals.sum(axis=1), 1.0, atol=2e-3)
    assert math.isclose(transition_marginals.sum(), len(store.sentence(0)) - 1, abs_tol=1e-4)


def test_a_bundled_model_teaches_through_its_weights_in_torch(text, tmp_path):
    import crftag

    bundled = crftag.load("en-ner", device="cpu")
    assert bundled.backend == "numpy"
    store = label(bundled, text, tmp_path / "store")
    assert store.labels == bundled.tag_symbols
    tags = bundled.tag([store.sentence(0)])[0]  # IOB2, from the NumPy runtime
    assert [tag.replace("S-", "B-").replace("E-", "I-") for tag in store.viterbi(0)] == tags


def test_a_sentence_over_the_taggers_limit_is_stored_as_its_pieces(teacher_path, tmp_path):
    teacher = load_teacher(teacher_path)
    teacher.max_length = 4
    text = tmp_path / "text.txt"
    text.write_text("UN backs Dutch plan to ban Danish cheese .\n", encoding="utf-8")
    store = label(teacher, str(text), tmp_path / "store")
    pieces = [store.sentence(i) for i in range(len(store))]
    assert pieces == [
        ("UN", "backs", "Dutch", "plan"),
        ("to", "ban", "Danish", "cheese"),
        (".",),
    ]
    assert [len(store.viterbi(i)) for i in range(3)] == [4, 4, 1]


def test_a_shard_ends_where_a_line_ends():
    assert teacher_store._shard_sizes([0, 0, 1, 2, 2, 2, 3], 2) == [2, 4, 1]
    assert teacher_store._shard_sizes([0, 1, 2], 5) == [3]


def test_a_sentence_is_labelled_alike_alone_and_in_a_batch(teacher):
    """Beside longer and shorter ones, a sentence has its own posteriors (to float32 rounding:
    padding changes the order of the BiLSTM's sums) and its own path."""
    sentences = [("Berlin",), ("John", "Smith", "lives", "in", "Berlin", "."), ("Oslo", ".")]
    alone = [teacher_module.label_sentences(teacher, [s], [0]) for s in sentences]
    together = teacher_module.label_sentences(teacher, sentences, [0, 1, 2], batch_size=2)
    for i, single in enumerate(alone):
        np.testing.assert_allclose(
            together.token_marginals[i], single.token_marginals[0], rtol=1e-5, atol=1e-9
        )
        np.testing.assert_allclose(
            together.transition_marginals[i], single.transition_marginals[0], rtol=1e-5, atol=1e-9
        )
        assert together.viterbi[i].tolist() == single.viterbi[0].tolist()


def test_the_docs_say_the_shard_size_and_line_limit_the_code_uses():
    from crftag.data.lines import MAX_LINE_BYTES

    docs = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "distillation.md").read_text()
    assert f"at least {teacher_store.SHARD_SENTENCES} consecutive sentences" in docs
    assert f"longer than {MAX_LINE_BYTES >> 20} MiB" in docs
