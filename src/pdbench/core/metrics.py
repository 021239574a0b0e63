"""Metrics of one game and of a condition's replicates; the single source of every number shown.

Moves are given as boolean arrays, True for C. Definitions (also in the README):

- cooperation_rate: fraction of C among an agent's moves; overall: among both agents' moves.
- cooperation_rate_over_time: per round t, the fraction of the two agents that played C.
- retaliation_rate (X): among rounds t >= 1 where X's opponent played D at t-1, the fraction
  where X plays D at t; forgiveness_rate: the fraction where X plays C. None when no such round.
- payoff_per_round (X): X's total payoff divided by the game's rounds (comparable across
  horizons; comparisons of conditions with different horizons use it by default).
- exploitability_payoff_gap (X): opponent's total payoff minus X's total payoff.
- time_to_collapse: first 0-based t with t + k <= n such that the cooperation rate of both agents
  over rounds t..t+k-1 is <= threshold; None if there is none.
- parse_failures (X): rounds where X's move was a fallback after invalid LLM replies;
  fallback_rate: their share of X's moves; decided_cooperation_rate: the cooperation rate over
  the rounds X decided itself (fallbacks left out; None when there is none).
- mean_p_cooperate (X): mean over X's decisions of the model's probability of C (renormalised
  over C and D, from the answer token's log-probabilities); None when none was recorded.
- collapsed_fraction: 1 when the game collapsed (has a time_to_collapse), else 0; on the
  condition row, the share of games that collapsed (time_to_collapse there is the mean over the
  games that collapsed only).
- memory-one profile and Fontana et al.'s five dimensions of each agent: see core/behaviour.py.

Condition rows hold the mean over games of each metric (memory-one: the ratio of counts pooled
over games; visit counts: their sum) and, for each, `<metric>_ci_low`/`_ci_high`: a 95% interval
with the game as the unit, by the method of the metric's kind (`interval_kind`: a share of games,
a ratio pooled over games, or a mean of per-game values; core/stats.py), clipped to the metric's
feasible range (`feasible_range`); `clipped_intervals` names the metrics whose interval was.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from pdbench.core.behaviour import STATES, behaviour_column_names, behaviour_columns_of_games
from pdbench.core.game_values import series_matrix, value_table
from pdbench.core.stats import (
    KIND_MEAN,
    KIND_POOLED_RATIO,
    KIND_SHARE,
    Bounds,
    IntervalSettings,
    clipped_mean_intervals,
    mean_intervals,
    ratio_interval,
    resample_weights,
    share_interval,
)
from pdbench.core.talk_metrics import (
    TALK_COLUMNS,
    TALK_COUNT_COLUMNS,
    TALK_POOLED_COLUMNS,
    TalkTrack,
    talk_columns,
)

DEFAULT_COLLAPSE_K = 10
DEFAULT_COLLAPSE_THRESHOLD = 0.2

METRIC_COLUMNS: tuple[str, ...] = (
    "n_rounds",
    "agent_a_cooperation_rate",
    "agent_b_cooperation_rate",
    "overall_cooperation_rate",
    "cooperation_rate_over_time",
    "agent_a_retaliation_rate",
    "agent_b_retaliation_rate",
    "agent_a_forgiveness_rate",
    "agent_b_forgiveness_rate",
    "agent_a_total_payoff",
    "agent_b_total_payoff",
    "agent_a_payoff_per_round",
    "agent_b_payoff_per_round",
    "agent_a_exploitability_payoff_gap",
    "agent_b_exploitability_payoff_gap",
    "time_to_collapse",
    "agent_a_parse_failures",
    "agent_b_parse_failures",
    "agent_a_fallback_rate",
    "agent_b_fallback_rate",
    "agent_a_decided_cooperation_rate",
    "agent_b_decided_cooperation_rate",
    "agent_a_mean_p_cooperate",
    "agent_b_mean_p_cooperate",
    "collapsed_fraction",
    *behaviour_column_names("a"),
    *behaviour_column_names("b"),
    *TALK_COLUMNS,
)

# Visit counts of the memory-one states: summed over games on the condition row, no interval.
COUNT_COLUMNS: tuple[str, ...] = (
    *(f"agent_{side}_n_{s}" for side in "ab" for s in STATES),
    *TALK_COUNT_COLUMNS,
)
# Pooled ratios: condition value = summed cooperations / summed visits.
POOLED_COLUMNS: dict[str, str] = {
    **{f"agent_{side}_p_coop_after_{s}": f"agent_{side}_n_{s}" for side in "ab" for s in STATES},
    **TALK_POOLED_COLUMNS,  # say-do rates (core/talk_metrics.py)
}
# Shares of games: a yes/no value per game (kind `share`, a Wilson interval).
SHARE_COLUMNS: frozenset[str] = frozenset(
    {
        "collapsed_fraction",
        *(f"agent_{side}_first_move_cooperation" for side in "ab"),
        *(f"agent_{side}_fontana_nice" for side in "ab"),
    }
)
# At most this many rounds (games x rounds) in one batch of games_metrics (bounds its memory).
BATCH_ROUNDS = 1 << 20
BAND_RESAMPLES = 400  # resamples for the per-round bands of cooperation_rate_over_time

AGGREGATE_COLUMNS: tuple[str, ...] = (
    "run_id",
    "condition",
    "scope",
    "replicate",
    "n_replicates",
    "n_rounds",
    "agent_a_name",
    "agent_b_name",
    *METRIC_COLUMNS[1:],
)


@dataclass(frozen=True, slots=True)
class CollapseParams:
    """Parameters of `time_to_collapse`: window length k and cooperation threshold."""

    k: int = DEFAULT_COLLAPSE_K
    threshold: float = DEFAULT_COLLAPSE_THRESHOLD


def _as_bool(moves: Sequence[bool] | np.ndarray) -> np.ndarray:
    return np.asarray(moves, dtype=bool)


def cooperation_rate(coop: Sequence[bool] | np.ndarray) -> float | None:
    """Fraction of C among the moves; None for an empty game."""
    arr = _as_bool(coop)
    return float(arr.mean()) if arr.size else None


def cooperation_rate_over_time(a_coop: np.ndarray, b_coop: np.ndarray) -> list[float]:
    """Per round, the fraction of the two agents that played C (0, 0.5 or 1)."""
    return ((_as_bool(a_coop).astype(np.int8) + _as_bool(b_coop)) / 2.0).tolist()


def retaliation_and_forgiveness(
    my_coop: np.ndarray, opp_coop: np.ndarray
) -> tuple[float | None, float | None]:
    """(retaliation_rate, forgiveness_rate) of the agent whose moves are `my_coop`."""
    mine = _as_bool(my_coop)
    theirs = _as_bool(opp_coop)
    if mine.size < 2:
        return None, None
    provoked = ~theirs[:-1]
    n = int(provoked.sum())
    if n == 0:
        return None, None
    retaliated = int((~mine[1:] & provoked).sum())
    return retaliated / n, (n - retaliated) / n


def time_to_collapse(
    a_coop: np.ndarray,
    b_coop: np.ndarray,
    k: int = DEFAULT_COLLAPSE_K,
    threshold: float = DEFAULT_COLLAPSE_THRESHOLD,
) -> int | None:
    """First 0-based round t whose k-round window t..t+k-1 has joint cooperation rate <= threshold."""
    both = _as_bool(a_coop).astype(np.int64) + _as_bool(b_coop)
    n = both.size
    if k <= 0 or n < k:
        return None
    csum = np.concatenate(([0], np.cumsum(both)))
    window = csum[k:] - csum[:-k]
    # Integer comparison avoids float rounding: count / (2k) <= threshold.
    hits = np.flatnonzero(window <= threshold * 2 * k + 1e-9)
    return int(hits[0]) if hits.size else None


def game_metrics(
    a_coop: Sequence[bool] | np.ndarray,
    b_coop: Sequence[bool] | np.ndarray,
    a_payoffs: Sequence[float] | np.ndarray,
    b_payoffs: Sequence[float] | np.ndarray,
    *,
    collapse: CollapseParams | None = None,
    a_parse_failures: int = 0,
    b_parse_failures: int = 0,
    a_fallback: Sequence[bool] | np.ndarray | None = None,
    b_fallback: Sequence[bool] | np.ndarray | None = None,
    a_p_cooperate: Sequence[float | None] | np.ndarray | None = None,
    b_p_cooperate: Sequence[float | None] | np.ndarray | None = None,
) -> dict[str, Any]:
    """All metrics of one game (one condition x replicate), keyed by aggregate column name.

    `a_fallback`/`b_fallback` flag the rounds whose move was a fallback (None: no fallback, as
    for policies); `a_p_cooperate`/`b_p_cooperate` hold P(C) per round (None or NaN: unknown).
    """
    game = GameOutcome(
        "",
        0,
        "",
        "",
        _as_bool(a_coop),
        _as_bool(b_coop),
        np.asarray(a_payoffs, dtype=np.float64),
        np.asarray(b_payoffs, dtype=np.float64),
        a_parse_failures,
        b_parse_failures,
        a_fallback,
        b_fallback,
        a_p_cooperate,  # type: ignore[arg-type]
        b_p_cooperate,  # type: ignore[arg-type]
    )
    return games_metrics([game], collapse)[0]


def games_metrics(
    games: Sequence[GameOutcome], collapse: CollapseParams | None = None
) -> list[dict[str, Any]]:
    """`game_metrics` of games of the same length, computed over all of them at once (rows of
    one array): every value is a count, a ratio of counts or a game's own sum, so it is the same
    float whichever way the counts are taken."""
    collapse = collapse or CollapseParams()
    if not games:
        return []
    a = np.stack([_as_bool(g.a_coop) for g in games])
    b = np.stack([_as_bool(g.b_coop) for g in games])
    count, n = a.shape
    if any(_as_bool(g.b_coop).size != n for g in games):
        raise ValueError("games_metrics: the games' moves differ in length")
    coops_a, coops_b = a.sum(axis=1).tolist(), b.sum(axis=1).tolist()
    ret_a, ret_b = _retaliations(a, b), _retaliations(b, a)
    collapse_at = _collapses(a, b, collapse)
    series = _SERIES_TOKENS[a.astype(np.int8) + b].tobytes()
    width = 4 * n
    behaviour_a = behaviour_columns_of_games("a", a, b)
    behaviour_b = behaviour_columns_of_games("b", b, a)
    out = []
    for i, game in enumerate(games):
        total_a = float(np.sum(np.asarray(game.a_payoffs, dtype=np.float64)))
        total_b = float(np.sum(np.asarray(game.b_payoffs, dtype=np.float64)))
        fails_a, fails_b = game.a_parse_failures, game.b_parse_failures
        text = "[" + series[i * width : (i + 1) * width - 1].decode("ascii") + "]"
        out.append(
            {
                "n_rounds": n,
                "agent_a_cooperation_rate": coops_a[i] / n if n else None,
                "agent_b_cooperation_rate": coops_b[i] / n if n else None,
                "overall_cooperation_rate": (coops_a[i] + coops_b[i]) / (2 * n) if n else None,
                "cooperation_rate_over_time": text,
                "agent_a_retaliation_rate": ret_a[i][0],
                "agent_b_retaliation_rate": ret_b[i][0],
                "agent_a_forgiveness_rate": ret_a[i][1],
                "agent_b_forgiveness_rate": ret_b[i][1],
                "agent_a_total_payoff": total_a,
                "agent_b_total_payoff": total_b,
                "agent_a_payoff_per_round": total_a / n if n else None,
                "agent_b_payoff_per_round": total_b / n if n else None,
                "agent_a_exploitability_payoff_gap": total_b - total_a,
                "agent_b_exploitability_payoff_gap": total_a - total_b,
                "time_to_collapse": collapse_at[i],
                "agent_a_parse_failures": int(fails_a),
                "agent_b_parse_failures": int(fails_b),
                "agent_a_fallback_rate": fails_a / n if n else None,
                "agent_b_fallback_rate": fails_b / n if n else None,
                "agent_a_decided_cooperation_rate": _decided_rate(
                    a[i], coops_a[i], game.a_fallback
                ),
                "agent_b_decided_cooperation_rate": _decided_rate(
                    b[i], coops_b[i], game.b_fallback
                ),
                "agent_a_mean_p_cooperate": mean_probability(game.a_p_cooperate),
                "agent_b_mean_p_cooperate": mean_probability(game.b_p_cooperate),
                "collapsed_fraction": (
                    None if collapse_at[i] is None and n == 0 else float(collapse_at[i] is not None)
                ),
                **behaviour_a[i],
                **behaviour_b[i],
                **talk_columns(game.talk),
            }
        )
    return out


def _retaliations(mine: np.ndarray, theirs: np.ndarray) -> list[tuple[float | None, float | None]]:
    """`retaliation_and_forgiveness` of each row (game) of the moves."""
    provoked = ~theirs[:, :-1]
    times = provoked.sum(axis=1).tolist()
    retaliated = (~mine[:, 1:] & provoked).sum(axis=1).tolist()
    return [
        (r / k, (k - r) / k) if k else (None, None) for r, k in zip(retaliated, times, strict=True)
    ]


def _collapses(a: np.ndarray, b: np.ndarray, collapse: CollapseParams) -> list[int | None]:
    """`time_to_collapse` of each row (game) of the moves."""
    count, n = a.shape
    k = collapse.k
    if k <= 0 or n < k:
        return [None] * count
    csum = np.zeros((count, n + 1), dtype=np.int64)
    np.cumsum(a.astype(np.int64) + b, axis=1, out=csum[:, 1:])
    window = csum[:, k:] - csum[:, :-k]
    # Integer comparison avoids float rounding: count / (2k) <= threshold.
    hits = window <= collapse.threshold * 2 * k + 1e-9
    first = hits.argmax(axis=1).tolist()
    return [f if hit else None for f, hit in zip(first, hits.any(axis=1).tolist(), strict=True)]


def decided_cooperation_rate(
    coop: np.ndarray, fallback: Sequence[bool] | np.ndarray | None
) -> float | None:
    """The cooperation rate over the rounds not played as a fallback."""
    if fallback is None:
        return cooperation_rate(coop)
    decided = ~_as_bool(fallback)
    return cooperation_rate(coop[decided])


def _decided_rate(
    coop: np.ndarray, cooperations: int, fallback: Sequence[bool] | np.ndarray | None
) -> float | None:
    """`decided_cooperation_rate` from the count of C (the same float: a mean of booleans is
    their count over their number)."""
    if fallback is None:
        return cooperations / coop.size if coop.size else None
    fell_back = _as_bool(fallback)
    if not fell_back.any():
        return cooperations / coop.size if coop.size else None
    decided = int(fell_back.size - np.count_nonzero(fell_back))
    return int(np.count_nonzero(coop[~fell_back])) / decided if decided else None


def mean_probability(values: Sequence[float | None] | np.ndarray | None) -> float | None:
    """The mean of the known probabilities (None and NaN left out); None when none is known."""
    if values is None:
        return None
    return _mean_ignoring_none(values)


def _json_list(values: list[float]) -> str:
    """A compact JSON list (the stored form of cooperation_rate_over_time)."""
    return orjson.dumps(values).decode()


# How orjson writes 0.0, 0.5 and 1.0, each with the comma after it: 4 bytes.
_SERIES_TOKENS = np.array([b"0.0,", b"0.5,", b"1.0,"], dtype="S4")


def _series_json(a_coop: np.ndarray, b_coop: np.ndarray) -> str:
    """`_json_list(cooperation_rate_over_time(a, b))`, the same text, written from fixed tokens
    (each round's value is 0.0, 0.5 or 1.0) rather than float by float."""
    if a_coop.size == 0:
        return "[]"
    body = _SERIES_TOKENS[a_coop.astype(np.int8) + b_coop].tobytes()
    return "[" + body[:-1].decode("ascii") + "]"


def series_values(text: str) -> np.ndarray:
    """A stored JSON list of numbers (cooperation_rate_over_time) as float64: the values
    orjson reads, read directly when every value is written 0.0, 0.5 or 1.0 (a game's
    series), else by orjson."""
    raw = text.encode()
    if len(raw) % 4 == 1 and len(raw) > 1 and raw[:1] == b"[" and raw[-1:] == b"]":
        words = np.frombuffer(raw[1:-1] + b",", dtype="<u4")  # one value and its comma each
        half, whole = words == _HALF, words == _WHOLE
        if ((words == _NONE) | half | whole).all():
            return half * 0.5 + whole * 1.0
    return np.asarray(orjson.loads(text), dtype=np.float64)


_NONE, _HALF, _WHOLE = np.frombuffer(_SERIES_TOKENS.tobytes(), dtype="<u4")


def _mean_ignoring_none(values: Iterable[Any]) -> float | None:
    """The mean of the values that are not None or NaN, summed by Python's `sum` (the same
    float whether the values come as an array or a list); None when there is none."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "f":
        kept = values[~np.isnan(values)].tolist()
    else:
        values = values if isinstance(values, list) else list(values)
        if set(map(type, values)) <= _PLAIN_NUMBERS:  # a NaN is the float unequal to itself
            kept = [float(v) for v in values if v is not None and v == v]
        else:
            kept = [
                float(v)
                for v in values
                if v is not None and not (isinstance(v, float) and math.isnan(v))
            ]
    return sum(kept) / len(kept) if kept else None


_PLAIN_NUMBERS = frozenset({float, int, type(None)})


def mean_over_time(series: Sequence[Sequence[float]]) -> list[float]:
    """Per round t, the mean over the series that reached round t."""
    longest = max((len(s) for s in series), default=0)
    if longest == 0:
        return []
    total = np.zeros(longest, dtype=np.float64)
    count = np.zeros(longest, dtype=np.int64)
    for values in series:
        n = len(values)
        total[:n] += np.asarray(values, dtype=np.float64)
        count[:n] += 1
    return (total / count).tolist()


def condition_summary(replicate_rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The condition row: mean of each metric over replicates (None ignored) and n_replicates;
    memory-one probabilities pooled over games, visit counts summed."""
    out: dict[str, Any] = {"n_replicates": len(replicate_rows)}
    for column in METRIC_COLUMNS:
        if column == "cooperation_rate_over_time":
            series = [series_values(r[column]) for r in replicate_rows if r.get(column)]
            out[column] = _json_list(mean_over_time(series))
        elif column in COUNT_COLUMNS:
            out[column] = int(sum(int(r.get(column) or 0) for r in replicate_rows))
        elif column in POOLED_COLUMNS:
            visits, coops = _pooled(replicate_rows, column)
            out[column] = float(coops.sum() / visits.sum()) if visits.sum() > 0 else None
        else:
            out[column] = _mean_ignoring_none([r.get(column) for r in replicate_rows])
    return out


def _pooled(rows: Sequence[Mapping[str, Any]], column: str) -> tuple[np.ndarray, np.ndarray]:
    """(visits, cooperations) per game of a memory-one state (from the per-game ratio)."""
    visits = np.array([float(r.get(POOLED_COLUMNS[column]) or 0) for r in rows])
    ratio = np.array([float(r.get(column) or 0.0) for r in rows])
    return visits, np.round(ratio * visits)


def _numbers(values: list[Any]) -> list[float]:
    """`_numeric` of each value (None, text: NaN)."""
    if set(map(type, values)) <= _PLAIN_NUMBERS:
        return [math.nan if v is None else float(v) for v in values]
    return [_numeric(v) for v in values]


def _numeric(value: Any) -> float:
    if value is None or isinstance(value, (str, bytes)):
        return math.nan
    return float(value)


@dataclass(frozen=True, slots=True)
class MetricDesign:
    """What bounds a condition's metrics: the payoff matrix's smallest and largest payoff and
    the fewest and most rounds a game can have (`max_rounds` None: unbounded)."""

    payoff_min: float
    payoff_max: float
    min_rounds: int
    max_rounds: int | None


def _scaled(low_per_round: float, high_per_round: float, design: MetricDesign) -> Bounds:
    """The range of a sum over a game's rounds of a value in [low, high] per round."""
    most = math.inf if design.max_rounds is None else float(design.max_rounds)
    fewest = float(design.min_rounds)
    low = low_per_round * (fewest if low_per_round >= 0 else most)
    high = high_per_round * (most if high_per_round >= 0 else fewest)
    return low, high


SUM_SUFFIXES: tuple[str, ...] = (
    "total_payoff",
    "exploitability_payoff_gap",
    "n_rounds",
    "time_to_collapse",
    "parse_failures",
    "llm_calls",
    "input_tokens",
    "output_tokens",
    "cost_usd",
)


def is_sum_over_rounds(column: str) -> bool:
    """Whether a metric adds up over a game's rounds (its skew follows the horizon's)."""
    return column.endswith(SUM_SUFFIXES)


def interval_kind(column: str) -> str:
    """The kind of a metric, which decides its interval method (core/stats.py)."""
    if column in SHARE_COLUMNS:
        return KIND_SHARE
    if column in POOLED_COLUMNS:
        return KIND_POOLED_RATIO
    return KIND_MEAN


def feasible_range(column: str, design: MetricDesign | None = None) -> Bounds | None:
    """The values a metric's condition mean can take: [0, 1] for rates, shares and
    probabilities; payoffs and rounds from the design; [0, inf) for counts (None: unknown)."""
    if any(word in column for word in ("rate", "fraction", "p_coop", "fontana", "p_cooperate")):
        return (0.0, 1.0)
    if column.endswith("first_move_cooperation"):
        return (0.0, 1.0)
    if column.endswith(("llm_calls", "input_tokens", "output_tokens", "cost_usd")):
        return (0.0, math.inf)
    if design is None:
        return None
    spread = design.payoff_max - design.payoff_min
    most = math.inf if design.max_rounds is None else float(design.max_rounds)
    if column.endswith("payoff_per_round"):
        return (design.payoff_min, design.payoff_max)
    if column.endswith("total_payoff"):
        return _scaled(design.payoff_min, design.payoff_max, design)
    if column.endswith("exploitability_payoff_gap"):
        return _scaled(-spread, spread, design)
    if column == "n_rounds":
        return (float(design.min_rounds), most)
    if column.endswith("parse_failures"):
        return (0.0, most)
    if column == "time_to_collapse":
        return (0.0, max(0.0, most - 1.0))
    return None


IDENTITY_COLUMNS = frozenset(
    {"run_id", "condition", "scope", "replicate", "n_replicates", "agent_a_name", "agent_b_name"}
)
# Written beside the intervals on condition rows: the metrics whose interval was clipped.
CLIPPED_COLUMN = "clipped_intervals"


def interval_columns(columns: Iterable[str]) -> list[str]:
    """Of these aggregate columns, those that get an interval: every per-game metric (usage
    columns included) except identities, visit counts and the per-round series."""
    return [
        c
        for c in columns
        if c not in IDENTITY_COLUMNS
        and c not in COUNT_COLUMNS
        and c not in ("cooperation_rate_over_time", CLIPPED_COLUMN)
        and not c.endswith(("_ci_low", "_ci_high"))
    ]


# A total over a game's rounds and the same payoff per round: conditions of unequal horizons are
# compared per round (a 12-round total against a 50-round one says nothing about play).
PER_ROUND_OF: dict[str, str] = {
    f"agent_{side}_total_payoff": f"agent_{side}_payoff_per_round" for side in "ab"
}


def horizons_differ(rounds_by_condition: Mapping[str, float | None]) -> bool:
    """Whether conditions' games differ in length (mean rounds per condition)."""
    known = {round(float(v), 9) for v in rounds_by_condition.values() if v is not None}
    return len(known) > 1


def comparable_metric(metric: str, rounds_by_condition: Mapping[str, float | None]) -> str:
    """The metric to compare conditions by: a payoff total becomes the payoff per round when
    the conditions' horizons differ; any other metric is itself."""
    if metric in PER_ROUND_OF and horizons_differ(rounds_by_condition):
        return PER_ROUND_OF[metric]
    return metric


def metric_kinds(columns: Iterable[str]) -> dict[str, str]:
    """Each interval column's kind (recorded in the manifest, named in the report)."""
    return {c: interval_kind(c) for c in interval_columns(columns)}


def add_intervals(
    rows: list[dict[str, Any]],
    settings: IntervalSettings,
    generator_for: Callable[[str], np.random.Generator],
    design_for: Callable[[str], MetricDesign | None] | None = None,
) -> list[dict[str, Any]]:
    """Give each condition row `<metric>_ci_low`/`_ci_high` for every metric (replicate rows
    get no such keys: `row.get` and aggregates.parquet give null): 95% intervals over the condition's games by the method of the metric's kind,
    see core/stats.py, clipped to the metric's feasible range under the condition's design
    (`design_for(condition)`); `clipped_intervals` lists the metrics whose interval was clipped.
    `generator_for(condition)` gives the condition's generator (seeded from the run seed and
    the condition's name by the caller, so adding a condition changes no other interval)."""
    names = interval_columns(rows[0]) if rows else []
    by_condition: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row.get("scope") == "replicate":
            by_condition.setdefault(str(row["condition"]), []).append(row)
    ends = [f"{column}_ci_{end}" for column in names for end in ("low", "high")]
    ends += ["cooperation_rate_over_time_ci_low", "cooperation_rate_over_time_ci_high"]
    empty = dict.fromkeys([*ends, CLIPPED_COLUMN])
    for row in rows:
        if row.get("scope") != "condition":
            continue  # no interval keys (null in aggregates.parquet): 2 KB a game less held
        row.update(empty)
        games = by_condition.get(str(row["condition"]), [])
        if not games:
            continue
        design = design_for(str(row["condition"])) if design_for is not None else None
        rng = generator_for(str(row["condition"]))
        weights = resample_weights(len(games), settings.resamples, rng)
        found: dict[str, tuple[float | None, float | None]] = {}
        plain = [c for c in names if interval_kind(c) == KIND_MEAN]
        values = _GameValues(games, names)
        means = clipped_mean_intervals(
            values.matrix(plain),
            weights,
            settings.level,
            [feasible_range(c, design) for c in plain],
            [is_sum_over_rounds(c) for c in plain],
        )
        clipped = [c for c, (_, _, was) in zip(plain, means, strict=True) if was]
        found.update((c, (low, high)) for c, (low, high, _) in zip(plain, means, strict=True))
        for column in names:
            kind = interval_kind(column)
            if kind == KIND_SHARE:
                found[column] = share_interval(values.column(column))
            elif kind == KIND_POOLED_RATIO:
                visits, coops = values.pooled(column)
                found[column] = ratio_interval(coops, visits, settings.level)
        for column in names:  # shares and pooled ratios lie in [0, 1] by construction
            row[f"{column}_ci_low"], row[f"{column}_ci_high"] = found[column]
        row[CLIPPED_COLUMN] = ",".join(clipped) if clipped else None
        _add_bands(row, games, rng, settings)
    return rows


class _GameValues:
    """A condition's games' values of the interval columns (and the visit counts of the
    pooled ones) as arrays: read at once (`value_table`) when every value is a plain number
    or None, else one by one as `_numbers`, `_numeric` and `_pooled` read them (the same
    floats either way)."""

    def __init__(self, games: Sequence[Mapping[str, Any]], names: Sequence[str]) -> None:
        self.games = games
        wanted = [*names, *(POOLED_COLUMNS[c] for c in names if c in POOLED_COLUMNS)]
        self.wanted = list(dict.fromkeys(wanted))
        self.at = {column: i for i, column in enumerate(self.wanted)}
        read = value_table(games, self.wanted)
        self.table, self.nones_only = (None, False) if read is None else read

    def matrix(self, columns: Sequence[str]) -> np.ndarray:
        """Games x columns in row-major order, as the products of the bootstrap expect it (a
        matrix product's floats depend on the operands' memory layout)."""
        if self.table is not None:
            return np.ascontiguousarray(self.table[:, [self.at[c] for c in columns]])
        values = [_numbers([g.get(c) for g in self.games]) for c in columns]
        matrix = np.ascontiguousarray(np.array(values, dtype=np.float64).T)
        return matrix.reshape(len(self.games), len(columns))

    def column(self, column: str) -> np.ndarray | list[float]:
        """One column's values (None and text as NaN)."""
        if self.table is not None:
            return self.table[:, self.at[column]]
        return [_numeric(g.get(column)) for g in self.games]

    def pooled(self, column: str) -> tuple[np.ndarray, np.ndarray]:
        """`_pooled`: (visits, cooperations) per game of a pooled ratio; `float(v or 0)` of
        each value is `where(NaN, 0, v) + 0.0` when a NaN stands for None only (+ 0.0 turns
        -0.0, which is falsy, into 0.0)."""
        if self.table is None or not self.nones_only:
            return _pooled(self.games, column)
        visits = self.table[:, self.at[POOLED_COLUMNS[column]]]
        ratio = self.table[:, self.at[column]]
        visits = np.where(np.isnan(visits), 0.0, visits) + 0.0
        ratio = np.where(np.isnan(ratio), 0.0, ratio) + 0.0
        return visits, np.round(ratio * visits)


def _add_bands(
    row: dict[str, Any],
    games: Sequence[Mapping[str, Any]],
    rng: np.random.Generator,
    settings: IntervalSettings,
) -> None:
    """Per-round intervals of cooperation_rate_over_time (the mean over the games that reached
    the round), as JSON lists like the series itself."""
    texts = [g["cooperation_rate_over_time"] for g in games if g.get("cooperation_rate_over_time")]
    if not texts:
        return
    matrix = series_matrix(texts, series_values)
    longest = matrix.shape[1]
    weights = resample_weights(len(texts), min(BAND_RESAMPLES, settings.resamples), rng)
    bands = mean_intervals(matrix, weights, settings.level, [(0.0, 1.0)] * longest)
    if all(low is None for low, _ in bands):
        return
    row["cooperation_rate_over_time_ci_low"] = _json_list(
        [None if low is None else round(low, 6) for low, _ in bands]  # 6 decimals
    )
    row["cooperation_rate_over_time_ci_high"] = _json_list(
        [None if high is None else round(high, 6) for _, high in bands]
    )


def mean_and_ci95(values: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    """(mean, lower, upper) of a normal-approximation 95% confidence interval; None when empty
    (None and NaN are missing values) or when a value is infinite."""
    arr = np.asarray([v for v in values if v is not None], dtype=np.float64)
    arr = arr[~np.isnan(arr)]
    if arr.size == 0 or np.isinf(arr).any():
        return None, None, None
    mean = float(arr.mean())
    if arr.size == 1:
        return mean, mean, mean
    half = 1.96 * float(arr.std(ddof=1)) / math.sqrt(arr.size)
    return mean, mean - half, mean + half


@dataclass(slots=True)
class GameOutcome:
    """What the metrics need from one played game (moves as booleans, True for C).

    `totals` (payoff of A, of B) and `cooperations` (C count of A, of B) are computed from the
    arrays when not given; the vectorized engine gives them, summed for a whole batch at once.
    """

    condition: str
    replicate: int
    agent_a_name: str
    agent_b_name: str
    a_coop: np.ndarray
    b_coop: np.ndarray
    a_payoffs: np.ndarray
    b_payoffs: np.ndarray
    a_parse_failures: int = 0
    b_parse_failures: int = 0
    a_fallback: np.ndarray | None = None  # per round: the move was a fallback (LLM agents)
    b_fallback: np.ndarray | None = None
    a_p_cooperate: np.ndarray | None = None  # per round: P(C), NaN when unknown (LLM agents)
    b_p_cooperate: np.ndarray | None = None
    totals: tuple[float, float] | None = None
    cooperations: tuple[int, int] | None = None
    talk: tuple[TalkTrack, TalkTrack] | None = None  # games with a message channel

    def __post_init__(self) -> None:
        if self.totals is None:
            self.totals = (float(self.a_payoffs.sum()), float(self.b_payoffs.sum()))
        if self.cooperations is None:
            self.cooperations = (int(self.a_coop.sum()), int(self.b_coop.sum()))


def aggregate_rows(
    run_id: str,
    outcomes: Iterable[GameOutcome],
    condition_order: Sequence[str],
    collapse: CollapseParams | None = None,
) -> list[dict[str, Any]]:
    """aggregates.parquet rows: per condition (config order) its replicate rows, then its mean row."""
    by_condition: dict[str, list[GameOutcome]] = {}
    for outcome in outcomes:
        by_condition.setdefault(outcome.condition, []).append(outcome)
    order = [c for c in condition_order if c in by_condition] + sorted(
        set(by_condition) - set(condition_order)
    )
    rows: list[dict[str, Any]] = []
    for condition in order:
        games = sorted(by_condition[condition], key=lambda g: g.replicate)
        by_length: dict[int, list[int]] = {}
        for i, game in enumerate(games):
            by_length.setdefault(int(_as_bool(game.a_coop).size), []).append(i)
        metrics: list[dict[str, Any]] = [{}] * len(games)
        for length, members in by_length.items():  # games of one length together, by batches
            step = max(1, BATCH_ROUNDS // max(1, length))
            for start in range(0, len(members), step):
                batch = members[start : start + step]
                found = games_metrics([games[i] for i in batch], collapse)
                for i, values in zip(batch, found, strict=True):
                    metrics[i] = values
        rep_rows = []
        for game, values in zip(games, metrics, strict=True):
            row: dict[str, Any] = {
                "run_id": run_id,
                "condition": condition,
                "scope": "replicate",
                "replicate": game.replicate,
                "n_replicates": 1,
                "agent_a_name": game.agent_a_name,
                "agent_b_name": game.agent_b_name,
            }
            row.update(values)
            rep_rows.append(row)
        summary: dict[str, Any] = {
            "run_id": run_id,
            "condition": condition,
            "scope": "condition",
            "replicate": None,
            "agent_a_name": games[0].agent_a_name,
            "agent_b_name": games[0].agent_b_name,
        }
        summary.update(condition_summary(rep_rows))
        rows.extend(rep_rows)
        rows.append(summary)
    return [{column: row.get(column) for column in AGGREGATE_COLUMNS} for row in rows]
