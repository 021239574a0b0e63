"""What the strategy card names: the card's ranking of the fitted strategies (core.strategy_fit)
and the candidates the data cannot tell apart (pure).

Indistinguishable ("explain the moves equally well"): two candidates with the same number of
parameters whose maximised log-likelihoods are equal within TIE_TOLERANCE (relative); they have
the same BIC, so no criterion of the card can prefer one. In practice: candidates that prescribe
the same move in every decided round of these games (DEFECT_ONCE and Axelrod's Prober against
TFT: both play D, C, C, C, ...; ALLC, TFT, GRIM, TF2T, WSLS and Axelrod's Gradual against TFT:
all C), and a rule that prescribes one move throughout (ALLC, ALLD, or TFT against an opponent
who always cooperated) with tremble e beside RANDOM(1 - e) or RANDOM(e): the same Bernoulli
model of every round. Each row carries the names of the others it ties with; the card names
the tied set instead of its first member.

RANDOM(p) (the history-blind candidate: one state with a free P(C), its MLE the share of
cooperation; one parameter in BIC, as a rule's tremble) against a rule with a large tremble: a
tremble is execution noise, so a rule whose fitted tremble exceeds NOISE_LIMIT (followed in
fewer than 9 rounds of 10) is not named ahead of RANDOM(p) unless its BIC is lower by more than
EVIDENCE (10: "very strong" evidence in Kass and Raftery 1995). Without this rule a random
player is never named RANDOM: at p = 0.8 ALLC with tremble 0.2 ties RANDOM(0.8) exactly and
comes first in library order, and at p = 0.5 every rule has a tremble near 0.5 and one of
them beats RANDOM(0.5) by chance by a nat or so. With it, a rule followed at least 90% of the
time keeps its name (ALLC with 5% noise is ALLC, tied with RANDOM(0.95)), and a rule that
explains the moves much better than chance keeps its place whatever its tremble.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pdbench.core.strategy_fit import Candidate, StrategyFit
from pdbench.core.strategy_gof import MEMORY_ONE_NAME

TIE_TOLERANCE = 1e-9  # relative difference of log-likelihoods that counts as equal
NOISE_LIMIT = 0.1  # the largest tremble that is noise on a rule rather than a random player
EVIDENCE = 10.0  # the BIC margin a noisier rule needs to be named ahead of RANDOM(p)
TIES_SHOWN = 8  # tied strategies named in the card's words (the file lists them all)
EVERY_ROUND = "every_round"  # the parameter name of a one-state machine's P(C)


def history_blind(candidate: Candidate) -> bool:
    """Whether the candidate is RANDOM(p): one state, with a free (fractional) P(C)."""
    machine = candidate.machine
    return machine is not None and len(machine.coop_prob) == 1 and 0 < machine.coop_prob[0] < 1


def tied(a: StrategyFit | Mapping[str, Any], b: StrategyFit | Mapping[str, Any]) -> bool:
    """Whether two fits (StrategyFit or strategy_fit rows) explain the moves equally well: the
    same number of parameters, log-likelihoods equal within TIE_TOLERANCE."""
    get = _getter(a)
    other = _getter(b)
    if get("n_params") != other("n_params"):
        return False
    la, lb = get("log_likelihood"), other("log_likelihood")
    if la is None or lb is None or not (math.isfinite(la) and math.isfinite(lb)):
        return False
    return math.isclose(la, lb, rel_tol=TIE_TOLERANCE, abs_tol=TIE_TOLERANCE)


def _getter(fit: StrategyFit | Mapping[str, Any]) -> Any:
    if isinstance(fit, StrategyFit):
        return lambda name: getattr(fit, name)
    return fit.get


def card_ranking(fits: Sequence[StrategyFit], candidates: Sequence[Candidate]) -> list[StrategyFit]:
    """The fits (candidate order) with the card's rank and their ties: BIC order (fit_each's
    rank), except that RANDOM(p) moves ahead of the rules just above it whose tremble exceeds
    NOISE_LIMIT and whose BIC is not lower than its own by more than EVIDENCE; each fit's
    `indistinguishable_from` lists the candidates tied with it, in card order."""
    order = sorted(range(len(fits)), key=lambda j: fits[j].rank)
    blind = [j for j in order if history_blind(candidates[j])]
    if blind:
        r = order.index(blind[0])
        k = r
        while k > 0 and _noisier_than_chance(fits[order[k - 1]], fits[blind[0]]):
            k -= 1
        order.insert(k, order.pop(r))
    out = list(fits)
    for position, j in enumerate(order, start=1):
        ties = tuple(fits[i].strategy for i in order if i != j and tied(fits[i], fits[j]))
        out[j] = replace(fits[j], rank=position, indistinguishable_from=ties)
    return out


def _noisier_than_chance(rule: StrategyFit, random: StrategyFit) -> bool:
    return (
        rule.tremble is not None
        and rule.tremble > NOISE_LIMIT
        and rule.bic >= random.bic - EVIDENCE
    )


def strategy_label(strategy: str, parameters: str | Mapping[str, float] | None) -> str:
    """The strategy's name on the card: RANDOM(p) with its fitted P(C) for a one-state machine
    with a free probability, else its name."""
    if isinstance(parameters, str):
        try:
            parameters = json.loads(parameters)
        except ValueError:
            parameters = None
    if isinstance(parameters, Mapping) and list(parameters) == [EVERY_ROUND]:
        return f"{strategy}({float(parameters[EVERY_ROUND]):.2f})"
    return strategy


def tied_names(rows: Sequence[Mapping[str, Any]], row: Mapping[str, Any]) -> list[str]:
    """The strategies tied with `row` among `rows` (one card): its `indistinguishable_from`
    column (a JSON list), or, in a file written before that column, `tied` on the rows."""
    names = _stored_names(row.get("indistinguishable_from"))
    if names is None:
        ranked = sorted(rows, key=lambda r: r["rank"])
        names = [str(r["strategy"]) for r in ranked if r is not row and tied(r, row)]
    return names


def row_ties(rows: Sequence[Mapping[str, Any]], row: Mapping[str, Any]) -> list[str]:
    """tied_names as the card shows them (RANDOM with its fitted P(C))."""
    labels = {r["strategy"]: strategy_label(r["strategy"], r.get("parameters")) for r in rows}
    return [labels.get(n, n) for n in tied_names(rows, row)]


def _stored_names(stored: Any) -> list[str] | None:
    """The names in an `indistinguishable_from` cell; None when it is missing or not a JSON
    list of names (a hand-edited file: the ties are then recomputed from the rows)."""
    if isinstance(stored, str):
        try:
            stored = json.loads(stored)
        except ValueError:
            return None
    if isinstance(stored, list | tuple) and all(isinstance(n, str) for n in stored):
        return list(stored)
    return None


def tie_words(rows: Sequence[Mapping[str, Any]], row: Mapping[str, Any]) -> str | None:
    """The card's words for `row` (its best named strategy) when other candidates explain the
    moves equally well, e.g. 'DEFECT_ONCE = axelrod:Prober: indistinguishable on these games
    ...'; None without ties."""
    ties = row_ties(rows, row)
    if not ties:
        return None
    names = " = ".join([strategy_label(row["strategy"], row.get("parameters")), *ties[:TIES_SHOWN]])
    if len(ties) > TIES_SHOWN:
        names += (
            f" and {len(ties) - TIES_SHOWN} more (indistinguishable_from in strategy_fit.parquet)"
        )
    return (
        f"{names}: indistinguishable on these games (the same likelihood with the same number "
        "of parameters: the data cannot tell them apart)"
    )


def card_ties(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """tie_words of one card's best named strategy (the memory-one family is not named);
    None without rows or ties."""
    named = sorted((r for r in rows if r["strategy"] != MEMORY_ONE_NAME), key=lambda r: r["rank"])
    return tie_words(rows, named[0]) if named else None
