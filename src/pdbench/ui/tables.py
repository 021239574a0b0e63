"""Pure pandas reshaping of what `pdbench.ui.data` loaded, for the pages: one game's rounds, the
aggregate rows of a game or condition, metric tables (values from aggregates.parquet, computed by
`pdbench.core.metrics`; only the spread over replicates, min, max and std, is computed here), and
the loaded tournament and evolution with their display tables (leaderboard.parquet and
generations.parquet reshaped). Nothing here reads files."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from pdbench.core import rounds_display
from pdbench.core.exact import EXACT_NOTE, is_exact_row
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.strategy_card import card_ties, strategy_label
from pdbench.core.strategy_gof import card_verdict
from pdbench.core.talk_metrics import (
    DECLARED,
    SAID,
    TALK_COLUMNS,
    TALK_LABELS,
    retired_talk_note,
)
from pdbench.storage.aggregate import series_cell
from pdbench.storage.record.fields import ROUND_INDEX, side_field
from pdbench.storage.talk_corpus import reader_accuracy_line
from pdbench.ui.podium import PodiumStep, podium_medals
from pdbench.ui.style import Player, medal

# --------------------------------------------------------------------------------------------
# Saved runs, as listed in the pickers


@dataclass(frozen=True, slots=True)
class SavedRun:
    """One entry of a list of saved runs, from its manifest."""

    path: str
    kind: str
    run_id: str
    status: str
    started: str
    summary: str
    where: str = ""  # the directory, shown when another listed run has the same run_id

    def label(self) -> str:
        """A one-line description for select boxes (the status only when not completed)."""
        started = self.started[:16].replace("T", " ") if self.started else "?"
        parts = [self.run_id, "" if self.status == "completed" else self.status, started]
        where = [f"in {self.where}"] if self.where else []
        return " · ".join(p for p in [*parts, self.summary, *where] if p)


def plural(n: int, word: str) -> str:
    """'1 condition', '3 conditions'."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def run_summary(kind: str, m: Mapping[str, Any]) -> str:
    """One line on what a run holds, from its manifest (conditions and rounds, players and
    matches, or the process and its outcome)."""
    totals = m.get("totals") or {}
    if kind in ("experiment", "groups", "pgg", "commons"):
        return (
            f"{plural(len(m.get('conditions') or []), 'condition')} · "
            f"{int(totals.get('rounds', 0) or 0):,} rounds"
        )
    if kind == "tournament":
        return (
            f"{len(m.get('players') or [])} players · {int(totals.get('matches', 0)):,} matches · "
            f"noise {m.get('noise', 0):g}"
        )
    if kind == "group_tournament":
        return (
            f"groups of {m.get('group_size', '?')} · {len(m.get('players') or [])} players · "
            f"{int(totals.get('games', 0)):,} games · noise {m.get('noise', 0):g}"
        )
    if kind == "group_evolution":
        return (
            f"groups of {m.get('group_size', '?')} · "
            f"{str(m.get('process', '?')).replace('_', ' ')} · "
            f"{plural(len(m.get('runs') or []), 'seed')}"
        )
    fixated = m.get("fixated")
    return (
        f"{str(m.get('process', '?')).replace('_', '-')} · noise {m.get('noise', 0):g} · "
        f"{m.get('generations_run', '?')} generations"
        + (f" · fixated on {fixated}" if fixated else "")
    )


# --------------------------------------------------------------------------------------------
# Experiments: games and aggregate rows


def games(aggregates: pd.DataFrame, order: list[str] | None = None) -> dict[str, list[int]]:
    """The replicates of each condition (its replicate rows of the aggregates), conditions in
    config order."""
    rows = aggregates.loc[aggregates["scope"] == "replicate", ["condition", "replicate"]]
    pairs = rows.dropna().drop_duplicates()
    out: dict[str, list[int]] = {}
    present = list(dict.fromkeys(str(c) for c in pairs["condition"]))
    ordered = [c for c in (order or []) if c in present] + sorted(set(present) - set(order or []))
    for condition in ordered:
        reps = pairs.loc[pairs["condition"] == condition, "replicate"]
        out[condition] = sorted(int(r) for r in reps)
    return out


def agent_names(aggregates: pd.DataFrame, condition: str) -> tuple[str, str]:
    """The two agents' names in a condition (its first aggregate row; 'A', 'B' when unknown)."""
    rows = aggregates.loc[aggregates["condition"] == condition].head(1)

    def name(side: str) -> str:
        column = f"agent_{side}_name"
        known = len(rows) and column in rows.columns and pd.notna(rows[column].iloc[0])
        return str(rows[column].iloc[0]) if known else side.upper()

    return name("a"), name("b")


def game_rounds(rounds: pd.DataFrame, condition: str, replicate: int) -> pd.DataFrame:
    """The rounds of one game, sorted by round, with a `round` column numbered from 1
    (`rounds_display`)."""
    mask = (rounds["condition"] == condition) & (rounds["replicate"] == replicate)
    game = rounds.loc[mask].sort_values(ROUND_INDEX).reset_index(drop=True)
    game["round"] = game[ROUND_INDEX] + rounds_display.FIRST_ROUND
    return game


def flips_and_fallbacks(game: pd.DataFrame) -> tuple[int, int]:
    """(moves flipped by noise, fallback moves after invalid replies) of one game, both agents."""
    flips = sum(
        int((game[side_field(s, "action")] != game[side_field(s, "intended_action")]).sum())
        for s in "ab"
    )
    return flips, sum(int(game[side_field(s, "parse_failure")].sum()) for s in "ab")


def replicate_row(aggregates: pd.DataFrame, condition: str, replicate: int) -> pd.Series | None:
    """The aggregate row of one game, or None."""
    rows = aggregates[
        (aggregates["scope"] == "replicate")
        & (aggregates["condition"] == condition)
        & (aggregates["replicate"] == replicate)
    ]
    return rows.iloc[0] if len(rows) else None


def condition_row(aggregates: pd.DataFrame, condition: str) -> pd.Series | None:
    """The condition-mean aggregate row, or None."""
    rows = aggregates[(aggregates["scope"] == "condition") & (aggregates["condition"] == condition)]
    return rows.iloc[0] if len(rows) else None


def rounds_by_condition(aggregates: pd.DataFrame) -> dict[str, float | None]:
    """Each condition's mean number of rounds (from its condition row)."""
    rows = aggregates[aggregates["scope"] == "condition"]
    return {
        str(c): (None if pd.isna(n) else float(n))
        for c, n in zip(rows["condition"], rows["n_rounds"], strict=True)
    }


def series_from_json(value: Any) -> list[float]:
    """A JSON list stored in an aggregate cell (e.g. cooperation_rate_over_time) as floats; []
    if absent."""
    return [float(v) for v in series_cell(value)]


# --------------------------------------------------------------------------------------------
# Metric tables

# Aggregate column -> (label, kind); kind picks the number format. Round-valued metrics (kind
# "round") are shown as rounds numbered from 1 by every table below (core/rounds_display.py).
METRICS: dict[str, tuple[str, str]] = {
    "n_rounds": ("rounds played", "count"),
    "agent_a_cooperation_rate": ("A cooperation rate", "rate"),
    "agent_b_cooperation_rate": ("B cooperation rate", "rate"),
    "overall_cooperation_rate": ("overall cooperation rate", "rate"),
    "agent_a_retaliation_rate": ("A retaliation rate", "rate"),
    "agent_b_retaliation_rate": ("B retaliation rate", "rate"),
    "agent_a_forgiveness_rate": ("A forgiveness rate", "rate"),
    "agent_b_forgiveness_rate": ("B forgiveness rate", "rate"),
    "agent_a_total_payoff": ("A total payoff", "payoff"),
    "agent_b_total_payoff": ("B total payoff", "payoff"),
    "agent_a_payoff_per_round": ("A payoff per round", "per_round"),
    "agent_b_payoff_per_round": ("B payoff per round", "per_round"),
    "agent_a_exploitability_payoff_gap": ("A exploitability gap (B − A)", "payoff"),
    "agent_b_exploitability_payoff_gap": ("B exploitability gap (A − B)", "payoff"),
    "time_to_collapse": (rounds_display.metric_label("time_to_collapse"), "round"),
    "agent_a_parse_failures": ("A parse failures", "count"),
    "agent_b_parse_failures": ("B parse failures", "count"),
    "agent_a_fallback_rate": ("A share of moves that were fallbacks", "rate"),
    "agent_b_fallback_rate": ("B share of moves that were fallbacks", "rate"),
    "agent_a_decided_cooperation_rate": ("A cooperation rate, fallbacks left out", "rate"),
    "agent_b_decided_cooperation_rate": ("B cooperation rate, fallbacks left out", "rate"),
    "agent_a_mean_p_cooperate": ("A mean P(C) from log-probabilities", "rate"),
    "agent_b_mean_p_cooperate": ("B mean P(C) from log-probabilities", "rate"),
    **{
        f"agent_{side}_{name}": (
            f"{side.upper()} {label}" + (f" · {reading}" if reading else ""),
            kind,
        )
        for side in "ab"
        for name, (label, kind, reading) in TALK_LABELS.items()
    },
}
TALK_METRICS = frozenset(TALK_COLUMNS)  # shown only for conditions whose agents talked


def format_value(value: Any, kind: str, compact: bool = False) -> str:
    """A metric value as text ('—' when missing); `compact` drops decimals of rates/payoffs."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "—"
    value = float(value)
    if kind == "rate":
        return f"{value:.0%}" if compact else f"{value:.1%}"
    if kind == "per_round":
        return f"{value:.1f}" if compact else f"{value:.2f}"
    if kind == "payoff":
        return f"{value:,.0f}" if compact else f"{value:,.1f}"
    return f"{value:,.1f}" if value != int(value) else f"{int(value):,}"


def _talked(rows: pd.DataFrame) -> bool:
    """Some agent of these aggregate rows wrote a message."""
    counts = [c for c in ("agent_a_messages", "agent_b_messages") if c in rows.columns]
    return any((pd.to_numeric(rows[c], errors="coerce").fillna(0) > 0).any() for c in counts)


def talk_note(aggregates: pd.DataFrame, condition: str) -> str | None:
    """The line shown beside the talk metrics of a condition whose agents talked: which
    reading is which and the reader used (`storage.talk_corpus.reader_accuracy_line`), or that the
    aggregates hold the talk metrics' old names; None when nobody talked."""
    rows = aggregates[aggregates["condition"] == condition]
    retired = retired_talk_note(aggregates.columns)
    if retired is not None and not rows.empty:
        return retired
    if rows.empty or not _talked(rows):
        return None
    return (
        f"Talk: *{SAID}* is the message text as the other player saw it; *{DECLARED}* is the "
        f"agent's structured intention, never shown to the other player. {reader_accuracy_line()}."
    )


def metric_summary(aggregates: pd.DataFrame, condition: str, replicate: int) -> pd.DataFrame:
    """Per metric: this replicate's value, the condition mean (from the condition row) and the
    spread (min, max, std) over the condition's replicate rows; numbers, not text. A
    round-valued metric's values are rounds numbered from 1 (its std is not shifted)."""
    reps = aggregates[(aggregates["scope"] == "replicate") & (aggregates["condition"] == condition)]
    mine = replicate_row(aggregates, condition, replicate)
    mean_row = condition_row(aggregates, condition)
    records = []
    for column, (label, kind) in METRICS.items():
        if column not in aggregates.columns:
            continue
        values = pd.to_numeric(reps[column], errors="coerce")
        shown = partial(rounds_display.shown_value, column)
        if column in TALK_METRICS and not _talked(reps):
            continue  # no message in this condition
        records.append(
            {
                "metric": column,
                "label": label,
                "kind": kind,
                "replicate": None if mine is None else shown(mine[column]),
                "condition_mean": None if mean_row is None else shown(mean_row[column]),
                "min": shown(values.min()),
                "max": shown(values.max()),
                "std": values.std(ddof=1) if values.notna().sum() > 1 else np.nan,
                "n_replicates": int(values.notna().sum()),
                "n_total": len(values),
            }
        )
    return pd.DataFrame.from_records(records)


def round_chip(row: Mapping[str, Any]) -> tuple[str, str]:
    """The headline's texts of a round-valued metric, from its `metric_summary` row (rounds
    numbered from 1): this game's ('round 31', or 'never') and the condition's ('2/3 reps ·
    mean round 30.5', or 'no replicate collapsed')."""
    game, mean = row["replicate"], row["condition_mean"]
    value = "never" if game is None or pd.isna(game) else f"round {int(game):,}"
    if mean is None or pd.isna(mean):
        return value, "no replicate collapsed"
    reps = f"{row['n_replicates']}/{row['n_total']} reps"
    return value, f"{reps} · mean round {format_value(mean, row['kind'])}"


def metric_text_table(summary: pd.DataFrame, replicate: int) -> pd.DataFrame:
    """`metric_summary` as text: per metric its label, this replicate's value, the condition
    mean, min, max and std, and the aggregate column it comes from."""

    def text(column: str) -> list[str]:
        return [format_value(v, k) for v, k in zip(summary[column], summary["kind"], strict=True)]

    return pd.DataFrame(
        {
            "metric": summary["label"],
            f"replicate {replicate}": text("replicate"),
            "condition mean": text("condition_mean"),
            "min": text("min"),
            "max": text("max"),
            "std": text("std"),
            "column": summary["metric"],
        }
    )


def interval_table(aggregates: pd.DataFrame, condition: str) -> pd.DataFrame:
    """Per metric of the condition row: its value and 95% interval over games, as text (the
    numbers are aggregates.parquet's, computed by pdbench.core; rounds numbered from 1); an
    exact condition's (core/exact.py) interval reads 'exact: deterministic'."""
    row = condition_row(aggregates, condition)
    records = []
    if row is None:
        return pd.DataFrame(columns=["metric", "value", "95% interval (games as the unit)"])
    exact = is_exact_row(row)
    for column, (label, kind) in METRICS.items():
        if column not in row.index:
            continue
        shown = partial(rounds_display.shown_value, column)
        low, high = shown(row.get(f"{column}_ci_low")), shown(row.get(f"{column}_ci_high"))
        interval = (
            "—"
            if low is None or high is None or pd.isna(low) or pd.isna(high)
            else f"{format_value(low, kind)} – {format_value(high, kind)}"
        )
        if exact and interval != "—":
            interval = EXACT_NOTE
        records.append(
            {
                "metric": label,
                "value": format_value(shown(row[column]), kind),
                "95% interval (games as the unit)": interval,
            }
        )
    return pd.DataFrame(records)


def strategy_verdict(fits: pd.DataFrame, condition: str, agent: str) -> str | None:
    """The card's words when no strategy in the library fits (None when one does)."""
    rows = fits[(fits["condition"] == condition) & (fits["agent"] == agent)]
    records = rows.astype(object).where(rows.notna(), None).to_dict("records")
    return card_verdict(records)


def strategy_ties(fits: pd.DataFrame, condition: str, agent: str) -> str | None:
    """The card's words when other strategies explain the moves as well as its best named one
    (indistinguishable on these games; None when none does)."""
    rows = fits[(fits["condition"] == condition) & (fits["agent"] == agent)]
    return card_ties(rows.astype(object).where(rows.notna(), None).to_dict("records"))


def strategy_card(fits: pd.DataFrame, condition: str, agent: str, top: int = 3) -> pd.DataFrame:
    """The best-ranked strategies of one agent in one condition, as display text (no share
    when no strategy in the library fits: see strategy_verdict)."""
    rows = fits[(fits["condition"] == condition) & (fits["agent"] == agent)].sort_values("rank")
    fitting = strategy_verdict(fits, condition, agent) is None
    out = []
    for _, r in rows.head(top).iterrows():
        share = "—" if pd.isna(r["share"]) or not fitting else f"{r['share']:.0%}"
        if fitting and not pd.isna(r["share_ci_low"]):
            share += f" ({r['share_ci_low']:.0%}–{r['share_ci_high']:.0%})"
        params = json.loads(r["parameters"] or "{}")
        out.append(
            {
                "rank": int(r["rank"]),
                "strategy": strategy_label(r["strategy"], params),
                "mixture share (95%)": share,
                "tremble": "—" if pd.isna(r["tremble"]) else f"{r['tremble']:.3f}",
                "fitted": ", ".join(f"{k} {v:.2f}" for k, v in params.items()),
            }
        )
    return pd.DataFrame(out)


def in_percent(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """A copy of `frame` with the rate `columns` (0..1) in percent (0..100), for progress columns
    that print one decimal ('91.7%') like every other percentage in the app."""
    out = frame.copy()
    for column in columns:
        if column in out.columns:
            out[column] = out[column].astype(float) * 100.0
    return out


def conditions_table(aggregates: pd.DataFrame) -> pd.DataFrame:
    """One row per condition (its mean over replicates), in the file's order; round-valued
    metrics as rounds numbered from 1."""
    rows = aggregates[aggregates["scope"] == "condition"]
    columns = ["condition", "agent_a_name", "agent_b_name", "n_replicates"] + [
        c for c in METRICS if c in rows.columns
    ]
    table = rows[columns].reset_index(drop=True)
    for column in columns:
        if rounds_display.is_round_metric(column):
            table[column] = rounds_display.shown_value(column, table[column])
    return table


# --------------------------------------------------------------------------------------------
# Tournaments and evolutions


@dataclass(frozen=True)
class Tournament:
    """A finished tournament directory."""

    path: str
    manifest: dict[str, Any]
    leaderboard: pd.DataFrame  # leaderboard.parquet, best first
    pairwise: pd.DataFrame  # payoff_matrix.parquet (long form)
    matches: pd.DataFrame  # matches.parquet
    players: list[Player]  # config order

    @property
    def by_name(self) -> dict[str, Player]:
        """Players by artifact name."""
        return {p.name: p for p in self.players}

    def matrix(self) -> PayoffMatrix:
        """The stage game's payoff matrix (the default one when the snapshot lacks it)."""
        nested = ((self.manifest.get("config") or {}).get("game") or {}).get("payoff_matrix")
        try:
            return PayoffMatrix.from_nested(nested) if nested else PayoffMatrix()
        except Exception:  # a hand-edited manifest: fall back to the default game
            return PayoffMatrix()


@dataclass(frozen=True)
class Evolution:
    """A finished evolution directory."""

    path: str
    manifest: dict[str, Any]
    generations: pd.DataFrame  # generations.parquet
    players: list[Player]  # strategy order
    fixation: pd.DataFrame | None = None  # fixation.parquet (evolution.seeds > 1), file order

    @property
    def by_name(self) -> dict[str, Player]:
        """Strategies by artifact name."""
        return {p.name: p for p in self.players}

    @property
    def last_generation(self) -> int:
        """The last generation recorded."""
        return int(self.generations["generation"].max())

    def at(self, generation: int) -> pd.DataFrame:
        """The rows (one per strategy, in strategy order) of one generation."""
        rows = self.generations[self.generations["generation"] == generation]
        order = {p.name: i for i, p in enumerate(self.players)}
        return rows.sort_values("strategy", key=lambda s: s.map(order)).reset_index(drop=True)


def leaderboard_table(
    board: pd.DataFrame, players: Sequence[Player], steps: Sequence[PodiumStep] = ()
) -> pd.DataFrame:
    """leaderboard.parquet for display: medal (a podium player's is its step's, `steps`), player
    label, then the library's columns."""
    by_name = {p.name: p for p in players}
    medals = podium_medals(steps)
    return pd.DataFrame(
        {
            "rank": [
                medals.get(str(n), medal(r))
                for n, r in zip(board["player"], board["rank"], strict=True)
            ],
            "player": [by_name[str(n)].label for n in board["player"]],
            "score_per_round": board["mean_score_per_round"].to_numpy(),
            "ci95": [
                "—" if pd.isna(lo) or pd.isna(hi) else f"{lo:.2f} – {hi:.2f}"
                for lo, hi in zip(board["ci95_low"], board["ci95_high"], strict=True)
            ],
            "rank_range": [
                "—"
                if lo is None or pd.isna(lo)
                else (f"{lo:.0f}" if lo == hi else f"{lo:.0f}–{hi:.0f}")
                for lo, hi in zip(
                    board.get("rank_ci_low", pd.Series([None] * len(board))),
                    board.get("rank_ci_high", pd.Series([None] * len(board))),
                    strict=True,
                )
            ],
            "wins": board["wins"].to_numpy(),
            "draws": board["draws"].to_numpy(),
            "losses": board["losses"].to_numpy(),
            "matches": board["matches"].to_numpy(),
            "cooperation_rate": board["cooperation_rate"].to_numpy(),
            "name": board["player"].astype(str).to_numpy(),
        }
    )


def final_shares_table(
    first: pd.DataFrame, last: pd.DataFrame, players: Sequence[Player]
) -> pd.DataFrame:
    """Per strategy (rows of generations.parquet): initial and final count, final share and mean
    fitness (also as text, '— (extinct)' for a strategy that died out), largest final share
    first."""
    by_name = {p.name: p for p in players}
    start = dict(zip(first["strategy"].astype(str), first["count"], strict=True))
    table = pd.DataFrame(
        {
            "strategy": [by_name[str(n)].label for n in last["strategy"]],
            "start": [int(start.get(str(n), 0)) for n in last["strategy"]],
            "count": last["count"].astype(int).to_numpy(),
            "share": last["share"].to_numpy(),
            "mean_fitness": last["mean_fitness"].to_numpy(),
            "fitness": [
                "— (extinct)" if int(n) == 0 else f"{f:.3f}"
                for n, f in zip(last["count"], last["mean_fitness"], strict=True)
            ],
            "name": last["strategy"].astype(str).to_numpy(),
        }
    )
    return table.sort_values(["count", "start"], ascending=False, kind="stable").reset_index(
        drop=True
    )


NO_FIXATION = "(no fixation)"  # fixation.parquet's row for the seeds that ended mixed


def fixation_table(fixation: pd.DataFrame, players: Sequence[Player]) -> pd.DataFrame:
    """fixation.parquet for display, most frequent winner first and the no-fixation row last:
    per strategy its label, the numbers of the file (fixations, seeds, probability and its
    Wilson interval ci_low, ci_high, computed by the runner) and the same as text: share,
    interval (both in percent) and 'k of n'."""
    by_name = {p.name: p for p in players}
    names = fixation["strategy"].astype(str)
    table = pd.DataFrame(
        {
            "strategy": [
                "— no fixation (still mixed)"
                if n == NO_FIXATION
                else (by_name[n].label if n in by_name else n)
                for n in names
            ],
            "fixations": fixation["fixations"].astype(int).to_numpy(),
            "seeds": fixation["seeds"].astype(int).to_numpy(),
            "probability": fixation["probability"].to_numpy(dtype=float),
            "ci_low": fixation["ci_low"].to_numpy(dtype=float),
            "ci_high": fixation["ci_high"].to_numpy(dtype=float),
            "share": [format_value(v, "rate") for v in fixation["probability"]],
            "interval": [
                f"{format_value(lo, 'rate')} – {format_value(hi, 'rate')}"
                for lo, hi in zip(fixation["ci_low"], fixation["ci_high"], strict=True)
            ],
            "k_of_n": [
                f"{int(k)} of {int(n)}"
                for k, n in zip(fixation["fixations"], fixation["seeds"], strict=True)
            ],
            "name": names.to_numpy(),
            "last": (names == NO_FIXATION).to_numpy(),
        }
    )
    table = table.sort_values(["last", "fixations"], ascending=[True, False], kind="stable")
    return table.drop(columns="last").reset_index(drop=True)


def fixation_chart_frame(table: pd.DataFrame) -> pd.DataFrame:
    """`fixation_table` in the columns of `science.interval_chart` (one row per strategy)."""
    return pd.DataFrame(
        {
            "condition": table["strategy"],
            "value": table["probability"],
            "low": table["ci_low"],
            "high": table["ci_high"],
            "games": table["seeds"],
            "text": [
                f"{share} [{interval.replace(' – ', ', ')}] · {k}"
                for share, interval, k in zip(
                    table["share"], table["interval"], table["k_of_n"], strict=True
                )
            ],
        }
    )
