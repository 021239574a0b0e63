"""NumPy's pairwise summation, written out so that sums laid out differently add the same terms
in the same order (pure).

`np.add.reduce` over a contiguous axis of n terms (what `x.sum(axis=-1)` does for each row of a
C-ordered array) adds them pairwise: below 8 terms one after the other from 0; up to 128 in 8
running sums (terms i, i + 8, i + 16, ...), combined as ((s0 + s1) + (s2 + s3)) + ((s4 + s5) +
(s6 + s7)), then the n % 8 last terms one by one; above 128 the two halves (the first a
multiple of 8 terms) are summed so and added. `sum_rows` applies that order to the rows of a
(n, m) array, term i being row i: the same floating-point result as `x.T.sum(axis=1)` for each
column, with whole-row additions instead of one reduction per column (which is slow for short
rows).
"""

from __future__ import annotations

import numpy as np

BLOCK = 128  # NumPy's PW_BLOCKSIZE
UNROLL = 8


def sum_rows(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Per column of x (n, m), the sum of its n terms in NumPy's pairwise order."""
    n = x.shape[0]
    if n < UNROLL:
        res = np.zeros(x.shape[1:]) if out is None else out
        res.fill(0.0)
        for i in range(n):
            np.add(res, x[i], out=res)
        return res
    if n <= BLOCK:
        r = x[:UNROLL].copy()
        i = UNROLL
        while i < n - n % UNROLL:
            np.add(r, x[i : i + UNROLL], out=r)
            i += UNROLL
        np.add(r[0], r[1], out=r[0])
        np.add(r[2], r[3], out=r[2])
        np.add(r[4], r[5], out=r[4])
        np.add(r[6], r[7], out=r[6])
        np.add(r[0], r[2], out=r[0])
        np.add(r[4], r[6], out=r[4])
        res = np.add(r[0], r[4], out=out)
        for j in range(i, n):
            np.add(res, x[j], out=res)
        return res
    half = n // 2
    half -= half % UNROLL
    return np.add(sum_rows(x[:half]), sum_rows(x[half:]), out=out)
