"""Settings that crftag no longer has, each with why and what to do instead.

A config (or ``--set``) naming a removed key is refused with its line, as is a removed value of
a command-line option. A model file written before a removal may still name the key at the
value it had when the setting was off (``None``, ``False``); that model never used the setting,
so its config loads as if the key were absent (:func:`drop_removed_defaults`). Imports nothing,
so the command-line options can read it without loading the config machinery.
"""

from __future__ import annotations

__all__ = ["REMOVED_KEYS", "REMOVED_OBJECTIVES", "drop_removed_defaults", "removed_key_errors"]

_TRUECASER = (
    "the truecaser was removed (no config, model or benchmark used it); delete the key, or "
    "train with augment.lower / augment.typos for text with lost capitals (docs/robustness.md)"
)

# "section.key" -> (the value it had when off, why it is gone)
REMOVED_KEYS: dict[str, tuple[object, str]] = {
    "model.truecaser": (None, _TRUECASER),
    "model.truecaser_finetune": (False, _TRUECASER),
}

# ``crftag pretrain --objective`` values -> why they are gone
REMOVED_OBJECTIVES: dict[str, str] = {"truecase": _TRUECASER}


def removed_key_errors(raw: dict, source: str) -> tuple[dict, list[str]]:
    """(``raw`` without its removed keys, one error line for each it named)."""
    return _without_removed(raw, source, keep_defaults=False)


def drop_removed_defaults(raw: dict, source: str) -> tuple[dict, list[str]]:
    """(``raw``, a stored model's config, without the removed keys it leaves at their old
    value, one error line for each removed key set to anything else: a model that used it)."""
    return _without_removed(raw, source, keep_defaults=True)


def _without_removed(raw: dict, source: str, *, keep_defaults: bool) -> tuple[dict, list[str]]:
    cleaned, errors = dict(raw), []
    for name, (off, why) in REMOVED_KEYS.items():
        section, key = name.split(".")
        values = cleaned.get(section)
        if not isinstance(values, dict) or key not in values:
            continue
        if not (keep_defaults and values[key] == off and type(values[key]) is type(off)):
            errors.append(f"{source}: {name}: {why}")
        cleaned[section] = {k: v for k, v in values.items() if k != key}
    return cleaned, errors
