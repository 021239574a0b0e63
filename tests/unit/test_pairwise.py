"""`sum_rows` adds each column's terms in the order NumPy's own sum of that column does, bit
for bit: terms of magnitudes 1e-8 to 1e8 make any other order show in the last bits."""

from __future__ import annotations

import numpy as np

from pdbench.core.pairwise import sum_rows


def test_sum_rows_is_numpys_sum_of_each_column_bit_for_bit() -> None:
    rng = np.random.default_rng(9)
    differs = 0
    for n in [*range(0, 140), 255, 256, 257, 1000, 1100, 2049]:
        x = rng.random((n, 23)) * 10.0 ** rng.integers(-8, 9, (n, 23))
        want = np.ascontiguousarray(x.T).sum(axis=1)
        assert sum_rows(x).tobytes() == want.tobytes(), n
        out = np.full(23, np.nan)
        assert sum_rows(x, out=out) is out and out.tobytes() == want.tobytes(), n
        # a different order of the same terms gives a different sum somewhere
        differs += np.cumsum(x, axis=0)[-1].tobytes() != want.tobytes() if n > 8 else 0
    assert differs > 0  # the check above can tell orders apart
