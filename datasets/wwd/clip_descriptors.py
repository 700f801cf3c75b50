"""App. G.1 of the World Wide Dishes paper: weighted cosine similarity of generated images
with positive and negative food descriptors, per continent x model, from CLIP embeddings
(the authors' published ones in ``clip_probing/``, or any of the same layout).

Per image i: S(i, d) = cos(v_i, t_d); S+ = mean over positive d of +S(i, d); S- = mean
over negative d of -S(i, d). The paper's text leaves two things open; the readings chosen:

* **Net score.** Its formula writes S_net = S+ - S-, but S- is already weighted by -1, so
  taken literally the net score adds both similarities (positive and negative descriptors
  would raise it alike). The text says "the net difference between these averages" of
  positive and negative association, so this module uses S_net = S+ + S- =
  mean cos(positive) - mean cos(negative). ``literal=True`` gives the formula as printed.
* **Normalisation range.** "normalised to range between -1 and 1" by min-max; the min and
  max are taken over every image scored together (all continents and models), so scores
  stay comparable across groups.

Result: per (continent, model) the mean normalised score, its SEM and n.
"""

from __future__ import annotations

import configparser
import csv
import math
from pathlib import Path
from typing import Any

import numpy as np

from culturebench.errors import Location, SourceError
from culturebench.inputs import csv_reader


def _read_matrix(path: Path) -> tuple[list[str], np.ndarray]:
    """Row names and the embedding matrix of a CSV (first column = name, then dimensions)."""
    if not path.is_file():
        raise SourceError(Location(str(path)), "no such file")
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv_reader(handle))
    names, values = [], []
    for number, row in enumerate(rows[1:], start=2):
        try:
            values.append([float(x) for x in row[1:]])
        except ValueError:
            raise SourceError(Location(path.name, number), "embedding values must be numbers") from None
        names.append(row[0])
    matrix = np.asarray(values, dtype=float)
    if matrix.ndim != 2 or not len(names):
        raise SourceError(Location(path.name), "no embeddings")
    return names, matrix


def read_descriptors(folder: Path) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """(positive, negative, their text embeddings) from ``config.ini`` and
    ``descriptors_embeddings.csv`` (rows named with the prompt, e.g. "a photo of clean food")."""
    if not (folder / "config.ini").is_file():
        raise SourceError(Location(str(folder / "config.ini")), "no such file (give the clip_probing folder)")
    config = configparser.ConfigParser()
    config.read(folder / "config.ini", encoding="utf-8")
    try:
        positive = [d.strip() for d in config["descriptors"]["positive"].split(",")]
        negative = [d.strip() for d in config["descriptors"]["negative"].split(",")]
        template = config["prompt"]["image_prompt"]
    except KeyError as exc:
        raise SourceError(Location("config.ini", field=str(exc)), "missing descriptor setting") from None
    names, matrix = _read_matrix(folder / "descriptors_embeddings.csv")
    index = {name: i for i, name in enumerate(names)}

    def rows(descriptors: list[str]) -> np.ndarray:
        missing = [d for d in descriptors if template.format(descriptor=d) not in index]
        if missing:
            raise SourceError(Location("descriptors_embeddings.csv"), f"no embedding for {missing}")
        return matrix[[index[template.format(descriptor=d)] for d in descriptors]]

    return positive, negative, rows(positive), rows(negative)


def _unit(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def read_published(folder: Path) -> tuple[list[tuple[str, str, np.ndarray]], np.ndarray, np.ndarray]:
    """(groups of (continent, model, image embeddings), positive and negative descriptor text
    embeddings) from a folder laid out as the authors' ``clip_probing`` experiment."""
    _pos_names, _neg_names, positive, negative = read_descriptors(folder)
    groups: list[tuple[str, str, np.ndarray]] = []
    continents = folder / "continents"
    if not continents.is_dir():
        raise SourceError(Location(str(continents)), "no such folder (give the clip_probing folder)")
    for continent_dir in sorted(p for p in continents.iterdir() if p.is_dir()):
        for model_dir in sorted(p for p in continent_dir.iterdir() if p.is_dir()):
            _names, images = _read_matrix(model_dir / "image_embeddings.csv")
            groups.append((continent_dir.name, model_dir.name, images))
    if not groups:
        raise SourceError(Location(str(continents)), "no continent/model embedding folders")
    return groups, positive, negative


def score_groups(
    groups: list[tuple[str, str, np.ndarray]],
    positive: np.ndarray,
    negative: np.ndarray,
    *,
    literal: bool = False,
) -> list[dict[str, Any]]:
    """One row per (continent, model) group: mean normalised net score, its SEM and n."""
    pos, neg = _unit(positive), _unit(negative)
    nets = []
    for _c, _m, images in groups:
        unit = _unit(images)
        s_pos = (unit @ pos.T).mean(axis=1)  # S+: weight +1
        s_neg = -(unit @ neg.T).mean(axis=1)  # S-: weight -1
        nets.append(s_pos - s_neg if literal else s_pos + s_neg)
    every = np.concatenate(nets)
    low, high = float(every.min()), float(every.max())
    span = high - low
    out = []
    for (continent, model, _images), net in zip(groups, nets, strict=True):
        # one image in all (or identical scores): no spread to normalise by, centred at 0
        normalised = (net - low) / span * 2 - 1 if span > 0 else np.zeros_like(net)
        n = len(normalised)
        sem = float(normalised.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0
        out.append(
            {"continent": continent, "model": model, "mean": float(normalised.mean()), "sem": sem, "n": n}
        )
    return out


def scores(folder: Path, *, literal: bool = False) -> list[dict[str, Any]]:
    """One row per (continent, model) of a published-layout folder: mean, SEM, n."""
    groups, positive, negative = read_published(folder)
    return score_groups(groups, positive, negative, literal=literal)


def write_scores(rows: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """``descriptor_scores.csv`` (continent, model, mean, sem, n) and a Fig. 8-style plot."""
    from culturebench.eval.plots import plot_grouped_bars

    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "descriptor_scores.csv"
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(
            handle, fieldnames=["continent", "model", "mean", "sem", "n"], lineterminator="\n"
        )
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "mean": f"{row['mean']:.4f}", "sem": f"{row['sem']:.4f}"})
    continents = list(dict.fromkeys(r["continent"] for r in rows))
    models = list(dict.fromkeys(r["model"] for r in rows))
    value = {(r["continent"], r["model"]): r["mean"] for r in rows}
    plot = plot_grouped_bars(
        {m: [value.get((c, m)) for c in continents] for m in models},
        continents,
        out_dir / "descriptor_scores.png",
        title="Food presentation association (App. G.1; positive > 0 > negative)",
        ylabel="mean normalised weighted cosine",
        ylim=(-1.0, 1.0),
    )
    return [path, plot]
