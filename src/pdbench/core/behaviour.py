"""Behavioural profiles of one agent in one game: the memory-one profile and the five dimensions
of Fontana et al. 2024. Moves are boolean arrays, True for C; `mine` is the agent's, `theirs` the
opponent's.

Memory-one profile: for each state (the agent's own previous move, then the opponent's previous
move: CC, CD, DC, DD, as the Axelrod library's state-to-action distribution defines it) the number
of rounds t >= 1 entering that state (`n_cc`, ...) and the fraction of them where the agent then
cooperated (`p_coop_after_cc`, ...; None when the state was never visited). Over several games the
profile pools the counts (the ratio of summed cooperations to summed visits).

Fontana et al. 2024 ("Nicer than humans"): nice, forgiving, retaliatory, troublemaking and
emulative, exactly as the authors' released analysis code computes them (0, not None, when
undefined); see the README and `../shared/reference/behavioural-dimensions.md`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

STATES: tuple[str, ...] = ("cc", "cd", "dc", "dd")
FONTANA_DIMENSIONS: tuple[str, ...] = (
    "nice",
    "forgiving",
    "retaliatory",
    "troublemaking",
    "emulative",
)


def _bools(moves: Sequence[bool] | np.ndarray) -> np.ndarray:
    return np.asarray(moves, dtype=bool)


def memory_one_counts(
    mine: Sequence[bool] | np.ndarray, theirs: Sequence[bool] | np.ndarray
) -> dict[str, tuple[int, int]]:
    """Per state ("cc", "cd", "dc", "dd"): (visits, cooperations after it)."""
    me = _bools(mine)
    them = _bools(theirs)
    if me.size < 2:
        return {state: (0, 0) for state in STATES}
    # state index: 0 = CC, 1 = CD, 2 = DC, 3 = DD (own move first)
    state = (~me[:-1]).astype(np.int64) * 2 + (~them[:-1]).astype(np.int64)
    nxt = me[1:]
    visits = np.bincount(state, minlength=4)
    coops = np.bincount(state, weights=nxt.astype(np.float64), minlength=4)
    return {s: (int(visits[i]), int(round(coops[i]))) for i, s in enumerate(STATES)}


def memory_one_profile(
    mine: Sequence[bool] | np.ndarray, theirs: Sequence[bool] | np.ndarray
) -> dict[str, float | int | None]:
    """`p_coop_after_<state>` (None when unvisited), `n_<state>` and `first_move_cooperation`."""
    counts = memory_one_counts(mine, theirs)
    me = _bools(mine)
    out: dict[str, float | int | None] = {}
    for state in STATES:
        visits, coops = counts[state]
        out[f"p_coop_after_{state}"] = coops / visits if visits else None
        out[f"n_{state}"] = visits
    out["first_move_cooperation"] = float(me[0]) if me.size else None
    return out


def fontana_nice(mine: np.ndarray, theirs: np.ndarray) -> float:
    """0 if the agent defects at or before the opponent's first defection, else 1."""
    my_d = np.flatnonzero(~mine)
    their_d = np.flatnonzero(~theirs)
    if my_d.size == 0:
        return 1.0
    return 0.0 if their_d.size == 0 or my_d[0] <= their_d[0] else 1.0


def fontana_forgiving(mine: np.ndarray, theirs: np.ndarray) -> float:
    """Forgivenesses / (opponent defections + penalties), 0 when the denominator is 0."""
    n = mine.size
    if n == 0:
        return 0.0
    index = np.arange(n)
    last_their_d = np.maximum.accumulate(np.where(~theirs, index, -1))
    last_my_c = np.maximum.accumulate(np.where(mine, index, -1))
    on_at_end = (last_their_d >= 0) & (last_my_c <= last_their_d)
    on_at_start = np.concatenate(([False], on_at_end[:-1]))
    forgiven = int(np.sum(mine & on_at_start))
    still_on = on_at_start & ~mine  # after step (1)
    penalties = int(np.sum(theirs[:-1] & still_on[:-1] & ~mine[1:]))
    provoked = int(np.sum(~theirs & ~still_on))
    denominator = provoked + penalties
    return forgiven / denominator if denominator else 0.0


def fontana_retaliatory(mine: np.ndarray, theirs: np.ndarray) -> float:
    """Answered provocations / provocations (an opponent D at i when i = 0 or the agent
    cooperated at i-1; answered by the agent's D at i+1); 0 when there is none."""
    n = mine.size
    if n < 2:
        return 0.0
    before = np.concatenate(([True], mine[: n - 2]))  # i = 0 counts as provoked
    provocation = ~theirs[: n - 1] & before
    answered = provocation & ~mine[1:]
    count = int(provocation.sum())
    return int(answered.sum()) / count if count else 0.0


def fontana_troublemaking(mine: np.ndarray, theirs: np.ndarray) -> float:
    """Uncalled defections / occasions (round 0 and each opponent C before the last round)."""
    if mine.size == 0:
        return 0.0
    their_c = theirs[:-1]
    occasions = 1 + int(their_c.sum())
    uncalled = int(not mine[0]) + int(np.sum(their_c & ~mine[1:]))
    return uncalled / occasions


def fontana_emulative(mine: np.ndarray, theirs: np.ndarray) -> float:
    """Share of rounds i < n-1 where the agent's move at i+1 equals the opponent's at i."""
    n = len(mine)
    if n <= 1:
        return 0.0
    return float(np.mean(mine[1:] == theirs[:-1]))


def fontana_dimensions(
    mine: Sequence[bool] | np.ndarray, theirs: Sequence[bool] | np.ndarray
) -> dict[str, float]:
    """The five dimensions of one game, keyed by name (see FONTANA_DIMENSIONS)."""
    arr_me, arr_them = _bools(mine), _bools(theirs)
    return {
        "nice": fontana_nice(arr_me, arr_them),
        "forgiving": fontana_forgiving(arr_me, arr_them),
        "retaliatory": fontana_retaliatory(arr_me, arr_them),
        "troublemaking": fontana_troublemaking(arr_me, arr_them),
        "emulative": fontana_emulative(arr_me, arr_them),
    }


def behaviour_columns(
    side: str, mine: Sequence[bool] | np.ndarray, theirs: Sequence[bool] | np.ndarray
) -> dict[str, float | int | None]:
    """The memory-one profile and Fontana dimensions of one agent, as aggregate columns."""
    out: dict[str, float | int | None] = {}
    for key, value in memory_one_profile(mine, theirs).items():
        out[f"agent_{side}_{key}"] = value
    for key, value in fontana_dimensions(mine, theirs).items():
        out[f"agent_{side}_fontana_{key}"] = value
    return out


def behaviour_column_names(side: str) -> tuple[str, ...]:
    """The names `behaviour_columns` gives, in order."""
    names = [f"agent_{side}_p_coop_after_{s}" for s in STATES]
    names += [f"agent_{side}_n_{s}" for s in STATES]
    names.append(f"agent_{side}_first_move_cooperation")
    names += [f"agent_{side}_fontana_{d}" for d in FONTANA_DIMENSIONS]
    return tuple(names)


def behaviour_columns_of_games(
    side: str, mine: np.ndarray, theirs: np.ndarray
) -> list[dict[str, float | int | None]]:
    """`behaviour_columns` of many games of the same length at once: `mine` and `theirs` are
    (games, rounds) boolean arrays, one row per game. The same values, computed over the rows
    together (every value is a ratio of counts, so the order of the sums does not matter)."""
    me, them = _bools(mine), _bools(theirs)
    games, n = me.shape
    if n < 2:  # the edge cases of one round or none: game by game
        return [behaviour_columns(side, me[g], them[g]) for g in range(games)]
    prefix = f"agent_{side}_"
    columns: dict[str, list[float | int | None]] = {}
    # memory-one: state 0 = CC, 1 = CD, 2 = DC, 3 = DD (own previous move first)
    state = (~me[:, :-1]).astype(np.int8) * 2 + (~them[:, :-1])
    after = me[:, 1:]
    for i, name in enumerate(STATES):
        in_state = state == i
        visits = in_state.sum(axis=1).tolist()
        coops = (in_state & after).sum(axis=1).tolist()
        columns[f"{prefix}p_coop_after_{name}"] = [
            c / v if v else None for c, v in zip(coops, visits, strict=True)
        ]
        columns[f"{prefix}n_{name}"] = visits
    columns[f"{prefix}first_move_cooperation"] = me[:, 0].astype(np.float64).tolist()
    # nice: no defection, or the opponent defected first
    my_d, their_d = ~me, ~them
    mine_first, theirs_first = my_d.argmax(axis=1), their_d.argmax(axis=1)
    nasty = my_d.any(axis=1) & (~their_d.any(axis=1) | (mine_first <= theirs_first))
    columns[f"{prefix}fontana_nice"] = np.where(nasty, 0.0, 1.0).tolist()
    # forgiving (fontana_forgiving, row by row)
    index = np.arange(n)
    last_their_d = np.maximum.accumulate(np.where(their_d, index, -1), axis=1)
    last_my_c = np.maximum.accumulate(np.where(me, index, -1), axis=1)
    on_at_end = (last_their_d >= 0) & (last_my_c <= last_their_d)
    on_at_start = np.zeros_like(on_at_end)
    on_at_start[:, 1:] = on_at_end[:, :-1]
    forgiven = (me & on_at_start).sum(axis=1).tolist()
    still_on = on_at_start & ~me
    penalties = (them[:, :-1] & still_on[:, :-1] & my_d[:, 1:]).sum(axis=1)
    provoked = (their_d & ~still_on).sum(axis=1)
    denominators = (provoked + penalties).tolist()
    columns[f"{prefix}fontana_forgiving"] = [
        f / d if d else 0.0 for f, d in zip(forgiven, denominators, strict=True)
    ]
    # retaliatory: an opponent D at i when i = 0 or the agent cooperated at i-1, answered by D
    before = np.ones((games, n - 1), dtype=bool)
    before[:, 1:] = me[:, : n - 2]
    provocation = their_d[:, : n - 1] & before
    answered = (provocation & my_d[:, 1:]).sum(axis=1).tolist()
    provocations = provocation.sum(axis=1).tolist()
    columns[f"{prefix}fontana_retaliatory"] = [
        a / p if p else 0.0 for a, p in zip(answered, provocations, strict=True)
    ]
    # troublemaking: uncalled defections / occasions (round 0 and each opponent C before last)
    their_c = them[:, :-1]
    occasions = (1 + their_c.sum(axis=1)).tolist()
    uncalled = (my_d[:, 0].astype(np.int64) + (their_c & my_d[:, 1:]).sum(axis=1)).tolist()
    columns[f"{prefix}fontana_troublemaking"] = [
        u / o for u, o in zip(uncalled, occasions, strict=True)
    ]
    # emulative: the agent's move at i+1 equals the opponent's at i
    same = (me[:, 1:] == them[:, :-1]).sum(axis=1).tolist()
    columns[f"{prefix}fontana_emulative"] = [s / (n - 1) for s in same]
    return [{name: values[g] for name, values in columns.items()} for g in range(games)]
