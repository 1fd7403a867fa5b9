"""``train.sort_documents``: whole-document batches packed by their longest sentence, so a batch
pads less, with every document whole and every sentence in exactly one batch."""

import random

from crftag.data.indices import document_batches


def _corpus(rng: random.Random, documents: int = 60):
    """(document keys, sentence lengths): articles of 1-30 sentences of 1-80 tokens."""
    keys, lengths = [], []
    for document in range(documents):
        longest = rng.randint(1, 80)
        for _ in range(rng.randint(1, 30)):
            keys.append(document)
            lengths.append(rng.randint(1, longest))
    return keys, lengths


def _padding(batches, lengths):
    """Padded positions of the batches' (B, T) grids."""
    return sum(len(b) * max(lengths[i] for i in b) - sum(lengths[i] for i in b) for b in batches)


def test_sorted_batches_keep_documents_whole_and_pad_less():
    keys, lengths = _corpus(random.Random(7))
    plain = document_batches(keys, 64, random.Random(1))
    sorted_ = document_batches(keys, 64, random.Random(1), lengths)
    assert sorted(i for batch in sorted_ for i in batch) == list(range(len(keys)))
    for batch in sorted_:
        for key in {keys[i] for i in batch}:
            assert [i for i in batch if keys[i] == key] == [
                i for i, k in enumerate(keys) if k == key
            ]
    assert _padding(sorted_, lengths) < 0.8 * _padding(plain, lengths)


def test_sorted_batches_come_in_a_random_order_drawn_from_the_generator():
    keys, lengths = _corpus(random.Random(3))
    first = document_batches(keys, 32, random.Random(5), lengths)
    assert first == document_batches(keys, 32, random.Random(5), lengths)
    longest = [max(lengths[i] for i in batch) for batch in first]
    assert longest != sorted(longest)  # shuffled after packing, not shortest first
    assert first != document_batches(keys, 32, random.Random(6), lengths)


def test_a_run_with_sorted_documents_resumes_to_the_uninterrupted_model(tmp_path, tiny_args):
    import json
    import signal

    from tests.training.test_resume import SMALL_BATCHES, crftag, train_in_process, wait_for_line

    options = tiny_args(**SMALL_BATCHES, model__document_context=True, train__sort_documents=True)
    straight = tmp_path / "straight"
    train_in_process("configs/sample.yaml", "-o", str(straight), *options)
    broken = tmp_path / "broken"
    process = crftag("train", "configs/sample.yaml", "-o", str(broken), *options)
    wait_for_line(process, "epoch   1")
    process.send_signal(signal.SIGTERM)  # lands somewhere in epoch 2
    assert process.wait(timeout=120) == 128 + signal.SIGTERM
    train_in_process("--resume", str(broken), "--device", "cpu", "--quiet")
    expected = json.loads((straight / "metrics.json").read_text())
    got = json.loads((broken / "metrics.json").read_text())
    assert [epoch["dev_score"] for epoch in got["history"]] == [
        epoch["dev_score"] for epoch in expected["history"]
    ]
    assert got["test"] == expected["test"]
