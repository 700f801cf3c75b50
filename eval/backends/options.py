"""Options a backend declares: name, type, default, help, and whether the option changes the
outputs (part of a run's identity: dtype, quantization, remote code, a GGUF file) or only
how fast they come (parallel sizes, batch size, concurrency: recorded, free to change on
resume).

The command line gives them as ``--model-arg KEY=VALUE`` (repeatable) or, as in
lm-evaluation-harness, ``--model-args k=v,k=v``; :func:`parse_model_args` checks every key
and value against the chosen backend before any model loads, so an unknown key, a wrong type
or another backend's option is a one-line error listing the valid keys, never an option
written into ``run.json`` that no engine saw.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from culturebench.errors import UsageError

TRUE = {"true", "1", "yes", "on"}
FALSE = {"false", "0", "no", "off"}


@dataclass(frozen=True)
class BackendOption:
    """One option of a backend. ``kind``: ``int``, ``float``, ``bool``, ``str`` or ``json`` (a
    JSON object or list, e.g. ``limit_mm_per_prompt={"image": 4}``)."""

    name: str
    kind: str
    default: Any
    help: str
    identity: bool = False  # True: the option changes the outputs (part of the run's identity)
    choices: tuple[str, ...] = ()
    minimum: float | None = None  # numbers: the least accepted value (NaN and infinity never are)
    maximum: float | None = None
    variable: bool = False  # the NAME of an environment variable (api_key_env), never a key
    requires: str | None = None  # another option this one only makes sense with (device_map)
    # a further check of the value: returns normally, or raises ValueError saying what is expected
    check: Callable[[Any], Any] | None = None

    def parse(self, text: Any) -> Any:
        """The typed value of ``text`` (a value already of the right type passes)."""
        if not isinstance(text, str):
            return self._check(text)
        raw = text.strip()
        if self.kind == "bool":
            if raw.lower() in TRUE:
                return True
            if raw.lower() in FALSE:
                return False
            raise ValueError("true or false")
        if self.kind in ("int", "float"):
            try:
                number = int(raw) if self.kind == "int" else float(raw)
            except ValueError:
                raise ValueError(f"{'an integer' if self.kind == 'int' else 'a number'}") from None
            return self._check(number)
        if self.kind == "json":
            try:
                value = json.loads(raw)
            except json.JSONDecodeError:
                raise ValueError("JSON (an object or a list)") from None
            if not isinstance(value, dict | list):
                raise ValueError("a JSON object or list")
            return self._check(value)
        if raw.lower() in ("none", "null", ""):
            return None
        return self._check(raw)

    def _check(self, value: Any) -> Any:
        expected: dict[str, type | tuple[type, ...]] = {
            "int": int,
            "float": (int, float),
            "bool": bool,
            "str": str,
            "json": (dict, list),
        }
        wanted = expected[self.kind]
        wrong = not isinstance(value, wanted) or (self.kind in ("int", "float") and isinstance(value, bool))
        if value is not None and wrong:
            raise ValueError(f"{self.kind}")
        if value is not None and self.kind in ("int", "float"):
            self._check_range(value)
        if value is not None and self.kind == "json" and self.minimum is not None:  # {"image": 4}: counts
            values = value.values() if isinstance(value, dict) else [None]
            if any(isinstance(v, bool) or not isinstance(v, int) or v < self.minimum for v in values):
                raise ValueError(f"a JSON object of integers >= {self.minimum:g}")
        if value is not None and self.variable:
            from culturebench.secrets import checked_variable_name

            checked_variable_name(f"--model-arg {self.name}", value)
        if self.choices and value is not None and value not in self.choices:
            raise ValueError("one of " + ", ".join(self.choices))
        if self.check is not None and value is not None:
            self.check(value)
        return value

    def accepted(self) -> str:
        """The accepted range in words ("an integer >= 1", "a number > 0")."""
        what = "an integer" if self.kind == "int" else "a finite number"
        bounds = []
        if self.minimum is not None:
            bounds.append(f">= {self.minimum:g}")
        if self.maximum is not None:
            bounds.append(f"<= {self.maximum:g}")
        return what + (" " + " and ".join(bounds) if bounds else "")

    def _check_range(self, value: float) -> None:
        import math

        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(self.accepted())
        if (self.minimum is not None and value < self.minimum) or (
            self.maximum is not None and value > self.maximum
        ):
            raise ValueError(self.accepted())

    def describe(self) -> str:
        """``name (kind, default X): help`` for listings."""
        shown = "none" if self.default is None else json.dumps(self.default)
        return f"{self.name} ({self.kind}, default {shown}): {self.help}"


def split_model_args(repeated: Sequence[str] = (), joined: Sequence[str] = ()) -> list[tuple[str, str]]:
    """``(key, value)`` pairs from ``--model-arg K=V`` (repeatable; the value may hold commas
    and ``=``) and ``--model-args k=v,k=v`` (a value with a comma must use ``--model-arg``).
    A key given twice is an error."""
    pairs: list[tuple[str, str, str]] = []
    for item in repeated:
        pairs.append((*_pair(item, "--model-arg"), "--model-arg"))
    for group in joined:
        for item in _split_top_level(group):
            if item.strip():
                pairs.append((*_pair(item, "--model-args"), "--model-args"))
    seen: dict[str, str] = {}
    for key, _, flag in pairs:
        if key in seen:
            raise UsageError(f"{flag} {key}: given twice")
        seen[key] = flag
    return [(k, v) for k, v, _ in pairs]


def _split_top_level(text: str) -> list[str]:
    """``a=1,b={"x": 1, "y": 2}`` -> two items: commas inside brackets or quotes stay."""
    items: list[str] = []
    current: list[str] = []
    depth, quote = 0, ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        elif char == "," and depth == 0:
            items.append("".join(current))
            current = []
            continue
        current.append(char)
    items.append("".join(current))
    return items


def _pair(item: str, flag: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"{flag} {item!r}: expected KEY=VALUE")
    return key.strip(), value


def parse_model_args(
    backend: str,
    declared: Iterable[BackendOption],
    pairs: Sequence[tuple[str, Any]],
    *,
    refused: Mapping[str, str] | None = None,
    others: Callable[[], Mapping[str, Iterable[BackendOption]]] | None = None,
) -> dict[str, Any]:
    """Typed values of ``pairs`` for ``backend`` (text, or values already typed); a
    :class:`UsageError` for a key the backend refuses (``refused``: key -> why, e.g. vLLM's
    ``data_parallel_size``), for a key it does not declare (naming the valid ones and, from
    ``others()``, the backends it belongs to), or for a value of the wrong type."""
    options = {o.name: o for o in declared}
    out: dict[str, Any] = {}
    for key, text in pairs:
        if refused and key in refused:
            raise UsageError(f"--model-arg {key}: {refused[key]}")
        option = options.get(key)
        if option is None:
            elsewhere = others() if others else {}
            owners = sorted(name for name, opts in elsewhere.items() if any(o.name == key for o in opts))
            hint = f"; it is an option of {', '.join(owners)}" if owners else ""
            valid = ", ".join(sorted(options)) or "none"
            raise UsageError(
                f"--model-arg {key}: backend {backend} has no option {key!r}{hint} (its options: {valid})"
            )
        try:
            out[key] = option.parse(text)
        except ValueError as exc:
            shown = "" if option.variable else f"={text}"  # a key given by mistake is not echoed
            raise UsageError(f"--model-arg {key}{shown}: {backend} expects {exc}") from None
    for key in out:  # options that only make sense together are checked together
        needed = options[key].requires
        if needed and out[key] is not None and out.get(needed) is None:
            raise UsageError(f"--model-arg {key} needs --model-arg {needed} too ({options[key].help})")
    return out
