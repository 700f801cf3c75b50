"""How ``eval reproduce --plan`` prints a plan: the work per cell (requests, tokens, GPU-hours)
and, with ``--price`` or ``--rpm/--tpm``, its money and time (:mod:`culturebench.eval.plan_cost`)."""

from __future__ import annotations

from culturebench.cli.output import console, fit_table, print_fitted


def num(value, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def print_plan_table(document: dict, grid) -> None:
    """The plan as a table: per cell the requests, images, prompt size, new tokens, GPU-hours."""
    estimated = not document["tokens_counted"]
    model = f" for {document['model']}" if document["model"] else ""
    title = f"{document['dataset']}: the paper's grid{model}"

    rows = []
    for p in document["cells"]:
        seeds = str(len(p["seeds"])) if p["seeds"] else "1"
        rows.append([
            p["cell"], p["kind"], ",".join(p["langs"]), num(p["units"]), num(p["requests"]), seeds,
            num(p["generations"]), num(p["images_per_request"], 2), num(p["prompt_tokens_planned"]),
            num(p["max_new_tokens"]), num(p["gpu_hours"], 2),
        ])  # fmt: skip
    total = document["total"]
    rows.append(["total", "", "", "", num(total["requests"]), "", num(total["generations"]), "", "", "",
                 num(total["gpu_hours"], 2)])  # fmt: skip
    columns = [("cell", "word"), ("kind", "word"), ("langs", "word"), ("units", "num"), ("requests", "num"),
               ("seeds", "num"), ("generations", "num"), ("img per req", "num"),
               ("prompt tokens" + (" (est.)" if estimated else ""), "num"), ("max new", "num"),
               ("GPU-h", "num")]  # fmt: skip
    drop = ("requests", "kind", "seeds", "langs", "img per req")
    print_fitted(*fit_table(title, columns, rows, drop=drop), " (all in plan.json)")
    for p in document["cells"]:
        if p["note"]:
            console.print(f"  {p['cell']}: {p['note']}")
    images = any(p["images_per_request"] for p in document["cells"])
    per_image = f"; {document['image_tokens_per_image']} per image (--image-tokens)" if images else ""
    console.print(f"Prompt tokens: {document['tokens']}{per_image}.")
    console.print(f"GPU-hours: {document['throughput_source']}; {document['gpu_hours_assume']}.")
    if grid.why:
        console.print(f"Grid: {grid.why}")


def print_plan_money(document: dict) -> None:
    """Per cell: the response cache's expected hits, the cost without and with the cache and
    with a batch endpoint, the hours at the rate limit; then the totals and what they assume."""
    assumes = document["money_assumes"]
    rows = [
        [
            p["cell"], num(p.get("generations")), num(p.get("cache_hits_expected")), _usd(p.get("cost_usd")),
            _usd(p.get("cost_usd_with_cache")), _usd(p.get("cost_usd_batch_with_cache")),
            num(p.get("hours_at_rate_limit"), 2),
        ]
        for p in document["cells"]
    ]  # fmt: skip
    total = document["total"]
    rows.append(
        [
            "total",
            num(total["generations"]),
            num(total.get("cache_hits_expected")),
            _usd(total.get("cost_usd")),
            _usd(total.get("cost_usd_with_cache")),
            _usd(total.get("cost_usd_batch_with_cache")),
            num(total.get("hours_at_rate_limit"), 2),
        ]
    )
    columns = [("cell", "word"), ("generations", "num"), ("cache hits", "num"), ("cost", "num"),
               ("with cache", "num"), ("batch", "num"), ("hours at limit", "num")]  # fmt: skip
    price = assumes["price_usd_per_million_tokens"]
    title = "the plan in money" + (
        f" at ${price['input']:g}/${price['output']:g} per M tokens" if price else ""
    )
    print_fitted(
        *fit_table(title, columns, rows, drop=("generations", "hours at limit")), " (all in plan.json)"
    )
    discount = assumes["batch_discount"]
    batch = f"batch: {discount:.0%} off; " if discount is not None else ""
    console.print(
        f"Estimates: {assumes['output_tokens']}; cache hits: {assumes['cache_hits']}; {batch}"
        "prompt tokens as counted above."
    )


def _usd(value) -> str:
    return "-" if value is None else f"${value:,.2f}"
