"""Encoders that are not BERT: a tiny random model of each kind crftag reads gives each word the
state the model itself gives its first subword (checked against transformers run on the folder
directly), framed by its own special tokens, with the width of its states; decoder-only and
encoder-decoder models are refused in one line that says why."""

import pytest

pytest.importorskip("transformers")

from tiny_encoders import FRAMES, KINDS, REFUSED, save_encoder  # noqa: E402

from crftag.errors import CrftagError  # noqa: E402
from crftag.features.transformer import Transformer  # noqa: E402
from crftag.nn.transformer import (  # noqa: E402
    TransformerWords,
    load_encoder_files,
    load_encoder_weights,
)

SENTENCE = ["UN", "backs", "Dutch", "plan", "to", "ban", "Danish", "cheese", "."]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    base = tmp_path_factory.mktemp("encoders")
    return {kind: save_encoder(base / kind, kind) for kind in [*KINDS, *REFUSED]}


def _reference(folder, sentence):
    """(T, D) the encoder's last-layer state of each word's first subword, as transformers
    gives it when run on the folder by itself."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder).eval()
    encoding = tokenizer([sentence], is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        states = model(input_ids=encoding["input_ids"]).last_hidden_state[0]
    firsts, seen = [], set()
    for position, word in enumerate(encoding.word_ids(0)):
        if word is not None and word not in seen:
            seen.add(word)
            firsts.append(position)
    return states[firsts], tokenizer.convert_ids_to_tokens(encoding["input_ids"][0])


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_gives_the_models_own_states_in_its_own_frame(folders, kind):
    import torch

    files = load_encoder_files(str(folders[kind]))
    words = TransformerWords(files)
    words.encoder.load_state_dict(load_encoder_weights(str(folders[kind])))
    words.eval()
    with torch.no_grad():
        states = words([SENTENCE])[0]  # (T, D)
    expected, framed = _reference(folders[kind], SENTENCE)
    assert states.shape == (len(SENTENCE), 32) == expected.shape
    torch.testing.assert_close(states, expected, atol=1e-5, rtol=1e-4)
    before, after = FRAMES[kind]
    assert words.tokenizer.convert_ids_to_tokens(words.frame[0]) == before == framed[:1]
    assert words.tokenizer.convert_ids_to_tokens(words.frame[1]) == after == framed[-1:]
    assert words.output_size == 32
    assert Transformer().width({}, {"transformer": files.to_state()}) == 32


@pytest.mark.parametrize("kind", KINDS)
def test_a_sentence_longer_than_the_window_is_read_whole(folders, kind):
    """64 positions (RoBERTa's 66 less its padding offset) and 100 words of several subwords
    each, about a dozen windows: read as overlapping windows, every word a state, none past a
    position table."""
    import torch

    files = load_encoder_files(str(folders[kind]))
    words = TransformerWords(files).eval()
    long = [f"w{index}x" for index in range(100)]
    with torch.no_grad():
        states = words([long, SENTENCE])
    assert states.shape == (2, 100, 32) and bool(torch.isfinite(states).all())


@pytest.mark.parametrize(
    "kind, why", [("gpt2", "decoder-only model"), ("t5", "encoder-decoder model")]
)
def test_decoders_and_encoder_decoders_are_refused_saying_why(folders, kind, why):
    with pytest.raises(CrftagError) as raised:
        load_encoder_files(str(folders[kind]))
    message = str(raised.value)
    assert "\n" not in message and str(folders[kind]) in message and "config.json" in message
    assert why in message
