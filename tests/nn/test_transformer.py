"""The pretrained encoder's word representations (crftag/nn/transformer.py) and the subword
alignment and windows they rest on (crftag/data/subwords.py), on a tiny random BERT saved to a
temporary folder: nothing is downloaded."""

import sys

import pytest
import torch

pytest.importorskip("transformers")

from crftag.data.subwords import assign_windows, subwords_of, window_starts  # noqa: E402
from crftag.errors import CrftagError  # noqa: E402
from crftag.nn.transformer import (  # noqa: E402
    ScalarMix,
    TransformerWords,
    import_transformers,
    load_encoder_files,
    load_encoder_weights,
)
from tests.nn.tiny_bert import save_tiny_bert  # noqa: E402

SENTENCE = ["UN", "backs", "Dutch", "plan", "to", "ban", "Danishness", "cheese", "."]


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    """(files, weights) of the tiny BERT, loaded as training loads a model folder."""
    folder = str(save_tiny_bert(tmp_path_factory.mktemp("bert")))
    return load_encoder_files(folder), load_encoder_weights(folder)


def _words(pretrained, **settings) -> TransformerWords:
    files, weights = pretrained
    module = TransformerWords(files, **settings)
    module.encoder.load_state_dict(weights)
    return module.eval()


def _direct(module: TransformerWords, window_ids: list[int]) -> torch.Tensor:
    """(L, N, D) the encoder's own states of one window of subword ids, framed as BERT frames
    one sequence: [CLS] ids [SEP]."""
    tokenizer = module.tokenizer
    ids = torch.tensor([[tokenizer.cls_token_id, *window_ids, tokenizer.sep_token_id]])
    with torch.no_grad():
        output = module.encoder(input_ids=ids, output_hidden_states=True)
    return torch.stack(output.hidden_states[-module.layers :], dim=2)[0, module.prefix :]


@pytest.mark.parametrize("count, width", [(1, 4), (4, 4), (5, 4), (37, 6), (100, 7), (9, 2)])
def test_windows_cover_every_subword_away_from_the_edges(count, width):
    starts = window_starts(count, width)
    assert (
        starts[0] == 0 and starts[-1] + width >= count and max(starts) + width <= max(count, width)
    )
    assigned = assign_windows(count, width, starts)
    assert len(assigned) == count
    for position, (window, offset) in enumerate(assigned):
        assert starts[window] + offset == position and 0 <= offset < width
        context = min(position, count - 1 - position, width // 4)
        assert min(offset, width - 1 - offset) >= min(context, (width - 1) // 4)


def test_subwords_align_to_words_and_an_empty_word_is_unknown(pretrained):
    module = _words(pretrained)
    words = ["Danishness", "\u200b", "lamb"]
    (found,) = subwords_of(module.tokenizer, [words])
    assert (
        found.counts[0] > 1
        and found.counts[1] == 1
        and found.starts == [0, found.counts[0], found.counts[0] + 1]
    )
    assert found.ids[found.starts[1]] == module.tokenizer.unk_token_id
    assert len(found.ids) == sum(found.counts)


@pytest.mark.parametrize("pooling", ["first", "mean"])
def test_frozen_features_equal_a_direct_call_of_the_encoder(pretrained, pooling):
    module = _words(pretrained, layers=2, pooling=pooling)
    module.extract([SENTENCE, SENTENCE[:3]], show_progress=False)
    cached = module.cache[tuple(SENTENCE)]  # (T, N, D)
    (found,) = subwords_of(module.tokenizer, [SENTENCE])
    direct = _direct(module, found.ids)
    for word, (start, count) in enumerate(zip(found.starts, found.counts, strict=True)):
        pieces = direct[start : start + count]
        expected = pieces[0] if pooling == "first" else pieces.mean(0)
        torch.testing.assert_close(cached[word], expected)
    mixed = module([SENTENCE])  # (1, T, D): an untrained mix is the mean of the layers
    torch.testing.assert_close(mixed[0], cached.mean(1))


def test_a_sentence_longer_than_the_window_is_read_in_overlapping_windows(pretrained):
    module = _words(pretrained, max_length=6)  # 4 subwords a window beside [CLS] and [SEP]
    long = SENTENCE * 3
    (found,) = subwords_of(module.tokenizer, [long])
    assert module.width == 4 and len(found.ids) > 3 * module.width
    states = module.layer_states([long])[0]  # (T, 1, D)
    assert states.shape == (len(long), 1, 32)
    starts = window_starts(len(found.ids), module.width)
    assigned = assign_windows(len(found.ids), module.width, starts)
    for word, start in enumerate(found.starts):
        window, offset = assigned[start]
        ids = found.ids[starts[window] : starts[window] + module.width]
        torch.testing.assert_close(states[word], _direct(module, ids)[offset])
    whole = _words(pretrained).layer_states([long])[0]
    assert not torch.allclose(states, whole)  # the windows are what was read


def test_cached_sentences_are_not_read_again_and_changed_ones_are_not_kept(pretrained, monkeypatch):
    module = _words(pretrained, layers=2)
    module.extract([SENTENCE], show_progress=False)
    cached = module.cache[tuple(SENTENCE)]
    typo = [*SENTENCE[:-2], "lanb", "."]  # augmentation changed the text: read afresh
    module.train()
    fresh = module.layer_states([SENTENCE, typo])
    assert list(module.cache) == [tuple(SENTENCE)]  # the changed sentence is not kept
    assert not torch.equal(fresh[1], cached) and torch.equal(fresh[0], cached)
    monkeypatch.setattr(module, "_encode", lambda sentences: pytest.fail("read again"))
    again = module.layer_states([SENTENCE])
    torch.testing.assert_close(again[0], cached)


def test_a_fine_tuned_encoder_gets_gradients_and_caches_nothing(pretrained):
    module = _words(pretrained, finetune=True).train()
    module([SENTENCE]).sum().backward()
    assert module.encoder.embeddings.word_embeddings.weight.grad is not None
    with pytest.raises(ValueError):
        module.extract([SENTENCE])
    frozen = _words(pretrained).train()
    assert not frozen.encoder.training and not any(
        p.requires_grad for p in frozen.encoder.parameters()
    )


def test_scalar_mix_learns_the_layer_weights():
    mix = ScalarMix(3)
    layers = torch.randn(2, 5, 3, 4)
    torch.testing.assert_close(mix(layers), layers.mean(2))
    mix(layers).sum().backward()
    assert mix.gamma.grad is not None


def test_too_many_layers_is_a_one_line_error(pretrained):
    with pytest.raises(CrftagError, match=r"model.transformer_layers: 4; the encoder has 3"):
        _words(pretrained, layers=4)


def test_without_the_extra_a_one_line_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers fails
    with pytest.raises(CrftagError) as raised:
        import_transformers()
    assert str(raised.value) == (
        "model.transformer needs the transformers package: pip install 'crftag[transformers]'"
    )


def test_a_model_name_is_found_in_the_local_cache_alone(tmp_path, pretrained, monkeypatch):
    from huggingface_hub import constants

    folder = save_tiny_bert(tmp_path / "saved")
    snapshot = tmp_path / "hub" / "models--org--tiny-bert" / "snapshots" / "0123abc"
    snapshot.parent.mkdir(parents=True)
    folder.rename(snapshot)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("0123abc")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    found = load_encoder_files("org/tiny-bert")
    assert found.config["_name_or_path"] == str(snapshot)
    assert found.tokenizer == pretrained[0].tokenizer


def test_a_missing_model_folder_says_where_crftag_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    missing = tmp_path / "no-such-model"
    with pytest.raises(CrftagError) as raised:
        load_encoder_files(str(missing))
    message = str(raised.value)
    assert "\n" not in message and str(missing) in message and "Hugging Face cache" in message
