"""The group tournament's and group evolution's artifacts as the app shows them: texts of values
with their 95% intervals, the leaderboard with its ranks (ties marked), the games played
filtered by a player, the payoff table by composition, the fixation table beside the exact
probabilities, and the game, the groups and the population in words.

Pure pandas on the loaded tables (`ui.group_science_data`): values are formatted and arranged,
never recomputed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from pdbench.core.exact import EXACT_NOTE
from pdbench.ui.style import medal

NO_FIXATION = "(no fixation)"  # fixation.parquet's row for the seeds that ended mixed
EVERY_PLAYER = "every player"  # the games filter's first option


def known(value: Any) -> bool:
    """Whether a cell holds a number (not None, not NaN)."""
    return value is not None and not pd.isna(value)


def payoff_text(value: Any) -> str:
    """A payoff per round with three decimals ('0.986', '-0.135'); '—' when missing."""
    if not known(value):
        return "—"
    text = f"{float(value):.3f}"
    return "0.000" if text == "-0.000" else text


def short_payoff(value: Any) -> str:
    """A payoff with at most four significant digits ('2', '-0.0125', '1.342'); '—' when
    missing."""
    if not known(value):
        return "—"
    text = f"{float(value):.4g}"
    return "0" if text == "-0" else text


def rate_text(value: Any) -> str:
    """A rate or a probability in percent with one decimal ('96.0%'); '—' when missing."""
    return f"{100 * float(value):.1f}%" if known(value) else "—"


def with_interval(value: Any, low: Any, high: Any, percent: bool, exact: bool = False) -> str:
    """'0.986 [0.907, 1.065]' or '96.0% [86.5%, 98.9%]': a value and its 95% interval (the
    value alone when it has none, '(exact: deterministic)' after it when it is exact)."""
    shown = rate_text if percent else payoff_text
    if not known(value):
        return "—"
    if exact:
        return f"{shown(value)} ({EXACT_NOTE})"
    if not (known(low) and known(high)):
        return shown(value)
    return f"{shown(value)} [{shown(low)}, {shown(high)}]"


def rank_texts(ranks: Sequence[Any]) -> list[str]:
    """Each rank as shown: its number, '=' before it when another player shares it (the
    leaderboard gives tied players the better rank: 1, 1, 3)."""
    counts = Counter(int(r) for r in ranks)
    return [f"={int(r)}" if counts[int(r)] > 1 else str(int(r)) for r in ranks]


def _exact(row: Mapping[str, Any]) -> bool:
    return bool(row.get("exact")) if known(row.get("exact")) else False


# --------------------------------------------------------------------------------------------
# Group tournament


def leaderboard_rows(board: pd.DataFrame) -> pd.DataFrame:
    """leaderboard.parquet (best first) as the table shows it: rank (a medal on the podium,
    '=' for a shared rank), player, payoff per round and cooperation each with its 95%
    interval, games and groups."""
    rows = board.to_dict("records")
    ranks = rank_texts([r["rank"] for r in rows])
    table = pd.DataFrame(
        {
            "rank": [
                f"{medal(int(r['rank']))} {text}" if int(r["rank"]) <= 3 else text
                for r, text in zip(rows, ranks, strict=True)
            ],
            "player": [str(r["player"]) for r in rows],
            "payoff": [
                with_interval(
                    r["mean_payoff_per_round"], r["ci_low"], r["ci_high"], False, _exact(r)
                )
                for r in rows
            ],
            "cooperation": [
                with_interval(
                    r["cooperation_rate"],
                    r["cooperation_ci_low"],
                    r["cooperation_ci_high"],
                    True,
                    _exact(r),
                )
                for r in rows
            ],
            "games": [int(r["games"]) for r in rows],
        }
    )
    if "groups" in board.columns:
        table["groups"] = [int(r["groups"]) if known(r["groups"]) else 0 for r in rows]
    return table


def leaderboard_chart_frame(board: pd.DataFrame) -> pd.DataFrame:
    """One row per player, best first, for the dot-and-whisker chart: label ('=1 · GRIM'),
    payoff per round, its interval, games and the text written beside the dot."""
    rows = board.to_dict("records")
    ranks = rank_texts([r["rank"] for r in rows])
    return pd.DataFrame(
        {
            "label": [f"{rank} · {r['player']}" for rank, r in zip(ranks, rows, strict=True)],
            "value": [float(r["mean_payoff_per_round"]) for r in rows],
            "low": [float(r["ci_low"]) if known(r["ci_low"]) else None for r in rows],
            "high": [float(r["ci_high"]) if known(r["ci_high"]) else None for r in rows],
            "games": [int(r["games"]) for r in rows],
            "text": [
                with_interval(
                    r["mean_payoff_per_round"], r["ci_low"], r["ci_high"], False, _exact(r)
                )
                for r in rows
            ],
        }
    )


def games_rows(games: pd.DataFrame, player: str | None = None) -> pd.DataFrame:
    """groups.parquet as the table shows it, one row per game in plan order: its members and
    each seat's payoff per round (seat order), the repetition, rounds, the group's cooperation
    and payoff per round. With `player`, only the games it played, and its seats' payoffs in a
    column of their own."""
    rows = games
    if player is not None:
        rows = games[[player in members for members in games["members"]]]
    table = pd.DataFrame(
        {
            "game": rows["game"].astype(int).to_numpy(),
            "members": [", ".join(m) for m in rows["members"]],
            "repetition": rows["repetition"].astype(int).to_numpy(),
            "rounds": rows["rounds"].astype(int).to_numpy(),
            "payoff_per_seat": [
                ", ".join(payoff_text(v) for v in p) for p in rows["payoff_per_round"]
            ],
            "group_cooperation": [rate_text(v) for v in rows["group_cooperation"]],
            "group_payoff": [payoff_text(v) for v in rows["group_payoff_per_round"]],
        }
    )
    if player is not None:
        table.insert(
            2,
            "player_payoff",
            [
                ", ".join(payoff_text(v) for m, v in zip(ms, ps, strict=True) if m == player)
                for ms, ps in zip(rows["members"], rows["payoff_per_round"], strict=True)
            ],
        )
    return table


def _number(value: Any) -> str:
    """A game parameter as written in a config ('3', '0.5')."""
    return f"{float(value):g}"


def game_words(game: Mapping[str, Any]) -> str:
    """The stage game of a manifest's `game` entry in words: what a cooperator pays and what
    everyone gets, with its parameters (and, for a public goods game, whether defecting
    pays)."""
    n = int(game.get("n_players") or 0)
    params = {str(k): v for k, v in game.get("params") or []}
    kind = str(game.get("kind") or "")
    if kind == "public_goods":
        r, c = float(params.get("r", 0.0)), float(params.get("c", 1.0))
        gap = f"{c * (1 - r / n):.3g}"
        dominates = (
            f". Since r < N, defecting pays c (1 − r/N) = {gap} more a round than cooperating, "
            "whatever the others do"
            if r < n
            else ". Since r ≥ N, cooperating pays at least as much as defecting"
        )
        return (
            f"a public goods game of {n} players: each cooperator pays c = {_number(c)} into a "
            f"pot, the pot is multiplied by r = {_number(r)} and shared equally among all {n}"
            f"{dominates}"
        )
    if kind == "volunteer":
        return (
            f"a volunteer's dilemma of {n} players: everyone gets b = {_number(params.get('b', 0))} "
            f"when at least one volunteers (cooperates), and each volunteer pays c = "
            f"{_number(params.get('c', 0))}"
        )
    if kind == "stag_hunt":
        return (
            f"a stag hunt of {n} players: each cooperator pays c = {_number(params.get('c', 0))}; "
            f"when at least M = {_number(params.get('M', 0))} cooperate, the pot multiplied by "
            f"r = {_number(params.get('r', 0))} is shared among all {n}, else it is lost"
        )
    cells = ", ".join(f"{k} = {_number(params[k])}" for k in ("R", "S", "T", "P") if k in params)
    if kind == "linear_pd":
        return (
            f"the {n}-player Prisoner's Dilemma (Hauert & Schuster): each payoff is linear in the "
            f"share of co-players who cooperate, from the 2×2 game's {cells}"
        )
    if kind == "matrix":
        return f"the 2×2 game {cells}"
    return f"{game.get('label') or kind or 'a group game'}"


def stage_payoffs(game: Mapping[str, Any]) -> pd.DataFrame:
    """The stage game's payoffs (the manifest's pay_c and pay_d): one row per number k of
    co-players who cooperate, a cooperator's and a defector's payoff."""
    pay_c, pay_d = list(game.get("pay_c") or []), list(game.get("pay_d") or [])
    return pd.DataFrame(
        {
            "others cooperating": list(range(len(pay_c))),
            "cooperator gets": [payoff_text(v) for v in pay_c],
            "defector gets": [payoff_text(v) for v in pay_d],
        }
    )


def horizon_words(horizon: Mapping[str, Any]) -> str:
    """'50 rounds a game' or 'a geometric number of rounds (stop probability 0.1)'."""
    if horizon.get("type") == "geometric":
        return f"a geometric number of rounds a game (stop probability {horizon.get('stop_prob')})"
    return f"{horizon.get('n_rounds', '?')} rounds a game"


def groups_words(manifest: Mapping[str, Any]) -> str:
    """Who meets whom in a group tournament, in words."""
    n = manifest.get("group_size", "?")
    players = len(manifest.get("players") or [])
    totals = manifest.get("totals") or {}
    reps = int(manifest.get("repetitions") or 1)
    who = (
        f"every multiset of {n} of the {players} players (a player may hold several seats)"
        if manifest.get("with_replacement")
        else f"every combination of {n} distinct players among the {players}"
    )
    return (
        f"Groups of {n}: {who}, {int(totals.get('groups', 0)):,} groups, each playing "
        f"{reps} {'game' if reps == 1 else 'games'} of {horizon_words(manifest.get('horizon') or {})}"
        f" ({int(totals.get('games', 0)):,} games, {int(totals.get('rounds', 0)):,} rounds)."
    )


# --------------------------------------------------------------------------------------------
# Group evolution


def payoff_column(strategy: str) -> str:
    """The payoff table's column of a type: 'CC payoff / round'."""
    return f"{strategy} payoff / round"


def payoff_by_composition(payoffs: pd.DataFrame, strategies: Sequence[str]) -> pd.DataFrame:
    """payoff_table.parquet as one row per composition (in its order): its label, each type's
    payoff per round in it (`payoff_column`; '—' when the type is absent), and the games it
    played."""
    order = list(dict.fromkeys([*strategies, *payoffs["strategy"].astype(str)]))
    out: dict[str, list[Any]] = {"composition": []}
    out.update({payoff_column(name): [] for name in order})
    out["games"] = []
    for _, rows in payoffs.groupby("composition", sort=False):
        by_type = {str(r["strategy"]): r for r in rows.to_dict("records")}
        first = rows.iloc[0]
        out["composition"].append(str(first["label"]))
        for name in order:
            row = by_type.get(name)
            out[payoff_column(name)].append(
                short_payoff(row["payoff_per_round"]) if row and int(row["count"]) > 0 else "—"
            )
        out["games"].append(int(first["games"]))
    return pd.DataFrame(out)


def fixation_rows(fixation: pd.DataFrame) -> pd.DataFrame:
    """fixation.parquet as the table shows it, in its order: the type, how many seeds it took
    over ('48 of 50'), that share with its Wilson 95% interval, the exact fixation probability
    beside it ('—' where none applies) and the mean generations to fixation."""
    rows = fixation.to_dict("records")
    return pd.DataFrame(
        {
            "strategy": [
                "no fixation (still mixed)" if r["strategy"] == NO_FIXATION else str(r["strategy"])
                for r in rows
            ],
            "fixed_in": [f"{int(r['fixations'])} of {int(r['seeds'])}" for r in rows],
            "simulated": [
                with_interval(r["probability"], r["ci_low"], r["ci_high"], True) for r in rows
            ],
            "exact": [rate_text(r["exact_probability"]) for r in rows],
            "generations": [
                f"{float(r['mean_generations']):,.0f}" if known(r.get("mean_generations")) else "—"
                for r in rows
            ],
        }
    )


def fixation_chart_frame(fixation: pd.DataFrame) -> pd.DataFrame:
    """One row per type of fixation.parquet (the no-fixation row too): the simulated share,
    its Wilson interval, the seeds, the exact probability (None where none applies) and the
    text written beside the dot."""
    rows = fixation.to_dict("records")
    return pd.DataFrame(
        {
            "label": [
                "no fixation" if r["strategy"] == NO_FIXATION else str(r["strategy"]) for r in rows
            ],
            "value": [float(r["probability"]) for r in rows],
            "low": [float(r["ci_low"]) for r in rows],
            "high": [float(r["ci_high"]) for r in rows],
            "games": [int(r["seeds"]) for r in rows],
            "exact": [float(r["exact_probability"]) if known(r["exact_probability"]) else None
                      for r in rows],
            "text": [
                with_interval(r["probability"], r["ci_low"], r["ci_high"], True)
                + (f" · exact {rate_text(r['exact_probability'])}"
                   if known(r["exact_probability"]) else "")
                for r in rows
            ],
        }
    )  # fmt: skip


PROCESS_WORDS = {
    "moran": "A Moran process (one birth and one death a generation)",
    "wright_fisher": "A Wright-Fisher process (the whole population renewed each generation)",
    "pairwise_comparison": (
        "Pairwise comparison (each generation one individual may imitate another, the more "
        "likely the more the other earns)"
    ),
}


def population_words(manifest: Mapping[str, Any]) -> str:
    """The population, how it meets and how it changes, in words."""
    counts = manifest.get("initial_counts") or {}
    start = ", ".join(f"{int(n)} {name}" for name, n in counts.items())
    process = str(manifest.get("process", "?"))
    beta = manifest.get("beta")
    selection = (
        f", selection intensity β = {_number(beta)}" if known(beta) else ", fitness-proportional"
    )
    mutation = float(manifest.get("mutation_rate") or 0.0)
    return (
        f"{int(manifest.get('population_size') or 0)} individuals ({start}); each meets its "
        f"co-players in groups of {manifest.get('group_size', '?')} drawn from the rest of the "
        f"population, {horizon_words(manifest.get('horizon') or {})}. "
        f"{PROCESS_WORDS.get(process, process)}{selection}, mutation {100 * mutation:g}%, at "
        f"most {int(manifest.get('generations_requested') or 0):,} generations."
    )


def seed_outcome(manifest: Mapping[str, Any], seed: int) -> str | None:
    """How one seed's run ended (the manifest's `runs` entry), in words; None when unknown."""
    runs = manifest.get("runs") or []
    if not 0 <= seed < len(runs) or not isinstance(runs[seed], Mapping):
        return None
    run = runs[seed]
    steps = run.get("generations_run")
    generations = f"{steps} generation{'' if steps == 1 else 's'}"
    if run.get("fixated"):
        return f"Seed {seed}: {run['fixated']} took over after {generations}."
    final = run.get("final_counts") or {}
    counts = ", ".join(f"{int(n)} {name}" for name, n in final.items())
    return f"Seed {seed}: no type took over in {generations} (at the end: {counts})."
