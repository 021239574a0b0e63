"""The artifacts of a group run's metrics: its games read back from rounds.jsonl, and the tables
`core.group_metrics` computes from them, written atomically as Parquet:

- aggregates.parquet: per game (scope "replicate") and per condition (scope "condition") the
  group metrics, the condition rows with their 95% intervals (GROUP_AGGREGATE_COLUMNS);
- seats.parquet: the same per game and seat, and per condition and seat (GROUP_SEAT_TABLE_COLUMNS);
- group_rounds.parquet: per condition and round, the share of seats that cooperated, mean over
  the games that reached the round, with its band (GROUP_ROUND_COLUMNS; the app's chart);
- group_conditional.parquet: per game and condition, P(C | k co-players cooperated in the
  previous round) with its counts (GROUP_CONDITIONAL_COLUMNS).

Settings come from the run's manifest (`groups_manifest.json`): the collapse window, the interval
settings and seed, each condition's game, horizon and whether it is exact.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from pdbench.core.exact import recorded_exact
from pdbench.core.group_conditions import (
    GROUP_AGGREGATE_COLUMNS,
    GROUP_CONDITIONAL_COLUMNS,
    GROUP_ROUND_COLUMNS,
    GROUP_SEAT_TABLE_COLUMNS,
    group_condition_rows,
)
from pdbench.core.group_game import GroupGame
from pdbench.core.group_metrics import GroupOutcome, group_games_metrics
from pdbench.core.group_talk_metrics import COUNT_KEYS
from pdbench.core.group_talk_rows import add_talk_to_seat_rows
from pdbench.core.metrics import CollapseParams, MetricDesign
from pdbench.core.stats import IntervalSettings
from pdbench.errors import RunError
from pdbench.storage.intervals import design_of, interval_generators, interval_settings
from pdbench.storage.parquet import write_rows
from pdbench.storage.record.fields import ROUND_INDEX
from pdbench.storage.record.group_fields import seat_fields, seats_of
from pdbench.storage.record.group_messages import game_talk, round_messages
from pdbench.storage.schema import AGGREGATES_FILE, ROUNDS_FILE

SEATS_FILE = "seats.parquet"
GROUP_ROUNDS_FILE = "group_rounds.parquet"
GROUP_CONDITIONAL_FILE = "group_conditional.parquet"
GROUP_ARTIFACTS: tuple[str, ...] = (
    AGGREGATES_FILE,
    SEATS_FILE,
    GROUP_ROUNDS_FILE,
    GROUP_CONDITIONAL_FILE,
)

# Column types of the group tables (every other column is float64).
TEXT_COLUMNS = frozenset(
    {"run_id", "condition", "scope", "game_label", "seat_names", "name", "clipped_intervals"}
)
INT_COLUMNS = frozenset(
    {
        "replicate",
        "n_replicates",
        "n_players",
        "seat",
        "k",
        "cases",
        "cooperations",
        "round",
        "games",
        *COUNT_KEYS,
    }
)
BOOL_COLUMNS = frozenset({"exact", "identical_games"})


def group_game_of(entry: Mapping[str, Any]) -> GroupGame:
    """The GroupGame a manifest's condition entry records (`game`: kind, n_players, pay_c,
    pay_d, params: [name, value] pairs in the game's order, or a mapping)."""
    game = entry["game"]
    params = game.get("params") or {}
    if not isinstance(params, Mapping):  # a list of [name, value] pairs, in the game's order
        params = dict(params)
    return GroupGame(
        int(game["n_players"]),
        tuple(float(v) for v in game["pay_c"]),
        tuple(float(v) for v in game["pay_d"]),
        str(game.get("kind", "custom")),
        tuple((str(k), float(v)) for k, v in params.items()),
    )


def _conditions(manifest: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The manifest's conditions by name, in plan order."""
    try:
        return {str(c["name"]): c for c in manifest["conditions"]}
    except (KeyError, TypeError):
        raise RunError(
            "groups_manifest.json: no list of conditions with names (a damaged or hand-edited "
            "manifest)"
        ) from None


def iter_group_outcomes(run_dir: Path, manifest: Mapping[str, Any]) -> Iterator[GroupOutcome]:
    """The run's group games from rounds.jsonl, one at a time in file order (a game's rounds
    are consecutive lines). A line that is not a JSON record, a game of no condition of the
    manifest, a round out of order, a seat count other than the condition's or a move other
    than C/D is a one-line RunError naming file:line."""
    path = Path(run_dir) / ROUNDS_FILE
    conditions = _conditions(manifest)
    games: dict[str, GroupGame] = {}
    seen: set[tuple[str, int]] = set()
    current: _Game | None = None
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise RunError(f"{path}: cannot read ({exc.strerror or exc})") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                record = orjson.loads(line)
                key = (str(record["condition"]), int(record["replicate"]))
                index = int(record[ROUND_INDEX])
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                raise RunError(
                    f"{where}: not a group round record (a damaged line); re-run or resume the run"
                ) from None
            if current is None or key != current.key:
                if current is not None:
                    yield current.outcome()
                if key in seen:
                    raise RunError(f"{where}: game {key[0]!r} replicate {key[1]} appears twice")
                seen.add(key)
                if key[0] not in conditions:
                    raise RunError(
                        f"{where}: condition {key[0]!r} is not in the manifest (valid: "
                        f"{', '.join(conditions)})"
                    )
                if key[0] not in games:
                    try:
                        games[key[0]] = group_game_of(conditions[key[0]])
                    except (KeyError, TypeError, ValueError, AttributeError):
                        raise RunError(
                            f"groups_manifest.json: condition {key[0]!r}: its game is malformed"
                        ) from None
                labels, pregame = talk_setting(conditions[key[0]])
                current = _Game(key, games[key[0]], record, where, labels, pregame)
            current.add(record, index, where)
    if current is not None:
        yield current.outcome()


def talk_setting(entry: Mapping[str, Any]) -> tuple[dict[str, tuple[str, str]], bool]:
    """(each agent's message labels by name, whether the one exchange is before round 1) of a
    condition of the manifest (an agent not listed writes C and D)."""
    labels = entry.get("message_labels") or {}
    channel = entry.get("communication") or {}
    pregame = channel.get("mode") == "pregame"
    return {str(name): (str(pair[0]), str(pair[1])) for name, pair in labels.items()}, pregame


def read_group_outcomes(run_dir: Path, manifest: Mapping[str, Any]) -> list[GroupOutcome]:
    """Every group game of the run (`iter_group_outcomes`), in file order."""
    return list(iter_group_outcomes(run_dir, manifest))


class _Game:
    """The rounds of one game as they are read."""

    def __init__(
        self,
        key: tuple[str, int],
        game: GroupGame,
        record: Mapping[str, Any],
        where: str,
        labels: dict[str, tuple[str, str]] | None = None,
        pregame: bool = False,
    ) -> None:
        self.key, self.game = key, game
        n = seats_of(record)
        if n != game.n_players:
            raise RunError(
                f"{where}: condition {key[0]!r} has {game.n_players} seats, the record {n}"
            )
        self.names = tuple(str(v) for v in (record[f] for f in seat_fields("name", n)))
        self.fields = {
            what: seat_fields(what, n)
            for what in ("action", "intended_action", "payoff", "parse_failure")
        }
        self.played: list[list[bool]] = []
        self.intended: list[list[bool]] = []
        self.payoffs: list[list[float]] = []
        self.fails = [0] * n
        self.messages: list[Any] = []
        self.labels = [(labels or {}).get(name, ("C", "D")) for name in self.names]
        self.pregame = pregame

    def add(self, record: Mapping[str, Any], index: int, where: str) -> None:
        """One round's record (round `index`)."""
        if index != len(self.played):
            raise RunError(
                f"{where}: condition {self.key[0]!r} replicate {self.key[1]}: round {index} "
                f"where round {len(self.played)} belongs (rounds of a game are consecutive)"
            )
        try:
            played = [_move(record[f]) for f in self.fields["action"]]
            intended = [_move(record[f]) for f in self.fields["intended_action"]]
            self.payoffs.append([float(record[f]) for f in self.fields["payoff"]])
            for seat, f in enumerate(self.fields["parse_failure"]):
                self.fails[seat] += bool(record.get(f))
            self.messages += round_messages(record, index)
        except (KeyError, TypeError, ValueError):
            raise RunError(
                f"{where}: a seat's move, payoff or message is missing or invalid (moves are C "
                "or D)"
            ) from None
        self.played.append(played)
        self.intended.append(intended)

    def outcome(self) -> GroupOutcome:
        """The game as the metrics read it: arrays (N, T)."""
        n = self.game.n_players
        shape = (len(self.played), n)
        intended = np.array(self.intended, dtype=bool).reshape(shape).T.copy()
        return GroupOutcome(
            self.key[0],
            self.key[1],
            self.names,
            self.game,
            np.array(self.played, dtype=bool).reshape(shape).T.copy(),
            np.array(self.payoffs, dtype=np.float64).reshape(shape).T.copy(),
            intended,
            tuple(self.fails),
            game_talk(self.messages, intended, self.labels, self.pregame),
        )


def _move(value: Any) -> bool:
    if value == "C":
        return True
    if value == "D":
        return False
    raise ValueError(value)


def _design(entry: Mapping[str, Any], game: GroupGame) -> MetricDesign | None:
    """A condition's rounds (and the game's payoff range) from its horizon; None when not said."""
    low = min(min(game.pay_c), min(game.pay_d))
    high = max(max(game.pay_c), max(game.pay_d))
    try:
        return design_of(low, high, dict(entry.get("horizon") or {}))
    except (KeyError, TypeError, ValueError):
        return None


def _collapse(manifest: Mapping[str, Any]) -> CollapseParams:
    recorded = manifest.get("collapse") or {}
    try:
        return CollapseParams(int(recorded.get("k", 10)), float(recorded.get("threshold", 0.2)))
    except (AttributeError, TypeError, ValueError):
        raise RunError(
            "groups_manifest.json: collapse malformed (k a whole number, threshold a number)"
        ) from None


def write_group_aggregates(
    run_dir: Path,
    outcomes: list[GroupOutcome],
    manifest: Mapping[str, Any],
    settings: IntervalSettings | None = None,
    condition_rows: list[dict[str, Any]] | None = None,
) -> list[Path]:
    """Compute the group metrics of the games (conditions in the manifest's order) and write
    aggregates.parquet, seats.parquet, group_rounds.parquet and group_conditional.parquet;
    returns their paths. `settings`: the intervals' (default: as the manifest records them);
    `condition_rows`: a list that receives the condition rows of aggregates.parquet."""
    run_dir = Path(run_dir)
    settings = settings or interval_settings(dict(manifest))
    conditions = _conditions(manifest)
    collapse = _collapse(manifest)
    exact = recorded_exact(manifest)
    generator_for = interval_generators(settings)
    by_condition: dict[str, list[GroupOutcome]] = {}
    for outcome in outcomes:
        if outcome.condition not in conditions:
            raise RunError(
                f"a game of condition {outcome.condition!r}, which is not in the manifest "
                f"(valid: {', '.join(conditions)})"
            )
        by_condition.setdefault(outcome.condition, []).append(outcome)
    run_id = str(manifest.get("run_id", ""))
    tables: dict[str, list[dict[str, Any]]] = {name: [] for name in GROUP_ARTIFACTS}
    for name, entry in conditions.items():
        games = by_condition.get(name)
        if not games:
            continue
        rows = group_condition_rows(
            group_games_metrics(games, collapse),
            settings,
            generator_for(name),
            _design(entry, games[0].game),
            exact.get(name, False),
            run_id,
        )
        add_talk_to_seat_rows(rows.seats, games, settings.level)
        tables[AGGREGATES_FILE] += rows.aggregates
        tables[SEATS_FILE] += rows.seats
        tables[GROUP_ROUNDS_FILE] += rows.rounds
        tables[GROUP_CONDITIONAL_FILE] += rows.conditional
    columns = {
        AGGREGATES_FILE: GROUP_AGGREGATE_COLUMNS,
        SEATS_FILE: GROUP_SEAT_TABLE_COLUMNS,
        GROUP_ROUNDS_FILE: GROUP_ROUND_COLUMNS,
        GROUP_CONDITIONAL_FILE: GROUP_CONDITIONAL_COLUMNS,
    }
    if condition_rows is not None:
        condition_rows.extend(r for r in tables[AGGREGATES_FILE] if r.get("scope") == "condition")
    paths = []
    for name in GROUP_ARTIFACTS:
        path = run_dir / name
        write_rows(path, tables[name], group_schema(columns[name]))
        paths.append(path)
    return paths


def aggregate_group_run(run_dir: Path) -> list[dict[str, Any]]:
    """`pdbench aggregate` of a groups run: the group tables rewritten from rounds.jsonl under
    the run's lock; returns the condition rows of aggregates.parquet."""
    from pdbench.storage.run_dir import RunLock, read_manifest

    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir, "groups")
    rows: list[dict[str, Any]] = []
    with RunLock(run_dir):
        outcomes = read_group_outcomes(run_dir, manifest)
        write_group_aggregates(run_dir, outcomes, manifest, condition_rows=rows)
    return rows


def group_schema(columns: tuple[str, ...]) -> Any:
    """The pyarrow schema of a group table: text, whole numbers, flags, else float64."""
    import pyarrow as pa

    def kind(name: str) -> Any:
        if name in TEXT_COLUMNS:
            return pa.string()
        if name in INT_COLUMNS:
            return pa.int64()
        if name in BOOL_COLUMNS:
            return pa.bool_()
        return pa.float64()

    return pa.schema([pa.field(name, kind(name)) for name in columns])
