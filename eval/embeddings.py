"""Image (and text) embeddings with CLIP or DINOv2 through transformers ``AutoModel`` /
``AutoProcessor``, batched, cached on disk by image sha256 and model identity.

- CLIP (``model_type`` ``clip``): ``get_image_features`` / ``get_text_features``, the
  projected embeddings (what CLIPScore and the World Wide Dishes App. G use).
- DINOv2 (``dinov2``): the [CLS] token of the last hidden state (what BORSCH §5 uses).

The cache key is the model identity (model id or folder, revision, and for a local folder the
sha256 of its weights) plus the image's sha256, so another model, another revision or changed
weights never reuse a vector. One ``.npy`` per (model, image), written atomically.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from culturebench.errors import CultureBenchError
from culturebench.eval.backends.base import ModelLoadError, weights_sha256

KINDS = ("clip", "dinov2")


class EmbeddingError(CultureBenchError):
    """An image cannot be embedded (not an image), or the model cannot embed text."""


class EmbeddingCache:
    """Vectors of one model, one file per image sha256 under ``root/<model key>/``."""

    def __init__(self, root: str | Path, model_key: str) -> None:
        self.folder = Path(root) / model_key

    def _path(self, sha: str) -> Path:
        return self.folder / sha[:2] / f"{sha}.npy"

    def get(self, sha: str) -> np.ndarray | None:
        path = self._path(sha)
        if not path.is_file():
            return None
        try:
            return np.load(path, allow_pickle=False)
        except (OSError, ValueError):  # a torn or foreign file: recompute it
            return None

    def put(self, sha: str, vector: np.ndarray) -> None:
        from culturebench.atomic import write_bytes_atomic

        buffer = io.BytesIO()
        np.save(buffer, np.asarray(vector, dtype=np.float32), allow_pickle=False)
        write_bytes_atomic(self._path(sha), buffer.getvalue())


def default_cache_dir() -> Path:
    """``<culturebench cache>/embeddings``."""
    from culturebench.cache_dirs import cache_root

    return cache_root() / "embeddings"


class ImageEmbedder:
    """Embeds images (and, for CLIP, texts) with one model.

    ``model``: a Hub id or a local folder; ``revision`` pins a Hub model. ``cache_dir`` None
    uses :func:`default_cache_dir`; ``cache=False`` turns caching off (benchmarks)."""

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        device: str | None = None,
        batch_size: int = 32,
        cache_dir: str | Path | None = None,
        cache: bool = True,
    ) -> None:
        self.model_name = model
        self.revision = revision
        self.device = device
        self.batch_size = batch_size
        self._cache_dir = Path(cache_dir) if cache_dir else None
        self._use_cache = cache
        self._loaded: tuple[Any, Any] | None = None
        self._kind: str | None = None
        self._weights: str | bool | None = False  # False = not computed yet

    # ------------------------------------------------------------------ identity
    @property
    def kind(self) -> str:
        """``clip`` or ``dinov2`` (from the model's config)."""
        if self._kind is None:
            from transformers import AutoConfig

            try:
                config = AutoConfig.from_pretrained(self.model_name, revision=self.revision)
            except Exception as exc:
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
                raise ModelLoadError(f"cannot load embedding model {self.model_name!r}: {first}") from None
            if config.model_type not in KINDS:
                raise ModelLoadError(
                    f"{self.model_name!r} is a {config.model_type!r} model; image embeddings need "
                    f"one of {', '.join(KINDS)}"
                )
            self._kind = str(config.model_type)
        return self._kind

    def identity(self) -> dict[str, Any]:
        """What names this model's vectors (recorded in provenance; keys the cache)."""
        if self._weights is False:
            self._weights = weights_sha256(self.model_name)
        return {
            "model": self.model_name,
            "model_revision": self.revision,
            "weights_sha256": self._weights,
            "kind": self.kind,
            "embedding": "projected image/text features"
            if self.kind == "clip"
            else "[CLS] of last hidden state",
        }

    def _cache(self, what: str) -> EmbeddingCache | None:
        if not self._use_cache:
            return None
        key = hashlib.sha256(json.dumps([self.identity(), what], sort_keys=True).encode()).hexdigest()[:24]
        return EmbeddingCache(self._cache_dir or default_cache_dir(), key)

    # ------------------------------------------------------------------ model
    def load(self) -> tuple[Any, Any]:
        """(model, processor), loaded once, in eval mode on the chosen device."""
        if self._loaded is None:
            import torch
            from transformers import AutoModel, AutoProcessor

            kind = self.kind
            try:
                model = AutoModel.from_pretrained(self.model_name, revision=self.revision)
                processor = AutoProcessor.from_pretrained(self.model_name, revision=self.revision)
            except Exception as exc:
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
                raise ModelLoadError(f"cannot load {kind} model {self.model_name!r}: {first}") from None
            device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
            self._loaded = (model.to(device).eval(), processor)
        return self._loaded

    def _forward_images(self, images: list[Any]) -> np.ndarray:
        import torch

        model, processor = self.load()
        inputs = processor(images=images, return_tensors="pt").to(model.device)
        with torch.inference_mode():
            if self.kind == "clip":
                features = model.get_image_features(pixel_values=inputs["pixel_values"])
                features = getattr(features, "pooler_output", features)
            else:
                features = model(pixel_values=inputs["pixel_values"]).last_hidden_state[:, 0]
        return features.float().cpu().numpy()

    # ------------------------------------------------------------------ public
    def embed_images(
        self,
        images: Sequence[bytes],
        *,
        names: Sequence[str] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> np.ndarray:
        """One row per encoded image (same order); cached vectors are reused. ``names`` label
        images in errors (default: their position)."""
        from PIL import Image, UnidentifiedImageError

        from culturebench.hashing import sha256_bytes

        shas = [sha256_bytes(data) for data in images]
        cache = self._cache("image")
        vectors: dict[str, np.ndarray | None] = {}
        todo: list[int] = []  # first position of each sha256 not cached yet
        for i, sha in enumerate(shas):
            if sha in vectors:
                continue
            cached = cache.get(sha) if cache else None
            vectors[sha] = cached  # None until computed
            if cached is None:
                todo.append(i)
        counts = Counter(shas)
        done = len(images) - sum(counts[shas[i]] for i in todo)
        if progress:
            progress(done, len(images))
        for start in range(0, len(todo), self.batch_size):
            batch = todo[start : start + self.batch_size]
            decoded = []
            for i in batch:
                try:
                    decoded.append(Image.open(io.BytesIO(images[i])).convert("RGB"))
                except (UnidentifiedImageError, OSError):
                    label = names[i] if names else f"image {i}"
                    raise EmbeddingError(f"{label}: not a readable image") from None
            for i, vector in zip(batch, self._forward_images(decoded), strict=True):
                vectors[shas[i]] = vector
                if cache:
                    cache.put(shas[i], vector)
            done += sum(counts[shas[i]] for i in batch)
            if progress:
                progress(done, len(images))
        if not images:
            return np.zeros((0, 0), dtype=np.float32)
        done_vectors = [vectors[sha] for sha in shas]
        if any(v is None for v in done_vectors):  # pragma: no cover - every batch fills its vectors
            raise RuntimeError("an image was left without a vector")
        return np.stack([v for v in done_vectors if v is not None]).astype(np.float32)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """CLIP text-tower embeddings (projected), one row per text."""
        import torch

        if self.kind != "clip":
            raise EmbeddingError(f"{self.model_name!r} is a {self.kind} model: it has no text tower")
        model, processor = self.load()
        inputs = processor(text=list(texts), return_tensors="pt", padding=True, truncation=True).to(
            model.device
        )
        with torch.inference_mode():
            features = model.get_text_features(
                input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"]
            )
            features = getattr(features, "pooler_output", features)
        return features.float().cpu().numpy()


def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise cosine similarity of the rows of ``a`` and ``b``."""
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return a @ b.T
