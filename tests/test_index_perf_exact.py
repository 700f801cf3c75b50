"""The near-duplicate index after the build speed-up (chunk keys sorted as 16-bit) and its
self-join (``pairs_within``): exactly the brute-force results."""

from __future__ import annotations

import numpy as np
import pytest

from culturebench.images import index as idx
from culturebench.images.index import HashIndex

pytestmark = pytest.mark.unit


def _random(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True)


def _with_planted(n: int, threshold: int, seed: int) -> np.ndarray:
    """``n`` random hashes, then copies of some of them at every distance 0 .. threshold + 2."""
    rng = np.random.default_rng(seed)
    hashes = _random(n, seed)
    planted = []
    for k in range(300):
        value = hashes[rng.integers(n)]
        for b in rng.choice(64, size=k % (threshold + 3), replace=False):
            value ^= np.uint64(1 << int(b))
        planted.append(value)
    planted += [hashes[5], hashes[5], hashes[7]]  # exact duplicates, one of them twice
    return np.concatenate([hashes, np.asarray(planted, dtype=np.uint64)])


def _brute_pairs(hashes: np.ndarray, radius: int) -> set[tuple[int, int]]:
    pairs = set()
    for i in range(len(hashes) - 1):
        close = np.flatnonzero(np.bitwise_count(hashes[i + 1 :] ^ hashes[i]) <= radius) + i + 1
        pairs.update((i, int(j)) for j in close)
    return pairs


@pytest.mark.parametrize("chunks", [4, 8])
@pytest.mark.parametrize("compiled", [False, True])
def test_tables_are_those_of_a_uint64_sort(chunks: int, compiled: bool, monkeypatch) -> None:
    """Sorting the chunk values as uint16/uint8 (numpy), or placing them by a counting sort
    (the compiled build), gives the same stable order as sorting them as uint64 did: same
    buckets, same ids, same hashes in each."""
    if compiled:
        pytest.importorskip("numba")
    monkeypatch.setattr(idx, "BUILD_KERNEL_MIN", 0 if compiled else 10**18)
    hashes = _random(20_000, 3)
    index = HashIndex(hashes, 10, chunks=chunks)
    width = 64 // chunks
    for row, c in enumerate(index._used):
        values = (hashes >> np.uint64(c * width)) & np.uint64((1 << width) - 1)
        order = np.argsort(values, kind="stable")
        assert np.array_equal(index._order[row], order)
        assert np.array_equal(index._sorted[row], hashes[order])
        assert np.array_equal(index._counts[row], np.bincount(values.astype(np.int64), minlength=1 << width))
        assert np.array_equal(index._bounds[row], np.concatenate([[0], np.cumsum(index._counts[row])]))


@pytest.mark.parametrize(("threshold", "chunks"), [(0, 4), (4, 4), (6, 4), (10, 4), (8, 8)])
@pytest.mark.parametrize("kernel", [False, True])
def test_pairs_within_equals_brute_force(threshold: int, chunks: int, kernel: bool, monkeypatch) -> None:
    if kernel:
        pytest.importorskip("numba")
        monkeypatch.setattr(idx, "KERNEL_MIN_WORK", 0)
        monkeypatch.setattr(idx, "KERNEL_BLOCK", 997)  # several blocks
    else:
        monkeypatch.setattr(idx, "KERNEL_MIN_WORK", 10**18)
    hashes = _with_planted(3000, threshold, seed=threshold + chunks)
    index = HashIndex(hashes, threshold, chunks=chunks)
    i, j = index.pairs_within()
    expected = _brute_pairs(hashes, threshold)
    assert len(expected) >= 100  # the planted pairs are there
    assert list(zip(i.tolist(), j.tolist(), strict=True)) == sorted(expected)
    smaller = max(threshold - 3, 0)
    i, j = index.pairs_within(smaller)
    assert list(zip(i.tolist(), j.tolist(), strict=True)) == sorted(_brute_pairs(hashes, smaller))


def test_pairs_within_edge_cases() -> None:
    index = HashIndex(_random(50, 1), 6)
    with pytest.raises(ValueError, match="exceeds"):
        index.pairs_within(7)
    for hashes in (np.empty(0, dtype=np.uint64), _random(1, 2)):
        i, j = HashIndex(hashes, 6).pairs_within()
        assert len(i) == len(j) == 0
    same = np.repeat(_random(1, 4), 4)
    i, j = HashIndex(same, 0).pairs_within()
    assert list(zip(i.tolist(), j.tolist(), strict=True)) == [
        (a, b) for a in range(4) for b in range(a + 1, 4)
    ]


def test_pairs_within_matches_query_many_filtered() -> None:
    """What validation's near-duplicate check does today (query every hash, keep a < b) is
    exactly ``pairs_within``."""
    hashes = _with_planted(2000, 10, seed=9)
    index = HashIndex(hashes, 10)
    qi, ii = index.query_many(hashes)
    keep = qi < ii
    i, j = index.pairs_within()
    assert np.array_equal(i, qi[keep]) and np.array_equal(j, ii[keep])


def test_self_join_kernel_retries_with_room_for_all_pairs(monkeypatch) -> None:
    """Many equal hashes: more pairs than the kernel's first buffer holds; all come back, once."""
    pytest.importorskip("numba")
    monkeypatch.setattr(idx, "KERNEL_MIN_WORK", 0)
    dense = np.repeat(_random(5, 8), 300)
    i, j = HashIndex(dense, 2).pairs_within()
    assert len(i) == 5 * 300 * 299 // 2
    assert np.array_equal(dense[i], dense[j]) and bool(np.all(i < j))
    assert len(set(zip(i.tolist(), j.tolist(), strict=True))) == len(i)
