"""Parsers of command-line values that typer does not know: ``K/N`` shards, ``NAME=PATH``
inputs, seed lists, ``KEY=VALUE`` task options (values read as YAML)."""

from __future__ import annotations


def parse_shard(text: str | None):
    """``K/N`` -> :class:`~culturebench.eval.shards.Shard`; None when not given."""
    from culturebench.eval.shards import Shard

    return Shard.parse(text) if text is not None else None


def names_list(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


def _key_value(item: str, flag: str, shape: str, *, need_value: bool) -> tuple[str, str]:
    """``KEY=VALUE`` split once at the first ``=``; a one-line error naming ``flag`` otherwise."""
    from culturebench.errors import UsageError

    key, sep, value = item.partition("=")
    if not sep or not key.strip() or (need_value and not value.strip()):
        raise UsageError(f"{flag} {item!r}: expected {shape}")
    return key.strip(), value


def parse_inputs(items: list[str]) -> dict[str, str]:
    """``KEY=PATH`` items -> {key: path}; a key given twice is an error (one would be lost)."""
    from culturebench.errors import UsageError

    out: dict[str, str] = {}
    for item in items:
        key, path = _key_value(item, "--input", "KEY=PATH", need_value=True)
        if key in out:
            raise UsageError(f"--input {key} is given twice ({out[key]} and {path.strip()}); give it once")
        out[key] = path.strip()
    return out


def parse_seeds(text: str | None) -> list[int] | None:
    """``0,1,2`` -> [0, 1, 2] (distinct integers); None when not given."""
    from culturebench.errors import UsageError

    if not text:
        return None
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(
            f"--repeat-seeds {text!r}: expected integers separated by commas, e.g. 0,1,2,3,4"
        ) from None
    if not values or len(set(values)) != len(values):
        raise UsageError(f"--repeat-seeds {text!r}: give distinct integers")
    return values


def parse_task_options(items: list[str]) -> dict:
    """``KEY=VALUE`` pairs as a dict; values read as YAML scalars (``3`` -> 3, ``true``)."""
    import yaml

    from culturebench.yamlio import load_yaml

    out = {}
    for item in items:
        key, value = _key_value(item, "--option", "KEY=VALUE", need_value=False)
        try:
            out[key] = load_yaml(value) if value.strip() else None
        except yaml.YAMLError:
            out[key] = value
    return out
