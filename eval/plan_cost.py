"""The plan in money and time (``eval reproduce --plan --price IN,OUT``): what each cell of a
paper's grid costs on a hosted model priced per million tokens, and how long it takes at the
provider's rate limits. Every figure is an estimate and ``plan.json`` records what it assumes:

* prompt tokens as the plan counts them (the model's tokenizer, else characters / 4, plus the
  tokens of each image);
* every answer runs to the cell's ``max_new_tokens`` (an upper bound: answers stop earlier);
* the response cache's expected hits are the generations that repeat one already planned
  (a greedy request whose prompt and images equal another's, in this cell or an earlier
  one: BORSCH's ``parallel`` config repeats the ``ru``/``uk`` dishes; a greedy cell asked under
  several seeds asks each prompt once; :mod:`culturebench.eval.response_cache`), and those
  whose answers the cache already holds from earlier runs of the same model (keyed as a run
  keys them, from the backend's description, which loads no model; a local model's weights
  are hashed);
* a batch endpoint costs ``1 - batch_discount`` of the price (OpenAI's and Anthropic's batch
  APIs: 50% off) and returns within its completion window (24 hours), so it is counted in money
  and not in time;
* the time at a rate limit is the larger of generations / ``rpm`` and tokens / ``tpm``.

Prices must be finite and at least 0, rates finite and above 0
(:mod:`culturebench.checked_numbers`); a price so large that a cost or the total overflows
(``--price 1e308,1``) is one line, never ``Infinity`` in ``plan.json``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from culturebench.checked_numbers import checked_number, finite_float, finite_total
from culturebench.errors import UsageError

DEFAULT_BATCH_DISCOUNT = 0.5


@dataclass(frozen=True)
class Price:
    """US dollars per million input and output tokens, and the batch discount."""

    input_per_m: float
    output_per_m: float
    batch_discount: float = DEFAULT_BATCH_DISCOUNT

    @classmethod
    def parse(cls, text: str, batch_discount: float = DEFAULT_BATCH_DISCOUNT) -> Price:
        """``2.50,10`` (input, output per million tokens)."""
        values = [finite_float(p) for p in text.split(",")]
        if len(values) != 2 or not all(v is not None and v >= 0 for v in values):
            raise UsageError(
                f"--price {text!r}: INPUT_PER_M,OUTPUT_PER_M in dollars, finite and from 0, e.g. 2.50,10"
            )
        share = "a share from 0 to 0.99, e.g. 0.5"
        discount = checked_number(batch_discount, "--batch-discount", minimum=0, maximum=0.99, what=share)
        return cls(float(values[0] or 0), float(values[1] or 0), discount)


@dataclass(frozen=True)
class RateLimit:
    """Requests and tokens per minute."""

    rpm: float | None = None
    tpm: float | None = None

    def __post_init__(self) -> None:
        for flag, value in (("--rpm", self.rpm), ("--tpm", self.tpm)):
            if value is not None:
                checked_number(value, flag, above=0, what="a finite number above 0")

    def minutes(self, requests: float, tokens: float) -> float | None:
        parts = []
        if self.rpm:
            parts.append(requests / self.rpm)
        if self.tpm:
            parts.append(tokens / self.tpm)
        return max(parts) if parts else None


def cell_cost(
    cell: Mapping[str, Any], price: Price | None, limit: RateLimit | None, hits: int
) -> dict[str, Any]:
    """Money and time of one cell of ``plan.json`` (``cells[i]``) with ``hits`` generations
    expected from the cache."""
    generations = cell.get("generations")
    prompt = cell.get("prompt_tokens_planned")
    if not generations or prompt is None:
        return {"cache_hits_expected": hits if generations else None}
    share = min(1.0, hits / generations)
    sent_prompt = prompt * (1 - share)
    sent_output = (generations - hits) * int(cell.get("max_new_tokens") or 0)
    out: dict[str, Any] = {"cache_hits_expected": hits}
    if price is not None:
        full = (
            prompt * price.input_per_m
            + generations * int(cell.get("max_new_tokens") or 0) * price.output_per_m
        ) / 1e6
        cached = (sent_prompt * price.input_per_m + sent_output * price.output_per_m) / 1e6
        where = f"--price {price.input_per_m:g},{price.output_per_m:g}: cell {cell.get('cell')}"
        out.update(
            cost_usd=round(finite_total(full, where), 2),
            cost_usd_with_cache=round(finite_total(cached, where), 2),
            cost_usd_batch_with_cache=round(cached * (1 - price.batch_discount), 2),
        )
    if limit is not None:
        minutes = limit.minutes(generations - hits, sent_prompt + sent_output)
        if minutes is not None:
            finite_total(minutes, f"--rpm/--tpm: cell {cell.get('cell')}")
        out["hours_at_rate_limit"] = round(minutes / 60, 2) if minutes is not None else None
    return out


def expected_hits(
    cells: Sequence[Any],
    requests_of: Mapping[str, Sequence[Any]],
    held: Callable[[Any, Sequence[Any]], list[int]] | None = None,
) -> dict[str, int]:
    """Per cell, the generations the cache is expected to answer: those it already holds
    (``held(cell, requests)``: per request, how many of its generations, one per seed, are
    in the cache; :func:`held_in_cache`), and a greedy generation whose content (prompt,
    images) was planned before, in this cell or an earlier one."""
    from culturebench.hashing import sha256_bytes, sha256_text

    seen: set[str] = set()
    out: dict[str, int] = {}
    for cell in cells:
        requests = requests_of.get(cell.name) or []
        copies = max(1, len(cell.seeds) if cell.seeds else 1)
        stored = held(cell, requests) if held is not None and requests else [0] * len(requests)
        if float(cell.temperature or 0) != 0.0:  # sampled: every (request, seed) is its own
            out[cell.name] = sum(stored)
            continue
        hits = 0
        for request, kept in zip(requests, stored, strict=True):
            key = sha256_text(request.prompt + "\x00" + ",".join(sha256_bytes(i) for i in request.images))
            if key in seen or kept:
                hits += copies
            else:
                hits += copies - 1
            seen.add(key)
        out[cell.name] = hits
    return out


def held_in_cache(
    description: Mapping[str, Any], cache: Any, seed: int
) -> Callable[[Any, Sequence[Any]], list[int]]:
    """``held`` for :func:`expected_hits`: how many of each request's generations (one per
    seed of the cell, or one with ``seed``) the response cache holds for the model
    ``description`` (its ``describe()``), sampled with the cell's settings."""
    from culturebench.eval.backends.base import SamplingParams
    from culturebench.eval.response_cache import model_identity, request_key

    model = model_identity(description)

    def held(cell: Any, requests: Sequence[Any]) -> list[int]:
        counts = [0] * len(requests)
        for one_seed in cell.seeds or (seed,):
            sampling = SamplingParams(cell.max_new_tokens, cell.temperature, int(one_seed)).to_dict()
            keys = [request_key(model, request, sampling) for request in requests]
            found = cache.get_many([k for k in keys if k is not None])
            for i, key in enumerate(keys):
                counts[i] += key is not None and key in found
        return counts

    return held


def money_section(
    cells: Sequence[Any],
    document: dict[str, Any],
    requests_of: Mapping[str, Sequence[Any]],
    price: Price | None,
    limit: RateLimit | None,
    held: Callable[[Any, Sequence[Any]], list[int]] | None = None,
) -> None:
    """Add each cell's money and time to ``document`` (``plan.json``; in place), their totals
    and what they assume; ``held``: what the response cache already holds
    (:func:`held_in_cache`), None when it is off or the model cannot be described."""
    hits = expected_hits(cells, requests_of, held)
    costs = []
    for cell in document["cells"]:
        cost = cell_cost(cell, price, limit, hits.get(cell["cell"], 0))
        cell.update(cost)
        costs.append(cost)
    document["total"].update(totals(costs))
    document["money_assumes"] = {
        "price_usd_per_million_tokens": (
            {"input": price.input_per_m, "output": price.output_per_m} if price is not None else None
        ),
        "batch_discount": price.batch_discount if price is not None else None,
        "rate_limit": {"rpm": limit.rpm, "tpm": limit.tpm} if limit is not None else None,
        "output_tokens": "every answer runs to the cell's max_new_tokens (an upper bound)",
        "cache_hits": (
            "generations whose answer the response cache holds from earlier runs of this model, "
            "and greedy generations that repeat a planned prompt and images"
            if held is not None
            else "greedy generations that repeat a planned prompt and images (the response cache "
            "was off or the model could not be described: earlier runs' answers are not counted)"
        ),
        "batch": "the batch price is the price times (1 - batch_discount); a batch returns within "
        "its completion window, so it is not counted in hours",
        "estimate": True,
    }


def totals(costs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The sums over cells of every money and time figure (None where no cell has one)."""
    keys = (
        "cache_hits_expected",
        "cost_usd",
        "cost_usd_with_cache",
        "cost_usd_batch_with_cache",
        "hours_at_rate_limit",
    )
    out: dict[str, Any] = {}
    for key in keys:
        values = [c[key] for c in costs if c.get(key) is not None]
        out[key] = round(finite_total(sum(values), f"the plan's total {key}"), 2) if values else None
    return out
