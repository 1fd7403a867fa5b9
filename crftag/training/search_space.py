"""The search space of ``crftag tune``: the config's ``tune`` section checked against the keys it
searches, and one trial's config drawn from it."""

from __future__ import annotations

import dataclasses
import difflib
import sys
from typing import Any

from crftag.config.loading import build
from crftag.config.sections import Config
from crftag.config.tune import SEARCHED_KEYS
from crftag.errors import CrftagError
from crftag.training.init_from import ARCHITECTURE_KEYS

__all__ = ["check_space", "config_params", "draw_config", "searched"]


def searched(config: Config) -> list[str]:
    """The tune keys a study draws: ``tune.search``, less the model's sizes when training starts
    from a model (its architecture is its own)."""
    if config.train.init_from is None:
        return list(config.tune.search)
    fixed = [key for key in config.tune.search if _target(key) in ARCHITECTURE_KEYS]
    if fixed:
        print(f"tune: train.init_from fixes {', '.join(fixed)}; not drawn", file=sys.stderr)
    return [key for key in config.tune.search if key not in fixed]


def check_space(config: Config) -> None:
    """Every ``tune.search`` name is a tune key, every range is ``[low, high]`` with low <= high,
    and every value is one its config key accepts (checked as a config's value is); one line
    for each mistake."""
    problems = []
    for name in config.tune.search:
        if name not in SEARCHED_KEYS:
            close = difflib.get_close_matches(name, list(SEARCHED_KEYS), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            problems.append(f"tune.search: unknown key {name!r}{hint} ({', '.join(SEARCHED_KEYS)})")
    for name, (section, key, draw) in SEARCHED_KEYS.items():
        values = getattr(config.tune, name)
        if draw != "choice" and (len(values) != 2 or values[0] > values[1]):
            problems.append(f"tune.{name}: expected [low, high] with low <= high, got {values}")
        elif draw == "log" and values[0] <= 0:
            problems.append(f"tune.{name}: drawn on a log scale, so low must be > 0, got {values}")
        for value in values:
            problems += _value_problems(config, section, key, value, f"tune.{name}")
    if problems:
        raise CrftagError("\n".join(problems))


def _value_problems(config: Config, section: str, key: str, value: Any, where: str) -> list[str]:
    """What the config check says of ``section.key: value``, under ``where``'s name."""
    raw = config.to_dict()
    raw[section][key] = value
    try:
        build(Config, raw, where)
    except CrftagError as error:
        return [
            line.replace(f"{where}: {section}.{key}:", f"{where}:")
            for line in str(error).splitlines()
        ]
    return []


def draw_config(trial, config: Config, keys: list[str]) -> Config:
    """``config`` with each of ``keys`` drawn by the Optuna ``trial`` from the tune section."""
    sections: dict[str, dict] = {}
    for name in keys:
        section, key, draw = SEARCHED_KEYS[name]
        values = getattr(config.tune, name)
        if draw == "choice":
            value = trial.suggest_categorical(name, list(values))
        else:
            value = trial.suggest_float(name, values[0], values[1], log=draw == "log")
        sections.setdefault(section, {})[key] = value
    changed = {
        section: dataclasses.replace(getattr(config, section), **values)
        for section, values in sections.items()
    }
    return dataclasses.replace(config, **changed)


def config_params(config: Config, keys: list[str]) -> dict[str, Any]:
    """The config's own values of ``keys``, those the tune section's space holds: a study's
    first trial, so that it starts from the recipe as written (the keys left out are drawn)."""
    params = {}
    for name in keys:
        section, key, draw = SEARCHED_KEYS[name]
        value, space = getattr(getattr(config, section), key), getattr(config.tune, name)
        inside = value in space if draw == "choice" else space[0] <= value <= space[1]
        if inside:
            params[name] = value
    return params


def _target(name: str) -> str:
    section, key, _ = SEARCHED_KEYS[name]
    return f"{section}.{key}"
