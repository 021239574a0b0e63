"""Coverage of pdbench's 95% intervals, per metric and design (issue 19).

Run: `uv run python benchmarks/coverage.py` (about 5 minutes on a loaded machine; `--conditions
200` is quicker, `--designs geometric_5,share_6` picks designs, `--markdown` prints the table as
Markdown). The LLM-like designs alone, with 1,000 conditions each (about a minute):
`--designs mock_llm_tft_geometric_6,mock_llm_tft_geometric_8 --conditions 1000`.

For each design, many independent conditions of n games are simulated here, with this file's
own vectorised players (TFT, GRIM, WSLS, GTFT, RANDOM(p), the mock LLM's cooperative persona,
with noise flipping a chosen move), not
with pdbench's engine. Each condition's games go through pdbench's aggregation
(`core.metrics.aggregate_rows` and `add_intervals`, the code under test, with the feasible
ranges of `storage.intervals.design_of`), and the benchmark counts how often each interval
contains the truth. Truths do not use pdbench's metric code: they are closed forms where one
exists (first-move shares: the probability that the first move is C after noise; P(C | the
opponent defected) of TFT: the noise; the mean length of a geometric horizon) and otherwise the
mean over a large independent simulation (100,000 games by default) with this file's own metric
formulas: cooperation rate = mean of C, payoff = sum of the matrix entries, collapse = some
window of k rounds with joint cooperation <= threshold, pooled P(C | state) = sum of
cooperations after the state / sum of its visits.

The output: per design and metric, the coverage with its standard error (binomial, over the
conditions), the median width, and the share of conditions with no interval (1 game or an
unbounded metric whose games all agree).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from pdbench.core.metrics import GameOutcome, add_intervals, aggregate_rows
from pdbench.core.stats import IntervalSettings
from pdbench.storage.intervals import design_of

PD = {("C", "C"): (3, 3), ("C", "D"): (0, 5), ("D", "C"): (5, 0), ("D", "D"): (1, 1)}
AKATA = {("C", "C"): (8, 8), ("C", "D"): (0, 10), ("D", "C"): (10, 0), ("D", "D"): (5, 5)}
COLLAPSE_K, COLLAPSE_THRESHOLD = 10, 0.2


@dataclass(frozen=True)
class Player:
    """A memory-one player: P(C) first, then P(C | own last, opponent's last); GRIM keeps a
    grudge (defects for ever after the opponent's first D)."""

    name: str
    first: float
    after: dict[str, float]  # keys "CC", "CD", "DC", "DD": own last move, then the opponent's
    grudge: bool = False


def tft() -> Player:
    return Player("TFT", 1.0, {"CC": 1, "CD": 0, "DC": 1, "DD": 0})


def grim() -> Player:
    return Player("GRIM", 1.0, {"CC": 1, "CD": 0, "DC": 1, "DD": 0}, grudge=True)


def wsls() -> Player:
    return Player("WSLS", 1.0, {"CC": 1, "CD": 0, "DC": 0, "DD": 1})


def gtft(q: float) -> Player:
    return Player(f"GTFT({q})", 1.0, {"CC": 1, "CD": q, "DC": 1, "DD": q})


def random_player(p: float) -> Player:
    return Player(f"RANDOM({p})", p, {s: p for s in ("CC", "CD", "DC", "DD")})


def mock_cooperative() -> Player:
    """The mock LLM's cooperative persona (`providers.mock.mock_move`, restated here): C with
    probability 0.9, 0.75 after the opponent's D; an LLM-like agent that varies a little."""
    return Player("mock[cooperative]", 0.9, {"CC": 0.9, "CD": 0.75, "DC": 0.9, "DD": 0.75})


@dataclass(frozen=True)
class Design:
    """One benchmark design: players, horizon, noise, matrix, games per condition."""

    name: str
    a: Player
    b: Player
    games: int
    n_rounds: int | None = 50  # fixed horizon
    stop_prob: float | None = None  # geometric horizon (then max_rounds caps it)
    max_rounds: int = 200
    noise: float = 0.0
    matrix: dict[tuple[str, str], tuple[int, int]] = field(default_factory=lambda: PD)
    metrics: tuple[str, ...] = ()


def simulate(design: Design, n_games: int, rng: np.random.Generator) -> list[dict]:
    """n_games games as dicts of boolean move arrays (True = C) and payoff arrays."""
    if design.stop_prob is None:
        lengths = np.full(n_games, design.n_rounds)
    else:
        lengths = np.minimum(rng.geometric(design.stop_prob, n_games), design.max_rounds)
    longest = int(lengths.max())
    moves = {side: np.zeros((n_games, longest), dtype=bool) for side in "ab"}
    grudge = {side: np.zeros(n_games, dtype=bool) for side in "ab"}
    players = {"a": design.a, "b": design.b}
    for t in range(longest):
        for side, other in (("a", "b"), ("b", "a")):
            player = players[side]
            if t == 0:
                p_coop = np.full(n_games, player.first)
            else:
                mine, theirs = moves[side][:, t - 1], moves[other][:, t - 1]
                p_coop = np.select(
                    [mine & theirs, mine & ~theirs, ~mine & theirs],
                    [player.after["CC"], player.after["CD"], player.after["DC"]],
                    player.after["DD"],
                )
                if player.grudge:
                    grudge[side] |= ~theirs
                    p_coop = np.where(grudge[side], 0.0, p_coop)
            chosen = rng.random(n_games) < p_coop
            flip = rng.random(n_games) < design.noise
            moves[side][:, t] = chosen ^ flip
    pay = np.array([[design.matrix[(x, y)] for y in "CD"] for x in "CD"], dtype=np.float64)
    out = []
    for g in range(n_games):
        n = int(lengths[g])
        a, b = moves["a"][g, :n], moves["b"][g, :n]
        ia, ib = (~a).astype(int), (~b).astype(int)
        out.append({"a": a, "b": b, "pa": pay[ia, ib, 0], "pb": pay[ia, ib, 1]})
    return out


# --- truths: this file's own formulas, never pdbench's metric code ---------------------------


def _collapsed(a: np.ndarray, b: np.ndarray) -> float:
    joint = a.astype(int) + b.astype(int)
    if joint.size < COLLAPSE_K:
        return 0.0
    windows = np.convolve(joint, np.ones(COLLAPSE_K, dtype=int), mode="valid")
    return float(np.any(windows <= COLLAPSE_THRESHOLD * 2 * COLLAPSE_K))


def _state_counts(mine: np.ndarray, theirs: np.ndarray, state: str) -> tuple[int, int]:
    if mine.size < 2:
        return 0, 0
    want_me, want_them = state[0] == "c", state[1] == "c"
    at = (mine[:-1] == want_me) & (theirs[:-1] == want_them)
    return int(at.sum()), int((mine[1:] & at).sum())


TRUTH_FORMULAS: dict[str, Callable[[list[dict]], float]] = {
    "agent_a_cooperation_rate": lambda gs: float(np.mean([g["a"].mean() for g in gs])),
    "overall_cooperation_rate": lambda gs: float(
        np.mean([(g["a"].mean() + g["b"].mean()) / 2 for g in gs])
    ),
    "agent_a_total_payoff": lambda gs: float(np.mean([g["pa"].sum() for g in gs])),
    "agent_b_total_payoff": lambda gs: float(np.mean([g["pb"].sum() for g in gs])),
    "agent_a_payoff_per_round": lambda gs: float(np.mean([g["pa"].mean() for g in gs])),
    "agent_a_exploitability_payoff_gap": lambda gs: float(
        np.mean([g["pb"].sum() - g["pa"].sum() for g in gs])
    ),
    "n_rounds": lambda gs: float(np.mean([g["a"].size for g in gs])),
    "agent_a_first_move_cooperation": lambda gs: float(np.mean([g["a"][0] for g in gs])),
    "agent_b_first_move_cooperation": lambda gs: float(np.mean([g["b"][0] for g in gs])),
    "collapsed_fraction": lambda gs: float(np.mean([_collapsed(g["a"], g["b"]) for g in gs])),
}
for _state in ("cc", "cd", "dc", "dd"):
    TRUTH_FORMULAS[f"agent_a_p_coop_after_{_state}"] = lambda gs, s=_state: (
        lambda counts: counts[:, 1].sum() / counts[:, 0].sum()
    )(np.array([_state_counts(g["a"], g["b"], s) for g in gs]))


def truths(design: Design, big: int, rng: np.random.Generator) -> dict[str, float]:
    """Each metric's truth: closed form where there is one, else a large simulation."""
    closed: dict[str, float] = {}
    e = design.noise
    first_a = design.a.first * (1 - e) + (1 - design.a.first) * e
    first_b = design.b.first * (1 - e) + (1 - design.b.first) * e
    closed["agent_a_first_move_cooperation"] = first_a
    closed["agent_b_first_move_cooperation"] = first_b
    if design.stop_prob is not None:  # E[min(Geometric(p), M)] = (1 - (1 - p)^M) / p
        q = 1 - design.stop_prob
        closed["n_rounds"] = (1 - q**design.max_rounds) / design.stop_prob
    if design.a.name == "TFT":  # after the opponent's D, TFT chooses D; noise flips it
        closed["agent_a_p_coop_after_cd"] = e
        closed["agent_a_p_coop_after_dd"] = e
    simulated = simulate(design, big, rng)
    out = {}
    for metric in design.metrics:
        out[metric] = closed[metric] if metric in closed else TRUTH_FORMULAS[metric](simulated)
    return out


# --- the code under test ---------------------------------------------------------------------


def intervals_of(
    design: Design, games: list[dict], seed: int
) -> dict[str, tuple[float | None, float | None]]:
    """pdbench's condition intervals of one condition's games."""
    outcomes = [
        GameOutcome("x", i, design.a.name, design.b.name, g["a"], g["b"], g["pa"], g["pb"])
        for i, g in enumerate(games)
    ]
    rows = aggregate_rows("coverage", outcomes, ["x"])
    payoffs = [v for pair in design.matrix.values() for v in pair]
    horizon = (
        {"type": "fixed", "n_rounds": design.n_rounds}
        if design.stop_prob is None
        else {"type": "geometric", "max_rounds": design.max_rounds}
    )
    found = design_of(min(payoffs), max(payoffs), horizon)
    settings = IntervalSettings(resamples=1000, seed=seed)
    rows = add_intervals(rows, settings, lambda _c: np.random.default_rng(seed), lambda _c: found)
    row = next(r for r in rows if r["scope"] == "condition")
    return {m: (row.get(f"{m}_ci_low"), row.get(f"{m}_ci_high")) for m in design.metrics}


COMMON = ("agent_a_cooperation_rate", "agent_a_total_payoff", "agent_a_payoff_per_round")
# An LLM-like agent (the mock's cooperative persona) against TFT on a geometric horizon.
LLM_LIKE = (*COMMON, "n_rounds", "agent_b_total_payoff", "overall_cooperation_rate",
            "agent_a_exploitability_payoff_gap", "agent_a_first_move_cooperation",
            "collapsed_fraction")  # fmt: skip


def designs() -> list[Design]:
    """The benchmark's designs: horizons, game counts, yes/no metrics, ratios near 0 and 1,
    noise and another payoff matrix."""
    return [
        Design(
            "tft_random_fixed_5", tft(), random_player(0.7), 5, noise=0.05,
            metrics=(*COMMON, "agent_a_first_move_cooperation", "collapsed_fraction",
                     "agent_a_p_coop_after_cc", "agent_a_p_coop_after_cd"),
        ),
        Design(
            "tft_random_fixed_8", tft(), random_player(0.7), 8, noise=0.05,
            metrics=(*COMMON, "agent_a_first_move_cooperation", "collapsed_fraction",
                     "agent_a_p_coop_after_cc", "agent_a_p_coop_after_cd"),
        ),
        Design(
            "geometric_5", gtft(0.3), random_player(0.5), 5, n_rounds=None, stop_prob=0.3,
            metrics=(*COMMON, "n_rounds", "agent_b_total_payoff", "overall_cooperation_rate"),
        ),
        Design(
            "geometric_8", gtft(0.3), random_player(0.5), 8, n_rounds=None, stop_prob=0.3,
            metrics=(*COMMON, "n_rounds", "agent_b_total_payoff", "overall_cooperation_rate"),
        ),
        Design(
            "share_near_1_6", random_player(0.95), wsls(), 6, n_rounds=20,
            metrics=("agent_a_first_move_cooperation", "agent_a_cooperation_rate",
                     "collapsed_fraction"),
        ),
        Design(
            "ratios_near_0_1_10", grim(), random_player(0.9), 10, noise=0.02,
            metrics=("agent_a_p_coop_after_cc", "agent_a_p_coop_after_cd",
                     "agent_a_p_coop_after_dd", "agent_a_cooperation_rate",
                     "agent_a_first_move_cooperation"),
        ),
        Design(
            "wsls_noise_6", wsls(), wsls(), 6, n_rounds=100, noise=0.05,
            metrics=(*COMMON, "overall_cooperation_rate", "agent_a_p_coop_after_dd",
                     "agent_a_exploitability_payoff_gap", "collapsed_fraction"),
        ),
        Design(
            "akata_matrix_7", tft(), random_player(0.4), 7, n_rounds=10, noise=0.02,
            matrix=AKATA,
            metrics=(*COMMON, "agent_a_exploitability_payoff_gap", "collapsed_fraction"),
        ),
        Design(
            "many_games_25", gtft(0.3), random_player(0.6), 25, noise=0.05,
            metrics=(*COMMON, "agent_a_first_move_cooperation", "collapsed_fraction",
                     "agent_a_p_coop_after_cd"),
        ),
        Design(
            "few_games_3", tft(), random_player(0.7), 3, noise=0.05,
            metrics=(*COMMON, "agent_a_first_move_cooperation", "agent_a_p_coop_after_cd"),
        ),
        Design(
            "few_games_geometric_4", gtft(0.3), random_player(0.5), 4, n_rounds=None,
            stop_prob=0.3, metrics=(*COMMON, "n_rounds"),
        ),
        Design(
            "mock_llm_tft_geometric_6", mock_cooperative(), tft(), 6, n_rounds=None,
            stop_prob=0.1, metrics=LLM_LIKE,
        ),
        Design(
            "mock_llm_tft_geometric_8", mock_cooperative(), tft(), 8, n_rounds=None,
            stop_prob=0.1, metrics=LLM_LIKE,
        ),
    ]  # fmt: skip


@dataclass
class Cell:
    """Coverage counts of one metric in one design."""

    hits: int = 0
    missing: int = 0
    total: int = 0
    widths: list[float] = field(default_factory=list)

    def coverage(self) -> tuple[float, float]:
        n = self.total - self.missing
        c = self.hits / n if n else math.nan
        return c, math.sqrt(c * (1 - c) / n) if n else math.nan


def run(design: Design, conditions: int, big: int, seed: int) -> dict[str, Cell]:
    """Coverage of every metric of the design over `conditions` independent conditions."""
    rng = np.random.default_rng(seed)
    truth = truths(design, big, rng)
    cells = {m: Cell() for m in design.metrics}
    for c in range(conditions):
        found = intervals_of(design, simulate(design, design.games, rng), seed * 100_003 + c)
        for metric, (low, high) in found.items():
            cell = cells[metric]
            cell.total += 1
            if low is None or high is None:
                cell.missing += 1
                continue
            cell.widths.append(high - low)
            cell.hits += int(low - 1e-12 <= truth[metric] <= high + 1e-12)
    return cells


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conditions", type=int, default=400, help="conditions per design")
    parser.add_argument("--truth-games", type=int, default=100_000, help="games for a truth")
    parser.add_argument("--designs", default="", help="comma-separated design names (all)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    chosen = [d for d in designs() if not args.designs or d.name in args.designs.split(",")]
    started = time.perf_counter()
    if args.markdown:
        print("| design | games | metric | coverage | SE | median width | no interval |")
        print("|---|---|---|---|---|---|---|")
    else:
        print(f"{'design':24} {'games':>5} {'metric':36} {'coverage':>9} {'SE':>6} "
              f"{'width':>9} {'none':>5}")  # fmt: skip
    worst_5_plus = 1.0
    best_5_plus = 0.0
    for index, design in enumerate(chosen):
        cells = run(design, args.conditions, args.truth_games, args.seed + index)
        for metric, cell in cells.items():
            cov, se = cell.coverage()
            width = float(np.median(cell.widths)) if cell.widths else math.nan
            none = cell.missing / cell.total
            if design.games >= 5 and not math.isnan(cov):
                worst_5_plus, best_5_plus = min(worst_5_plus, cov), max(best_5_plus, cov)
            if args.markdown:
                print(f"| {design.name} | {design.games} | {metric} | {cov:.3f} | {se:.3f} | "
                      f"{width:.3g} | {none:.1%} |")  # fmt: skip
            else:
                print(f"{design.name:24} {design.games:>5} {metric:36} {cov:>9.3f} {se:>6.3f} "
                      f"{width:>9.3g} {none:>5.0%}")  # fmt: skip
        sys.stdout.flush()
    print(
        f"\n5 or more games: coverage from {worst_5_plus:.3f} to {best_5_plus:.3f} "
        f"({args.conditions} conditions per design; {time.perf_counter() - started:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
