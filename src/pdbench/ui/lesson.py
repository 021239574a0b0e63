"""What a finished Play game teaches, as in Nicky Case's The Evolution of Trust: one sentence
chosen from what happened (`lesson`), which strategy the person played like (`played_like`,
read from the strategy card that `pdbench profile` wrote for the saved run) and both players'
memory-one profiles (`memory_one`, read from the saved run's aggregates).

Pure functions of plain values: no Streamlit, no files. The moves are strings of C/D, the
person's first; the words are the app's (`style.ACTION_WORD`: Cooperate / Defect).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pdbench.core.behaviour import STATES
from pdbench.core.strategy_card import tied_names
from pdbench.core.strategy_gof import MEMORY_ONE_NAME, card_verdict

# One sentence per thing that can happen in a game, keyed by `lesson_key`'s answer.
LESSONS: dict[str, str] = {
    "trust": "You both cooperated in every round: trust kept on both sides is what lets "
    "cooperation last.",
    "exploited_naive": "You defected in every round and they never hit back: an opponent who "
    "never retaliates invites exploitation, which is why Always Cooperate dies out among "
    "defectors.",
    "all_defect": "You defected in every round and they defected too: without any trust the "
    "game sinks into mutual defection, the low payoff for both.",
    "endgame": "You defected in the last round, when they could no longer answer: with a known "
    "end there is no future to protect, and the shadow of the future is what keeps "
    "cooperation alive.",
    "unanswered": "You defected and they never hit back: an opponent who does not retaliate "
    "can be exploited, which is how Always Cooperate loses to defectors.",
    "feud_mended": "You defected first and they hit back, but cooperation came back: "
    "retaliating and then forgiving, as Copycat does, keeps trust possible after a defection.",
    "feud": "You defected first and they hit back: against an opponent who retaliates, "
    "defecting starts a feud that costs you both.",
    "betrayed_at_end": "They defected in the last round, when you could no longer answer: with "
    "a known end there is no future to protect, so even a friendly opponent may defect at "
    "the end.",
    "forgave_once": "You let a single defection go without hitting back: forgiving a mistake, "
    "as Copykitten does, keeps cooperation alive when mistakes happen.",
    "turned_cheek": "You never hit back when they defected: forgiving every defection invites "
    "more of them; Copycat's way is to retaliate, then forgive.",
    "retaliate_forgive": "You hit back when they defected, then forgave: retaliating and then "
    "forgiving, as Copycat does, is what lets cooperation survive among defectors.",
    "grudge": "You hit back when they defected and never forgave: like Grudger, you could no "
    "longer be exploited, but a grudge ends the trust for good, even after a single mistake.",
}


def lesson_key(mine: str, theirs: str) -> str:
    """What happened in a game, as a key of LESSONS. `mine`, `theirs`: the person's and the
    opponent's moves (strings of C/D of one length, at least one round). The first rule that
    holds decides:

    - nobody defected: trust;
    - the person always defected: against an opponent who never did, exploited_naive, else
      all_defect;
    - the person defected first (or alone): only in the last round, endgame; never answered
      by a defection, unanswered; answered and the last round mutual cooperation, feud_mended;
      else feud;
    - the opponent defected first (or in the same round): the person's answers are their moves
      right after each of the opponent's defections; no answer (the opponent defected only in
      the last round), betrayed_at_end; no answer a defection: forgave_once after one answered
      defection, else turned_cheek; some answer a defection and a later cooperation,
      retaliate_forgive; else grudge.
    """
    if len(mine) != len(theirs) or not mine:
        raise ValueError(f"two move strings of one length needed, got {mine!r} and {theirs!r}")
    if "D" not in mine and "D" not in theirs:
        return "trust"
    if set(mine) == {"D"}:
        return "exploited_naive" if "D" not in theirs else "all_defect"
    first_mine = mine.find("D")
    first_theirs = theirs.find("D")
    if first_mine >= 0 and (first_theirs < 0 or first_mine < first_theirs):
        if first_mine == len(mine) - 1:
            return "endgame"
        if first_theirs < 0:
            return "unanswered"
        return "feud_mended" if mine[-1] + theirs[-1] == "CC" else "feud"
    answers = [t for t in range(1, len(mine)) if theirs[t - 1] == "D"]
    if not answers:
        return "betrayed_at_end"
    hits = [t for t in answers if mine[t] == "D"]
    if not hits:
        return "forgave_once" if len(answers) == 1 else "turned_cheek"
    return "retaliate_forgive" if "C" in mine[hits[0] + 1 :] else "grudge"


def lesson(mine: str, theirs: str) -> str:
    """The lesson's sentence for a game (see `lesson_key`)."""
    return LESSONS[lesson_key(mine, theirs)]


# --------------------------------------------------------------------------------------------
# The strategy card and the memory-one profile


@dataclass(frozen=True, slots=True)
class PlayedLike:
    """Which strategy of the library a person's moves fit best (the strategy card's best named
    strategy): its key, the other strategies that fit exactly as well (core.strategy_card: same
    likelihood and number of parameters, the game cannot tell them apart), the share of moves it explains
    (of `moves` fitted), and the card's verdict when no strategy in the library fits (None when one does)."""

    strategy: str
    ties: tuple[str, ...]
    explained: float | None
    verdict: str | None
    moves: int | None = None  # the decided moves fitted


def played_like(rows: Sequence[Mapping[str, Any]]) -> PlayedLike | None:
    """The strategy card of one agent (its strategy_fit rows, any order) summed up; None
    without rows."""
    ranked = sorted(rows, key=lambda r: r["rank"])
    named = [r for r in ranked if r["strategy"] != MEMORY_ONE_NAME]
    if not named:
        return None
    best = named[0]
    ties = tuple(n for n in tied_names(ranked, best) if n != MEMORY_ONE_NAME)
    explained = best.get("moves_explained")
    moves = best.get("n_moves")
    return PlayedLike(
        str(best["strategy"]),
        ties,
        None if explained is None or not math.isfinite(explained) else float(explained),
        card_verdict(ranked),
        None if moves is None else int(moves),
    )


# The four states of the memory-one profile, the player's own previous move first, in words.
STATE_WORDS: dict[str, str] = {
    "cc": "after both cooperated",
    "cd": "after cooperating while the other defected",
    "dc": "after defecting while the other cooperated",
    "dd": "after both defected",
}


@dataclass(frozen=True, slots=True)
class StateCount:
    """How often a player cooperated after one state: cooperations of visits."""

    state: str
    cooperations: int
    visits: int

    @property
    def rate(self) -> float | None:
        """P(C | state), None when the state never came up."""
        return self.cooperations / self.visits if self.visits else None


def memory_one(row: Mapping[str, Any], side: str) -> list[StateCount]:
    """One player's memory-one profile (states CC, CD, DC, DD, its own move first) from a game's
    row of aggregates.parquet (`agent_<side>_p_coop_after_<state>` and `agent_<side>_n_<state>`)."""
    out = []
    for state in STATES:
        visits = int(row[f"agent_{side}_n_{state}"])
        rate = row[f"agent_{side}_p_coop_after_{state}"]
        coops = 0 if not visits or rate is None or rate != rate else round(float(rate) * visits)
        out.append(StateCount(state.upper(), coops, visits))
    return out
