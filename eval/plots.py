"""Plots shared by every report: confusion matrices with a colour scale and legible counts,
grouped bars, heat maps. A plot with nothing to show says so on the image instead of
drawing an empty chart. PNGs carry no software/date metadata, so reruns give equal bytes."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    _pyplot().close(fig)


def no_data(path: Path, title: str, reason: str = "no data to plot") -> Path:
    """A small image that states there was nothing to plot (and why)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 2))
    ax.axis("off")
    ax.set_title(title)
    ax.text(0.5, 0.5, reason, ha="center", va="center", fontsize=12, color="0.35")
    _save(fig, path)
    return path


def plot_confusion(
    confusion: Mapping[str, Any],
    path: Path,
    title: str,
    *,
    row_label: str = "true",
    col_label: str = "predicted",
) -> Path:
    """Row-normalised confusion matrix: colour = share of the row, with a colour bar; every
    non-zero cell shows its count in a colour readable on its background."""
    matrix = confusion["matrix"]
    if not matrix or not any(any(row) for row in matrix):
        return no_data(path, title, "no predictions to compare")
    plt = _pyplot()
    norm = [[v / max(1, sum(row)) for v in row] for row in matrix]
    size = max(5.0, 0.45 * len(confusion["columns"]) + 2)
    fig, ax = plt.subplots(figsize=(size + 1.2, size))
    image = ax.imshow(norm, cmap="Blues", vmin=0, vmax=1)
    bar = fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    bar.set_label("share of the row")
    ax.set_xticks(range(len(confusion["columns"])), confusion["columns"], rotation=90)
    ax.set_yticks(range(len(confusion["labels"])), confusion["labels"])
    ax.set_xlabel(col_label)
    ax.set_ylabel(row_label)
    ax.set_title(title)
    for i, row in enumerate(matrix):
        for j, value in enumerate(row):
            if value:
                colour = "white" if norm[i][j] > 0.5 else "black"
                ax.text(j, i, str(value), ha="center", va="center", fontsize=8, color=colour)
    _save(fig, path)
    return path


def plot_grouped_bars(
    series: Mapping[str, Sequence[float | None]],
    groups: Sequence[str],
    path: Path,
    *,
    title: str,
    ylabel: str,
    ylim: tuple[float, float] | None = (0.0, 1.0),
) -> Path:
    """One bar per (series, group); ``None`` values are drawn as missing, and a chart
    without any value states that it has no data."""
    if not groups or all(v is None for values in series.values() for v in values):
        return no_data(path, title)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(4.5, 1.3 * len(groups) + 2), 3.5))
    width = 0.8 / max(1, len(series))
    for k, (label, values) in enumerate(series.items()):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(groups))]
        ax.bar(xs, [v or 0.0 for v in values], width, label=label)
    ax.set_xticks(range(len(groups)), groups)
    if ylim:
        ax.set_ylim(*ylim)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    _save(fig, path)
    return path


def plot_heatmap(
    values: Sequence[Sequence[float | None]],
    rows: Sequence[str],
    cols: Sequence[str],
    path: Path,
    *,
    title: str,
    vmin: float,
    vmax: float,
    label: str,
    texts: Sequence[Sequence[str]] | None = None,
    cmap: str = "viridis",
    axis_labels: tuple[str, str] = ("", ""),
) -> Path:
    """A labelled heat map with a colour bar; each cell shows ``texts`` (default: its value),
    blank where the value is missing."""
    if not rows or not cols or all(v is None for row in values for v in row):
        return no_data(path, title)
    plt = _pyplot()
    data = [[float("nan") if v is None else v for v in row] for row in values]
    fig, ax = plt.subplots(figsize=(1.1 * len(cols) + 3, 0.6 * len(rows) + 2))
    image = ax.imshow(data, cmap=cmap, vmin=vmin, vmax=vmax)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04).set_label(label)
    ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right")
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xlabel(axis_labels[1])
    ax.set_ylabel(axis_labels[0])
    ax.set_title(title)
    for i, row in enumerate(values):
        for j, v in enumerate(row):
            if v is not None:
                text = texts[i][j] if texts is not None else f"{v:.2f}"
                ax.text(j, i, text, ha="center", va="center", fontsize=8)
    _save(fig, path)
    return path


def plot_stacked_shares(
    panels: Mapping[str, Mapping[str, Mapping[str, float]]],
    labels: Mapping[str, str],
    path: Path,
    *,
    title: str,
) -> Path:
    """One panel per key of ``panels`` (e.g. a text-to-image model), one horizontal bar per
    group (e.g. a region) stacked by answer share; ``labels`` maps answer keys to legend
    text, in legend order. Shares of a bar should sum to 1."""
    if not panels or not any(panels.values()):
        return no_data(path, title)
    plt = _pyplot()
    groups = list(dict.fromkeys(g for rows in panels.values() for g in rows))
    fig, axes = plt.subplots(
        1, len(panels), figsize=(4.2 * len(panels) + 2, 0.45 * len(groups) + 1.8), sharey=True, squeeze=False
    )
    colours = plt.get_cmap("tab20")
    for ax, (panel, rows) in zip(axes[0], panels.items(), strict=True):
        left = [0.0] * len(groups)
        for k, (key, text) in enumerate(labels.items()):
            widths = [float(rows.get(g, {}).get(key, 0.0)) for g in groups]
            colour = "0.65" if key == "unparsed" else colours(k % 20)
            ax.barh(range(len(groups)), widths, left=left, color=colour, label=text)
            left = [a + b for a, b in zip(left, widths, strict=True)]
        ax.set_yticks(range(len(groups)), groups)
        ax.set_xlim(0, 1)
        ax.invert_yaxis()
        ax.set_title(panel)
        ax.set_xlabel("share of images")
    axes[0][-1].legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=8)
    fig.suptitle(textwrap.fill(title, 70), fontsize=10)
    _save(fig, path)
    return path


def plot_scatter(
    series: Mapping[str, Sequence[tuple[float, float]]],
    path: Path,
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    limits: tuple[float, float] | None = (0.0, 1.0),
) -> Path:
    """One colour per series of (x, y) points, both axes over ``limits`` (the paper's 0-1)."""
    if not any(series.values()):
        return no_data(path, title)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4.8, 4.2))
    for label, points in series.items():
        if points:
            ax.scatter(
                [p[0] for p in points],
                [p[1] for p in points],
                s=14,
                alpha=0.7,
                label=f"{label} (n={len(points)})",
            )
    if limits:
        ax.set_xlim(*limits)
        ax.set_ylim(*limits)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(textwrap.fill(title, 50), fontsize=10)
    ax.legend(fontsize=8)
    _save(fig, path)
    return path
