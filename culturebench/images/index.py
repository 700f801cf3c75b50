"""Near-duplicate search over 64-bit perceptual hashes with multi-index hashing.

Each hash is cut into ``m`` chunks. Write ``t = m * r + a`` with ``0 <= a < m``. If two hashes
differ in at most ``t`` bits, then one of the first ``a + 1`` chunks differs in at most ``r``
bits or one of the other chunks differs in at most ``r - 1`` bits (otherwise the distance would
be at least ``(a + 1)(r + 1) + (m - a - 1) r = t + 1``; Norouzi, Punjani and Fleet, "Fast
search in Hamming space with multi-index hashing", CVPR 2012). So a query enumerates, for
every chunk, all values within that chunk's radius of its own chunk, collects the hashes
stored under those values, and verifies the true distance: every hash within ``t`` is found
(recall 1.0), and only candidates are compared.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

BITS = 64


def _flips(width: int, radius: int) -> list[int]:
    """All bit masks of ``width`` bits with at most ``radius`` bits set."""
    masks = [0]
    for r in range(1, radius + 1):
        for bits in combinations(range(width), r):
            mask = 0
            for b in bits:
                mask |= 1 << b
            masks.append(mask)
    return masks


def brute_force(hashes: np.ndarray, query: int, threshold: int) -> np.ndarray:
    """Indices of ``hashes`` within ``threshold`` bits of ``query`` (vectorised scan)."""
    distances = np.bitwise_count(hashes ^ np.uint64(query))
    return np.flatnonzero(distances <= threshold)


class HashIndex:
    """Multi-index hash table over uint64 hashes for Hamming-radius queries."""

    def __init__(self, hashes: np.ndarray, threshold: int, chunks: int = 4, batch: int = 128) -> None:
        if BITS % chunks:
            raise ValueError("chunks must divide 64")
        self.hashes = np.asarray(hashes, dtype=np.uint64)
        self.threshold = threshold
        self.chunks = chunks
        self.batch = batch  # queries per vectorised pass: keeps the temporaries in cache
        self.width = BITS // chunks
        radius, extra = divmod(threshold, chunks)
        self.radii = [radius] * (extra + 1) + [radius - 1] * (chunks - extra - 1)
        self._masks = [np.asarray(_flips(self.width, r), dtype=np.uint64) for r in self.radii]
        if self.width > 24:
            raise ValueError("chunks of more than 24 bits make the dense bucket tables too large")
        # Per chunk: bucket sizes and starts indexed by chunk value, and the ids and full hashes
        # sorted by chunk value, so a bucket's candidates are read contiguously.
        self._dense: list[tuple[np.ndarray, ...]] = []
        mask = np.uint64((1 << self.width) - 1)
        for c in range(chunks):
            if self.radii[c] < 0:  # the pigeonhole bound never needs this chunk
                self._dense.append(())
                continue
            values = (self.hashes >> np.uint64(c * self.width)) & mask
            order = np.argsort(values, kind="stable")
            counts = np.bincount(values.astype(np.int64), minlength=1 << self.width)
            starts = np.cumsum(counts) - counts
            self._dense.append((counts, starts, order, self.hashes[order]))

    def __len__(self) -> int:
        return len(self.hashes)

    def query(self, query: int) -> np.ndarray:
        """Sorted indices of stored hashes within ``threshold`` bits of ``query``."""
        return self.query_many(np.array([query], dtype=np.uint64))[1]

    def query_many(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """All (query index, stored index) pairs within ``threshold`` bits, sorted by query then
        stored index. Queries go through in batches of ``batch``, each vectorised: one pass per
        chunk over dense bucket tables (counts and starts per chunk value), probing every
        query's neighbour values at once."""
        q = np.asarray(queries, dtype=np.uint64)
        parts = [self._query_batch(q[s : s + self.batch]) for s in range(0, len(q), self.batch)]
        if not parts:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        starts = range(0, len(q), self.batch)
        return (
            np.concatenate([qi + s for (qi, _), s in zip(parts, starts, strict=True)]),
            np.concatenate([ii for _, ii in parts]),
        )

    def _query_batch(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mask = np.uint64((1 << self.width) - 1)
        pairs_q, pairs_i = [], []
        for c, dense in enumerate(self._dense):
            if not dense:
                continue
            counts, starts, order, sorted_hashes = dense
            flips = self._masks[c]
            chunk = (q >> np.uint64(c * self.width)) & mask
            probe = (chunk[:, None] ^ flips[None, :]).ravel()
            owner = np.repeat(np.arange(len(q)), len(flips))
            n = counts[probe]
            keep = n > 0
            probe, owner, n = probe[keep], owner[keep], n[keep]
            if not len(n):
                continue
            first = starts[probe]
            total = int(n.sum())
            own = np.repeat(owner, n)
            at = np.repeat(first - (np.cumsum(n) - n), n) + np.arange(total)
            close = np.bitwise_count(sorted_hashes[at] ^ q[own]) <= self.threshold
            pairs_q.append(own[close])
            pairs_i.append(order[at[close]])
        if not pairs_q:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        qi, ii = np.concatenate(pairs_q), np.concatenate(pairs_i)
        key = np.unique(qi.astype(np.int64) * len(self.hashes) + ii)
        return key // len(self.hashes), key % len(self.hashes)
