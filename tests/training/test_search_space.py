"""The tune section: checked against the keys it searches, one line per mistake; a trial's
config drawn from it."""

import pytest

from crftag.config.tune import SEARCHED_KEYS
from crftag.errors import CrftagError
from crftag.training.search_space import check_space, draw_config, searched


def _problems(tiny_config, **settings) -> list[str]:
    with pytest.raises(CrftagError) as error:
        check_space(tiny_config(**settings))
    return str(error.value).splitlines()


def test_the_default_space_is_valid_and_searches_every_key(tiny_config):
    config = tiny_config()
    check_space(config)
    assert searched(config) == list(SEARCHED_KEYS)


def test_mistakes_are_named_each_on_a_line(tiny_config):
    lines = _problems(
        tiny_config,
        tune__search=["lr", "dropuot"],
        tune__lr=[0, 0.1],
        tune__dropout=[0.5, 0.99],
        tune__word_dropout=[0.3, 0.1],
        tune__optimizer=["sgd", "lbfgs"],
    )
    assert lines == [
        "tune.search: unknown key 'dropuot'; did you mean 'dropout'? (lr, dropout, word_dropout, "
        "hidden_size, char_dim, char_size, batch_size, optimizer)",
        "tune.lr: drawn on a log scale, so low must be > 0, got [0.0, 0.1]",
        "tune.dropout: expected a probability in [0, 0.95], got 0.99",
        "tune.word_dropout: expected [low, high] with low <= high, got [0.3, 0.1]",
        "tune.optimizer: expected one of sgd|adam, got 'lbfgs'",
    ]


def test_an_unknown_tune_key_names_the_nearest(tiny_config):
    with pytest.raises(CrftagError, match="unknown key 'tune.lrr'; did you mean 'tune.lr'"):
        tiny_config(tune__lrr=[0.1, 0.2])


def test_with_init_from_the_models_sizes_are_not_drawn(tiny_config, sample_model, capsys):
    config = tiny_config(train__init_from=str(sample_model))
    assert "hidden_size" not in searched(config)
    assert "lr" in searched(config)
    assert "not drawn" in capsys.readouterr().err


def test_a_drawn_config_takes_the_trials_values(tiny_config):
    class Trial:
        def suggest_categorical(self, name, choices):
            return choices[-1]

        def suggest_float(self, name, low, high, log=False):
            return high

    config = draw_config(Trial(), tiny_config(), ["lr", "hidden_size", "optimizer"])
    assert (config.train.lr, config.model.hidden_size, config.train.optimizer) == (
        0.05,
        256,
        "adam",
    )
    assert config.model.dropout == tiny_config().model.dropout  # not searched, kept


def test_a_range_given_as_one_number_is_refused_on_loading(tiny_config):
    with pytest.raises(CrftagError, match=r"tune.lr: expected a list of float, got float 0.1$"):
        tiny_config(tune__lr=0.1)
    with pytest.raises(CrftagError, match=r"tune.hidden_size: expected a list of int, got bool"):
        tiny_config(tune__hidden_size=[True])
