"""How often the strategy card's goodness-of-fit test rejects a strategy that is true.

Simulates TFT with 5% execution noise against RANDOM(0.5) (here, with numpy, not pdbench's
engine), fits TFT and runs `core.strategy_gof.gof_test` on each data set; prints the share of
data sets judged not adequate at 5% and 10% (nominal: 5% and 10%) with its standard error, for
a few designs (games x rounds).

    uv run python benchmarks/strategy_gof_calibration.py [--repeat 400]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from pdbench.agents.strategy_library import builtin_candidates
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.strategy_gof import gof_test, round_design

DESIGNS = ((3, 50), (6, 60), (20, 100), (100, 1000))


def tft_games(rng: np.random.Generator, games: int, rounds: int, noise: float = 0.05) -> list:
    """TFT (C first, then the opponent's last move; each move flipped with `noise`) against
    RANDOM(0.5)."""
    opp = rng.random((games, rounds)) < 0.5
    intended = np.concatenate([np.ones((games, 1), dtype=bool), opp[:, :-1]], axis=1)
    own = intended ^ (rng.random((games, rounds)) < noise)
    return [(own[i], opp[i], None, None) for i in range(games)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=400)
    args = parser.parse_args()
    tft = next(c for c in builtin_candidates(PayoffMatrix(), 0) if c.name == "TFT")
    rng = np.random.default_rng(11)
    print(f"{'games x rounds':>15} {'reject at 5%':>14} {'reject at 10%':>14}  data sets")
    for games, rounds in DESIGNS:
        repeat = args.repeat if games * rounds <= 2000 else max(50, args.repeat // 4)
        p = np.array(
            [
                gof_test(round_design(tft_games(rng, games, rounds), tft), rng).p_value
                for _ in range(repeat)
            ]
        )
        cells = []
        for level in (0.05, 0.10):
            rate = float(np.mean(p < level))
            cells.append(f"{rate:.3f} ± {math.sqrt(level * (1 - level) / repeat):.3f}")
        print(f"{games:>6} x {rounds:<6} {cells[0]:>14} {cells[1]:>14}  {repeat}")


if __name__ == "__main__":
    main()
