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
        if self.width > 16:
            raise ValueError("chunks of more than 16 bits make the dense bucket tables too large")
        self._masks = [np.asarray(_flips(self.width, r), dtype=np.uint64) for r in self.radii]
        # Per used chunk (one row each): bucket sizes and bounds indexed by chunk value, and the
        # ids and full hashes sorted by chunk value, so a bucket's candidates are read
        # contiguously. The numpy path reads rows of these arrays, the compiled kernel the whole.
        # Chunk values are sorted as uint16 (uint8 for narrower chunks): numpy's stable argsort
        # is a radix sort for those types, ~15x faster than sorting them as uint64 (at 10^6
        # hashes ~17 ms instead of ~250 ms per table), and the order is the same.
        self._dense: list[tuple[np.ndarray, ...]] = []
        key_type = np.uint8 if self.width <= 8 else np.uint16
        mask = np.uint64((1 << self.width) - 1)
        used = [c for c in range(chunks) if self.radii[c] >= 0]  # others: the bound never needs them
        size, n = 1 << self.width, len(self.hashes)
        self._used = used
        self._counts = np.empty((len(used), size), dtype=np.int64)
        self._bounds = np.empty((len(used), size + 1), dtype=np.int64)
        self._order = np.empty((len(used), n), dtype=np.int64)
        self._sorted = np.empty((len(used), n), dtype=np.uint64)
        fill = _numba_fill() if n >= BUILD_KERNEL_MIN else None
        if fill is not None:  # one counting sort per table, straight into the tables: no temporaries
            shifts = np.asarray([c * self.width for c in used], dtype=np.int64)
            fill(self.hashes, shifts, mask, self._bounds, self._order, self._sorted)
            np.subtract(self._bounds[:, 1:], self._bounds[:, :-1], out=self._counts)
        for c in range(chunks):
            if c not in used:
                self._dense.append(())
                continue
            row = used.index(c)
            if fill is None:  # numpy: one table at a time
                values = self.hashes >> np.uint64(c * self.width)
                if self.width not in (8, 16):  # the cast to key_type drops the higher bits itself
                    values &= mask
                values = values.astype(key_type)
                self._order[row] = np.argsort(values, kind="stable")
                self._counts[row] = np.bincount(values, minlength=size)
                self._bounds[row, 0] = 0
                np.cumsum(self._counts[row], out=self._bounds[row, 1:])
                np.take(self.hashes, self._order[row], out=self._sorted[row])
            self._dense.append(
                (self._counts[row], self._bounds[row, :-1], self._order[row], self._sorted[row])
            )

    def __len__(self) -> int:
        return len(self.hashes)

    def query(self, query: int) -> np.ndarray:
        """Sorted indices of stored hashes within ``threshold`` bits of ``query``."""
        return self.query_many(np.array([query], dtype=np.uint64))[1]

    def query_many(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """All (query index, stored index) pairs within ``threshold`` bits, sorted by query then
        stored index: through a compiled kernel when numba is installed (the ``corpus`` extra;
        at 10^6 stored hashes and 10 bits about 6x faster), else the vectorised numpy path;
        both are exact."""
        q = np.asarray(queries, dtype=np.uint64)
        if len(q) * len(self.hashes) < KERNEL_MIN_WORK:  # small jobs: not worth compiling for
            return self._query_numpy(q)
        kernel = _numba_kernel()
        if kernel is None:
            return self._query_numpy(q)
        tables = self._kernel_tables()
        return _in_blocks(lambda block: self._query_kernel(kernel, tables, block), q, KERNEL_BLOCK)

    def pairs_within(self, radius: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Self-join: every pair ``(i, j)``, ``i < j``, of stored hashes within ``radius`` bits
        (default: the index's ``threshold``; a larger radius is refused, since the tables only
        guarantee recall up to the threshold), sorted by ``i`` then ``j``. Large sets (n^2 >=
        ``KERNEL_MIN_WORK``) with numba go through a compiled self-join that reads every pair of
        buckets one probe mask apart once; otherwise every stored hash is queried and each pair
        is kept from its smaller index. Both are exact."""
        radius = self.threshold if radius is None else radius
        if radius > self.threshold:
            raise ValueError(f"radius {radius} exceeds the index threshold {self.threshold}")
        n = len(self.hashes)
        join = _numba_self_join() if n * n >= KERNEL_MIN_WORK else None
        if join is None:
            qi, ii = self.query_many(self.hashes)
            keep = qi < ii
        else:
            qi, ii = self._self_join_kernel(join)
            keep = np.ones(len(qi), dtype=bool)
        if radius < self.threshold:
            keep &= np.bitwise_count(self.hashes[qi] ^ self.hashes[ii]) <= radius
        return qi[keep], ii[keep]

    def _self_join_kernel(self, join) -> tuple[np.ndarray, np.ndarray]:
        """All pairs i < j within the threshold through the compiled self-join (sorted, each once)."""
        _bounds, sorted_hashes, _shifts, masks, offsets, _mask = self._kernel_tables()
        cap = max(1024, 4 * len(self.hashes))
        while True:
            out_i, out_j = np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64)
            found = join(
                self._bounds, sorted_hashes, self._order, masks, offsets, self.threshold, out_i, out_j
            )
            if found <= cap:
                break
            cap = found  # more pairs than room: run again with room for all
        return _unique_pairs(out_i[:found], out_j[:found], len(self.hashes))

    def _query_kernel(self, kernel, tables: tuple, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One block of queries through the compiled kernel (sorted, deduplicated pairs)."""
        cap = max(1024, 16 * len(q))
        while True:
            out_q, out_t, out_j = (np.empty(cap, dtype=np.int64) for _ in range(3))
            found = kernel(q, *tables, self.threshold, out_q, out_t, out_j)
            if found <= cap:
                break
            cap = found  # rare: more matches than room; run again with room for all
        return _unique_pairs(out_q[:found], self._order[out_t[:found], out_j[:found]], len(self.hashes))

    def _kernel_tables(self) -> tuple:
        """The kernel's arguments: the dense tables themselves (no copy) plus the probe masks."""
        if getattr(self, "_kernel", None) is None:
            masks = [self._masks[c].astype(np.int32) for c in self._used]
            self._kernel = (
                self._bounds,
                self._sorted,
                np.asarray([c * self.width for c in self._used], dtype=np.int64),
                np.concatenate(masks),
                np.cumsum([0] + [len(m) for m in masks]).astype(np.int64),
                np.uint64((1 << self.width) - 1),
            )
        return self._kernel

    def _query_numpy(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """All (query index, stored index) pairs within ``threshold`` bits, sorted by query then
        stored index. Queries go through in batches of ``batch``, each vectorised: one pass per
        chunk over dense bucket tables (counts and starts per chunk value), probing every
        query's neighbour values at once."""
        return _in_blocks(self._query_batch, np.asarray(queries, dtype=np.uint64), self.batch)

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
        return _unique_pairs(np.concatenate(pairs_q), np.concatenate(pairs_i), len(self.hashes))


def _unique_pairs(qi: np.ndarray, ii: np.ndarray, stored: int) -> tuple[np.ndarray, np.ndarray]:
    """(query, stored) pairs sorted, each once (a pair is found through every chunk within its
    radius)."""
    key = np.unique(qi.astype(np.int64) * stored + ii)
    return key // stored, key % stored


def _in_blocks(search, q: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``search`` over blocks of ``size`` queries, its block-relative query numbers offset back."""
    starts = range(0, len(q), size)
    parts = [search(q[s : s + size]) for s in starts]
    if not parts:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return (
        np.concatenate([qi + s for (qi, _), s in zip(parts, starts, strict=True)]),
        np.concatenate([ii for _, ii in parts]),
    )


_KERNEL: list = []
KERNEL_MIN_WORK = 50_000_000  # queries x stored hashes below which numpy is used (no compile)
# Stored hashes from which the tables are built by the compiled counting sort (numba): at 10^6
# it takes 0.03 s in every build, where numpy's radix argsort, bincount and take took 0.055 s
# warm and 0.07-0.23 s in a fresh process (its ~100 MB of temporaries were first-touched, with
# transparent huge pages compacted on demand: the fourfold spread between runs).
BUILD_KERNEL_MIN = 200_000
KERNEL_BLOCK = 8192  # queries per kernel call: bounds its probe lists (~1 MB per 1,000 queries)


def _numba_kernel():
    """The compiled query kernel, or None without numba (compiled once per process)."""
    if _KERNEL:
        return _KERNEL[0]
    try:
        import numba
    except ImportError:
        _KERNEL.append(None)
        return None

    @numba.njit(nogil=True, cache=False)
    def popcount(x):
        # Constant-time popcount (SWAR); LLVM turns it into popcnt, and vpopcntq where the
        # loop below vectorises.
        x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
        x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
        x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
        return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)

    @numba.njit(nogil=True, cache=False)
    def kernel(
        queries,
        bounds,
        sorted_hashes,
        shifts,
        masks,
        mask_offsets,
        chunk_mask,
        threshold,
        out_q,
        out_t,
        out_j,
    ):
        # Per chunk table: every (query, probe value) pair is first sorted by bucket with a
        # counting sort; then the buckets are read in storage order, each once, against all
        # the queries that probe it. The table streams through memory instead of being read
        # at ~400 random places per query, and a bucket's hashes stay in cache while its
        # queries are checked. Matches go to preallocated buffers; the count is returned even
        # past their end, so the caller can retry with room for all.
        size = bounds.shape[1] - 1
        limit = np.uint64(threshold)
        found = 0
        cap = len(out_q)
        nq = len(queries)
        ends = np.zeros(size + 1, np.int32)
        for t in range(len(shifts)):
            ends[:] = 0
            shift = np.uint64(shifts[t])
            first, last = mask_offsets[t], mask_offsets[t + 1]
            probes = np.empty(nq * (last - first), np.int32)
            i = 0
            for k in range(nq):
                value = np.int32((queries[k] >> shift) & chunk_mask)
                for m in range(first, last):
                    p = value ^ masks[m]
                    probes[i] = p
                    ends[p + 1] += 1
                    i += 1
            for p in range(size):
                ends[p + 1] += ends[p]
            owners = np.empty(len(probes), np.int32)
            i = 0
            for k in range(nq):
                for _ in range(first, last):
                    p = probes[i]
                    owners[ends[p]] = k  # after this pass ends[p] is where bucket p's run ends
                    ends[p] += 1
                    i += 1
            begin = 0
            for p in range(size):
                end = ends[p]
                lo, hi = bounds[t, p], bounds[t, p + 1]
                for i in range(begin, end):
                    k = owners[i]
                    q = queries[k]
                    close = 0
                    for j in range(lo, hi):  # vectorised count first: matches are rare
                        close += popcount(sorted_hashes[t, j] ^ q) <= limit
                    if close:
                        for j in range(lo, hi):
                            if popcount(sorted_hashes[t, j] ^ q) <= limit:
                                if found < cap:
                                    out_q[found] = k
                                    out_t[found] = t
                                    out_j[found] = j
                                found += 1
                begin = end
        return found

    @numba.njit(nogil=True, cache=False)
    def self_join(bounds, sorted_hashes, order, masks, mask_offsets, threshold, out_i, out_j):
        # Self-join over the same tables: a pair within the threshold agrees within its radius
        # on some chunk, so its two buckets differ by one of that chunk's probe masks. Each
        # unordered pair of buckets (v, v ^ mask) is read once, from the smaller value, and a
        # bucket against itself (mask 0) only for a < b: about half the comparisons of
        # querying every stored hash, and no probe lists to sort. (Looping mask by mask, or in
        # tiles of buckets, so that v ^ mask streams, measured no faster: the ~15 x 15 bucket
        # pairs are compute bound.) Pairs found through several chunks are deduplicated by the
        # caller.
        size = bounds.shape[1] - 1
        limit = np.uint64(threshold)
        found = 0
        cap = len(out_i)
        for t in range(bounds.shape[0]):
            first, last = mask_offsets[t], mask_offsets[t + 1]
            for v in range(size):
                lo, hi = bounds[t, v], bounds[t, v + 1]
                if lo == hi:
                    continue
                for m in range(first, last):
                    w = v ^ masks[m]
                    if w < v:
                        continue
                    lo2, hi2 = bounds[t, w], bounds[t, w + 1]
                    for a in range(lo, hi):
                        x = sorted_hashes[t, a]
                        start = a + 1 if w == v else lo2
                        close = 0
                        for b in range(start, hi2):  # vectorised count first: matches are rare
                            close += popcount(sorted_hashes[t, b] ^ x) <= limit
                        if close:
                            for b in range(start, hi2):
                                if popcount(sorted_hashes[t, b] ^ x) <= limit:
                                    if found < cap:
                                        i, j = order[t, a], order[t, b]
                                        out_i[found] = min(i, j)
                                        out_j[found] = max(i, j)
                                    found += 1
        return found

    @numba.njit(nogil=True, cache=False)
    def fill_tables(hashes, shifts, chunk_mask, bounds, order, sorted_hashes):
        # Per table: count the chunk values, turn the counts into bucket bounds, then place
        # every hash (in index order: stable, the order numpy's stable argsort gives) at its
        # bucket's cursor. Writes only into the tables.
        n = len(hashes)
        size = bounds.shape[1] - 1
        cursor = np.empty(size, np.int64)
        for row in range(len(shifts)):
            shift = np.uint64(shifts[row])
            cursor[:] = 0
            for i in range(n):
                cursor[(hashes[i] >> shift) & chunk_mask] += 1
            bounds[row, 0] = 0
            for v in range(size):
                bounds[row, v + 1] = bounds[row, v] + cursor[v]
                cursor[v] = bounds[row, v]
            for i in range(n):
                v = (hashes[i] >> shift) & chunk_mask
                at = cursor[v]
                order[row, at] = i
                sorted_hashes[row, at] = hashes[i]
                cursor[v] = at + 1

    _KERNEL.append(kernel)
    _SELF_JOIN.append(self_join)
    _FILL.append(fill_tables)
    return kernel


_SELF_JOIN: list = []
_FILL: list = []


def _numba_fill():
    """The compiled table builder, or None without numba."""
    return _FILL[0] if _numba_kernel() is not None else None


def _numba_self_join():
    """The compiled self-join, or None without numba."""
    return _SELF_JOIN[0] if _numba_kernel() is not None else None
