"""Exact conditions (pure): a condition deterministic by construction plays the same game every
time, so its values are exact, not estimates, and have no sampling interval.

A condition is exact when nothing in it can draw:
- neither agent can vary: a policy that never draws (each policy class declares `deterministic`
  in `pdbench.agents.policy`), an Axelrod strategy the library classifies as not stochastic.
  An LLM agent always can (its replies are sampled; even the mock, or temperature 0, is treated
  as possibly varying: a provider need not be deterministic), and so can a person's moves (one
  sample of how they play);
- no execution noise;
- a fixed horizon (a geometric horizon draws each game's length);
- a message channel read by rules (a judge that reads messages with an LLM could vary).

`condition_exactness` decides it, in this one place; the runner records the answer in the
manifest (`conditions[i].exact` and `conditions[i].could_vary`), and the aggregates carry it on
each condition row (`exact`; and `identical_games` when every game gave the same values). The
interval of an exact condition's metric is the value itself (`<metric>_ci_low` = `_ci_high` =
the value), whatever the number of games; every screen reads the flag from the artifacts and
shows the value as exact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Condition rows of aggregates.parquet: deterministic by construction (null on replicate rows).
EXACT_COLUMN = "exact"
# Condition rows: every game gave the same value of every metric (usage columns aside).
IDENTICAL_COLUMN = "identical_games"
# What a screen says beside an exact value, and beside the wide interval of a condition whose
# games were all identical although its agents could have played otherwise.
EXACT_NOTE = "exact: deterministic"
IDENTICAL_NOTE = (
    "every game identical; the interval is wide because the games could have differed ({why})"
)


@dataclass(frozen=True, slots=True)
class Exactness:
    """Whether a condition is exact, and when not, what could make its games differ."""

    exact: bool
    could_vary: tuple[str, ...] = ()


def condition_exactness(
    agents_could_vary: Sequence[str | None],
    horizon_type: str,
    noise: float,
    reader_could_vary: str | None = None,
) -> Exactness:
    """Whether a condition is deterministic by construction. `agents_could_vary`: for each
    agent, what could make its moves vary (e.g. "agent_a: an LLM agent"), None when nothing
    can (see the module docstring); `horizon_type`: fixed or geometric; `noise`: the execution
    noise; `reader_could_vary`: what could make the reading of messages vary (None: rules)."""
    reasons = [why for why in agents_could_vary if why]
    if horizon_type != "fixed":
        reasons.append(f"a {horizon_type} horizon (each game's length is drawn)")
    if noise:
        reasons.append(f"execution noise {noise:g}")
    if reader_could_vary:
        reasons.append(reader_could_vary)
    return Exactness(not reasons, tuple(reasons))


def recorded_exact(manifest: Mapping[str, Any]) -> dict[str, bool]:
    """Per condition name, whether the run's manifest records it as exact (a manifest written
    before the flag existed: no condition is)."""
    out: dict[str, bool] = {}
    for condition in manifest.get("conditions") or []:
        if isinstance(condition, Mapping) and "name" in condition:
            out[str(condition["name"])] = condition.get("exact") is True
    return out


def recorded_could_vary(manifest: Mapping[str, Any]) -> dict[str, list[str]]:
    """Per condition name, what the manifest says could make its games differ."""
    out: dict[str, list[str]] = {}
    for condition in manifest.get("conditions") or []:
        if isinstance(condition, Mapping) and "name" in condition:
            reasons = condition.get("could_vary")
            out[str(condition["name"])] = (
                [str(r) for r in reasons] if isinstance(reasons, list) else []
            )
    return out


def flag(value: Any) -> bool:
    """A boolean cell as read back (Python or NumPy bool; null and NaN are false)."""
    if hasattr(value, "item"):  # numpy.bool_ from a DataFrame
        value = value.item()
    return value is True


def is_exact_row(row: Mapping[str, Any]) -> bool:
    """Whether an aggregate condition row is exact (its `exact` column is true)."""
    return flag(row.get(EXACT_COLUMN))


def identical_note(row: Mapping[str, Any], could_vary: Sequence[str] = ()) -> str | None:
    """The note beside the interval of a condition that is not exact but whose games were all
    identical (None otherwise): why the interval is wide."""
    if is_exact_row(row) or not flag(row.get(IDENTICAL_COLUMN)):
        return None
    if int(row.get("n_replicates") or 0) < 2:
        return None
    why = "; ".join(could_vary) if could_vary else "its agents"
    return IDENTICAL_NOTE.format(why=why)


# Usage columns (tokens, cost) may differ between identical games; they never make games differ.
_USAGE_SUFFIXES = ("llm_calls", "input_tokens", "output_tokens", "cost_usd")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:  # both NaN
        return True
    return bool(a == b)


def games_identical(games: Sequence[Mapping[str, Any]], names: Sequence[str]) -> bool:
    """Whether every game gave the same value of every metric in `names` and the same
    cooperation series (usage columns aside); True for one game."""
    columns = [n for n in names if not n.endswith(_USAGE_SUFFIXES)]
    columns.append("cooperation_rate_over_time")
    first = games[0] if games else {}
    return all(_same(g.get(c), first.get(c)) for g in games[1:] for c in columns)


def set_exact_intervals(row: dict[str, Any], names: Sequence[str]) -> None:
    """An exact condition row's intervals: each the row's value itself (null where the value
    is), the per-round bands the series itself."""
    for column in names:
        value = row.get(column)
        row[f"{column}_ci_low"] = row[f"{column}_ci_high"] = value
    series = row.get("cooperation_rate_over_time")
    if series:
        row["cooperation_rate_over_time_ci_low"] = series
        row["cooperation_rate_over_time_ci_high"] = series


def exactness_lines(
    conditions: Sequence[Mapping[str, Any]], could_vary: Mapping[str, Sequence[str]]
) -> list[str]:
    """Plain-text lines about the exact conditions (values, not estimates) and the conditions
    whose games were all identical although they could have differed (why their intervals are
    wide); `could_vary`: per condition, what could have made its games differ (manifest)."""
    exact = [str(r["condition"]) for r in conditions if is_exact_row(r)]
    out = []
    if exact:
        out.append(
            f"exact: {', '.join(exact)}: deterministic by construction (no policy that draws, "
            "no LLM agent, no noise, a fixed horizon): every game is the same game, so the "
            "values are exact, with no interval"
        )
    for row in conditions:
        note = identical_note(row, could_vary.get(str(row["condition"]), ()))
        if note:
            out.append(f"note: {row['condition']}: {note}")
    return out
