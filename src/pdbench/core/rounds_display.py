"""Rounds as a person reads them: numbered from 1, wherever they are shown (the app, the HTML
report, the CLI's summaries). The data keep the 0-based `round_index` (and the round-valued
metrics, such as `time_to_collapse`, hold 0-based indices) in every artifact; this module is the
one place that turns them into the numbers people read, and names the round-valued metrics.

Pure: no I/O. A round-valued metric's mean and interval bounds are shifted by the same +1 (a
mean of indices plus one is the mean of the displayed rounds); a difference between two of them,
or a spread (standard deviation), is not shifted.
"""

from __future__ import annotations

FIRST_ROUND = 1  # the number shown for round_index 0
NUMBERING_NOTE = "Rounds are numbered from 1."

# Round-valued metrics (aggregate columns holding a 0-based round index): label and help text.
ROUND_METRICS: dict[str, tuple[str, str]] = {
    "time_to_collapse": (
        "collapse round",
        "The first round (numbered from 1) that starts a window of k rounds whose joint "
        "cooperation is at or below the threshold; a condition's mean leaves out the games "
        "that never collapsed (stored as `time_to_collapse`, a 0-based round index).",
    ),
}


def round_number(round_index: int) -> int:
    """The round people read for a 0-based `round_index` (0 -> 1)."""
    return int(round_index) + FIRST_ROUND


def round_index_of(round_no: int) -> int:
    """The 0-based `round_index` of a round as people number it (1 -> 0)."""
    return int(round_no) - FIRST_ROUND


def round_text(round_index: int) -> str:
    """'round 12' for round_index 11."""
    return f"round {round_number(round_index):,}"


def is_round_metric(column: str) -> bool:
    """Whether an aggregate column holds a 0-based round index (a round-valued metric)."""
    return column in ROUND_METRICS


def shift_of(column: str) -> int:
    """What to add to a value (mean, bound) of `column` to show it: FIRST_ROUND for a
    round-valued metric, else 0."""
    return FIRST_ROUND if is_round_metric(column) else 0


def shown_value[Number](column: str, value: Number) -> Number:
    """A value (or interval bound, or a pandas Series of them) of `column` as shown: a round
    index becomes its round number; other metrics, None and NaN are returned as they are."""
    if value is None or not is_round_metric(column):
        return value
    return value + FIRST_ROUND  # type: ignore[operator]


def metric_label(column: str, default: str | None = None) -> str:
    """The label of a round-valued metric (else `default`, or the column's name)."""
    if column in ROUND_METRICS:
        return ROUND_METRICS[column][0]
    return column if default is None else default


def metric_help(column: str) -> str | None:
    """What a round-valued metric means, for a tooltip or a note (None for other metrics)."""
    return ROUND_METRICS[column][1] if column in ROUND_METRICS else None
