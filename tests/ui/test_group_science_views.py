"""Saved group tournaments and group evolutions in the app (AppTest): they open in the 🏆
Tournament and 🧬 Evolution tabs, listed beside the pairwise ones and kept in the URL, and show
their artifacts' numbers: the leaderboard with its intervals and shared ranks, the game and the
groups in words, the games played filtered by a player; the shares over generations of the
seed picked, the payoff table by composition and the fixation shares with their Wilson
intervals beside the exact probabilities.

The hand-written directories hold numbers chosen here; every expected text below is written
from them by hand. A real run (`pdbench tournament` / `evolve` of the example configs) is
checked against its own Parquet files, read independently.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest
from tests.support.group_science_run import make_real_group_science
from tests.ui.sample import make_tournament
from tests.ui.test_app import APP, assert_clean, show_tab

from pdbench.storage.parquet import write_columns

TOURNAMENT, EVOLUTION = "🏆 Tournament", "🧬 Evolution"
THIRD = 1 / 3


# --------------------------------------------------------------------------------------------
# Hand-written directories


def _public_goods(n: int, r: float) -> dict[str, Any]:
    """The manifest's game entry of a public goods game with c = 1 (pay_c, pay_d by hand)."""
    pay = {3: ([-THIRD, THIRD, 1.0], [0.0, 2 * THIRD, 4 * THIRD])}[n]  # r = 2: (2(k+1) - 3)/3, 2k/3
    return {
        "kind": "public_goods",
        "n_players": n,
        "params": [["r", r], ["c", 1.0]],
        "pay_c": pay[0],
        "pay_d": pay[1],
        "label": f"public_goods N={n} r={r:g} c=1",
    }


def write_group_tournament(directory: Path, run_id: str = "hand_gt") -> Path:
    """Four players in groups of three, two games a group; GRIM and TFT tie for rank 2. The
    leaderboard's rows are written out of rank order."""
    directory.mkdir(parents=True)
    manifest = {
        "kind": "group_tournament",
        "run_id": run_id,
        "status": "completed",
        "started_at_utc": "2026-01-02T03:04:05+00:00",
        "seed": 1,
        "group_size": 3,
        "with_replacement": False,
        "repetitions": 2,
        "noise": 0.0,
        "horizon": {"type": "fixed", "n_rounds": 10},
        "game": _public_goods(3, 2.0),
        "players": [{"name": n, "type": "policy"} for n in ("ALLC", "ALLD", "TFT", "GRIM")],
        "totals": {"groups": 4, "games": 8, "rounds": 80},
        "intervals": {"unit": "game"},
    }
    (directory / "group_tournament_manifest.json").write_text(json.dumps(manifest))
    write_columns(
        directory / "leaderboard.parquet",
        {
            "rank": [4, 2, 1, 2],
            "player": ["ALLC", "GRIM", "ALLD", "TFT"],
            "mean_payoff_per_round": [0.5, 0.875, 1.25, 0.875],
            "ci_low": [0.25, 0.75, 1.0, 0.8],
            "ci_high": [0.75, 1.0, 1.5, 0.95],
            "cooperation_rate": [1.0, 0.5, 0.02, 0.625],
            "cooperation_ci_low": [1.0, 0.4, 0.01, 0.5],
            "cooperation_ci_high": [1.0, 0.6, 0.03, 0.75],
            "games": [6, 6, 6, 6],
            "groups": [3, 3, 3, 3],
            "exact": [False, False, False, False],
        },
    )
    groups = [("ALLC", "ALLD", "TFT"), ("ALLC", "ALLD", "GRIM"), ("ALLC", "TFT", "GRIM")]
    groups.append(("ALLD", "TFT", "GRIM"))
    pays = [(-0.5, 1.5, 0.25), (-0.5, 1.25, 0.5), (1.0, 1.0, 1.0), (1.125, 0.75, 0.75)]
    rows = [(g, rep, p) for g, p in zip(groups, pays, strict=True) for rep in (0, 1)]
    write_columns(
        directory / "groups.parquet",
        {
            "game": list(range(8)),
            "group": ["_vs_".join(g) for g, _, _ in rows],
            "repetition": [rep for _, rep, _ in rows],
            "seed": [100 + i for i in range(8)],
            "rounds": [10] * 8,
            "members": [list(g) for g, _, _ in rows],
            "payoff_per_round": [list(p) for _, _, p in rows],
            "cooperation_rate": [[0.5, 0.5, 0.5]] * 8,
            "group_cooperation": [0.25, 0.25, 0.5, 0.5, 1.0, 1.0, 0.125, 0.125],
            "group_payoff_per_round": [0.4, 0.4, 0.4, 0.4, 1.0, 1.0, 0.875, 0.875],
        },
    )
    return directory


def write_group_evolution(directory: Path, seeds: int = 2, run_id: str = "hand_ge") -> Path:
    """CC and ALLD in groups of three, 7 CC and 3 ALLD; seed 0 ends on CC after 3
    generations, seed 1 mixed after 1 (`seeds` = 1: seed 0 only, no fixation table)."""
    directory.mkdir(parents=True)
    runs = [
        {"fixated": "CC", "generations_run": 3, "final_counts": {"CC": 10, "ALLD": 0}},
        {"fixated": None, "generations_run": 1, "final_counts": {"CC": 6, "ALLD": 4}},
    ][:seeds]
    manifest = {
        "kind": "group_evolution",
        "run_id": run_id,
        "status": "completed",
        "started_at_utc": "2026-01-02T03:04:05+00:00",
        "seed": 5,
        "group_size": 3,
        "population_size": 10,
        "initial_counts": {"CC": 7, "ALLD": 3},
        "strategies": ["CC", "ALLD"],
        "process": "pairwise_comparison",
        "beta": 1.0,
        "mutation_rate": 0.0,
        "generations_requested": 100,
        "horizon": {"type": "fixed", "n_rounds": 20},
        "game": _public_goods(3, 2.0),
        "runs": runs,
    }
    (directory / "group_evolution_manifest.json").write_text(json.dumps(manifest))
    write_columns(
        directory / "payoff_table.parquet",
        {
            "composition": [0, 0, 1, 1, 2, 2, 3, 3],
            "label": ["3 CC", "3 CC", "2 CC + 1 ALLD", "2 CC + 1 ALLD"]
            + ["1 CC + 2 ALLD", "1 CC + 2 ALLD", "3 ALLD", "3 ALLD"],
            "strategy": ["CC", "ALLD"] * 4,
            "count": [3, 0, 2, 1, 1, 2, 0, 3],
            "payoff_per_round": [1.0, None, 0.5, 1.25, -0.0125, 0.375, None, 0.0],
            "games": [2] * 8,
        },
    )
    cc = {0: [7, 8, 9, 10], 1: [7, 6]}
    rows = [(s, g, n) for s in range(seeds) for g, n in enumerate(cc[s])]
    write_columns(
        directory / "generations.parquet",
        {
            "seed": [s for s, _, _ in rows for _ in (0, 1)],
            "generation": [g for _, g, _ in rows for _ in (0, 1)],
            "strategy": ["CC", "ALLD"] * len(rows),
            "count": [c for _, _, n in rows for c in (n, 10 - n)],
            "share": [c / 10 for _, _, n in rows for c in (n, 10 - n)],
            "fitness": [1.0, 0.5] * len(rows),
        },
    )
    if seeds > 1:
        # Wilson 95% by hand: 1 of 2, centre (0.5 + 0.9604) / 2.9208 = 0.5, half
        # 1.96 sqrt(0.125 + 0.2401) / 2.9208 = 0.40548; 0 of 2, centre = half = 0.9604 / 2.9208
        # = 0.32881.
        write_columns(
            directory / "fixation.parquet",
            {
                "strategy": ["CC", "ALLD", "(no fixation)"],
                "fixations": [1, 0, 1],
                "seeds": [2, 2, 2],
                "probability": [0.5, 0.0, 0.5],
                "ci_low": [0.09452, 0.0, 0.09452],
                "ci_high": [0.90548, 0.65762, 0.90548],
                "exact_probability": [0.6, 0.4, None],
                "mean_generations": [3.0, None, None],
            },
        )
    return directory


# --------------------------------------------------------------------------------------------
# Helpers


def opened_on(directory: Path) -> AppTest:
    """The app started on `directory` (`pdbench ui DIR`)."""
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.session_state["pdbench_run_dir"] = str(directory)
    return at.run()


def table_with(at: AppTest, column: str) -> pd.DataFrame:
    """The (first) table on the page with this column."""
    return next(t.value for t in at.dataframe if column in t.value.columns)


def chart_rows(at: AppTest, title: str | None = None, field: str = "label") -> pd.DataFrame:
    """The data drawn by the chart with this title (or the one whose data has `field`)."""
    for chart in at.get("vega_lite_chart"):
        spec = json.loads(chart.proto.spec)
        if title is not None and spec.get("title") != title:
            continue
        for dataset in chart.proto.datasets:
            frame = pa.ipc.open_stream(dataset.data.data).read_pandas()
            if field in frame.columns:
                return frame
    raise AssertionError(f"no chart titled {title!r} with {field!r}")


def page_text(at: AppTest) -> str:
    return "\n".join([*(m.value for m in at.markdown), *(c.value for c in at.caption)])


PAYOFF_CHART = "payoff per round (95% interval)"


# --------------------------------------------------------------------------------------------
# Group tournament


def test_a_group_tournament_shows_its_leaderboard_with_intervals_and_shared_ranks(
    tmp_path: Path,
) -> None:
    run = write_group_tournament(tmp_path / "elsewhere" / "gt")
    at = opened_on(run)
    assert_clean(at)
    assert at.tabs[0].label == TOURNAMENT
    assert at.selectbox(key="tn_dir").value == str(run.resolve())
    board = table_with(at, "cooperation")
    assert board.to_dict("list") == {
        "rank": ["🥇 1", "🥈 =2", "🥈 =2", "4"],
        "player": ["ALLD", "GRIM", "TFT", "ALLC"],
        "payoff": [
            "1.250 [1.000, 1.500]",
            "0.875 [0.750, 1.000]",
            "0.875 [0.800, 0.950]",
            "0.500 [0.250, 0.750]",
        ],
        "cooperation": [
            "2.0% [1.0%, 3.0%]",
            "50.0% [40.0%, 60.0%]",
            "62.5% [50.0%, 75.0%]",
            "100.0% [100.0%, 100.0%]",
        ],
        "games": [6, 6, 6, 6],
        "groups": [3, 3, 3, 3],
    }
    drawn = chart_rows(at, PAYOFF_CHART)
    assert list(drawn["label"]) == ["1 · ALLD", "=2 · GRIM", "=2 · TFT", "4 · ALLC"]
    assert list(drawn["value"]) == [1.25, 0.875, 0.875, 0.5]
    assert list(drawn["low"]) == [1.0, 0.75, 0.8, 0.25]
    assert list(drawn["high"]) == [1.5, 1.0, 0.95, 0.75]
    assert drawn["text"].iloc[0] == "1.250 [1.000, 1.500]"
    _said_in_words(at)
    _games_filtered_by_player(at)


def _said_in_words(at: AppTest) -> None:
    """The group size and the stage game in words, the game's payoffs by hand."""
    text = page_text(at)
    assert (
        "Groups of 3: every combination of 3 distinct players among the 4, 4 groups, each "
        "playing 2 games of 10 rounds a game (8 games, 80 rounds)." in text
    )
    assert (
        "A public goods game of 3 players: each cooperator pays c = 1 into a pot, the pot is "
        "multiplied by r = 2 and shared equally among all 3. Since r < N, defecting pays "
        "c (1 − r/N) = 0.333 more a round than cooperating, whatever the others do." in text
    )
    stage = table_with(at, "cooperator gets")
    assert list(stage["cooperator gets"]) == ["-0.333", "0.333", "1.000"]
    assert list(stage["defector gets"]) == ["0.000", "0.667", "1.333"]


def _games_filtered_by_player(at: AppTest) -> None:
    """Every game, then those of ALLD with its payoffs in a column of their own."""
    games = table_with(at, "payoff_per_seat")
    assert len(games) == 8
    assert games.iloc[0][["members", "payoff_per_seat", "group_cooperation"]].tolist() == [
        "ALLC, ALLD, TFT",
        "-0.500, 1.500, 0.250",
        "25.0%",
    ]
    at.selectbox(key="gtn_player").select("ALLD").run()
    assert_clean(at)
    games = table_with(at, "payoff_per_seat")
    assert list(games["game"]) == [0, 1, 2, 3, 6, 7]  # the groups with ALLD, two games each
    assert list(games["player_payoff"]) == ["1.500", "1.500", "1.250", "1.250", "1.125", "1.125"]
    assert "6 of 8 games with ALLD" in page_text(at)


def test_group_and_pairwise_tournaments_are_listed_together_and_linked(tmp_path: Path) -> None:
    root = tmp_path / "data" / "tournaments"
    pairwise = make_tournament(root / "pairwise", ["TFT", "ALLD"], run_id="pairwise")
    group = write_group_tournament(root / "groups", run_id="hand_gt")
    at = show_tab(AppTest.from_file(str(APP), default_timeout=60).run(), TOURNAMENT)
    box = at.selectbox(key="tn_dir")
    assert {o.split(" · ")[0] for o in box.options} == {"pairwise", "hand_gt"}
    box.select(str(group.resolve())).run()
    assert_clean(at)
    assert at.query_params["tournament"] == "data/tournaments/groups"
    assert "player" in table_with(at, "cooperation").columns
    at.selectbox(key="tn_dir").select(str(pairwise.resolve())).run()
    assert_clean(at)
    assert set(at.dataframe[0].value["name"]) == {"TFT", "ALLD"}  # the pairwise view
    # A link to the group tournament opens it.
    linked = AppTest.from_file(str(APP), default_timeout=60)
    linked.query_params.update({"tab": "tournament", "tournament": "data/tournaments/groups"})
    linked.run()
    assert_clean(linked)
    assert linked.selectbox(key="tn_dir").value == str(group.resolve())
    assert list(table_with(linked, "cooperation")["player"])[0] == "ALLD"


def test_a_group_tournament_typed_in_opens_and_a_broken_one_says_why(tmp_path: Path) -> None:
    group = write_group_tournament(tmp_path / "somewhere" / "gt")
    at = show_tab(AppTest.from_file(str(APP), default_timeout=60).run(), TOURNAMENT)
    at.text_input(key="tn_path").input(str(group)).run()
    assert_clean(at)
    assert at.selectbox(key="tn_dir").value == str(group.resolve())
    (group / "groups.parquet").unlink()
    at.text_input(key="tn_path").input(str(group)).run()
    assert not at.exception
    assert any("groups.parquet: file not found" in e.value for e in at.error)


# --------------------------------------------------------------------------------------------
# Group evolution


def test_a_group_evolution_shows_shares_payoffs_and_fixation(tmp_path: Path) -> None:
    run = write_group_evolution(tmp_path / "elsewhere" / "ge")
    at = opened_on(run)
    assert_clean(at)
    assert at.tabs[0].label == EVOLUTION
    assert at.selectbox(key="ev_dir").value == str(run.resolve())
    text = page_text(at)
    assert "10 individuals (7 CC, 3 ALLD); each meets its co-players in groups of 3" in text
    assert "Pairwise comparison (each generation one individual may imitate another" in text
    assert "selection intensity β = 1, mutation 0%, at most 100 generations" in text
    assert [i.value for i in at.info] == ["Seed 0: CC took over after 3 generations."]
    shares = chart_rows(at, field="share")
    cc = shares[shares["strategy"] == "CC"]
    assert list(cc["generation"]) == [0, 1, 2, 3] and list(cc["count"]) == [7, 8, 9, 10]
    assert list(shares.loc[shares["strategy"] == "ALLD", "share"]) == [0.3, 0.2, 0.1, 0.0]

    payoffs = table_with(at, "composition")
    assert payoffs.to_dict("list") == {
        "composition": ["3 CC", "2 CC + 1 ALLD", "1 CC + 2 ALLD", "3 ALLD"],
        "CC payoff / round": ["1", "0.5", "-0.0125", "—"],
        "ALLD payoff / round": ["—", "1.25", "0.375", "0"],
        "games": [2, 2, 2, 2],
    }
    fixation = table_with(at, "fixed_in")
    assert fixation.to_dict("list") == {
        "strategy": ["CC", "ALLD", "no fixation (still mixed)"],
        "fixed_in": ["1 of 2", "0 of 2", "1 of 2"],
        "simulated": ["50.0% [9.5%, 90.5%]", "0.0% [0.0%, 65.8%]", "50.0% [9.5%, 90.5%]"],
        "exact": ["60.0%", "40.0%", "—"],
        "generations": ["3", "—", "—"],
    }
    drawn = chart_rows(at, "share of seeds it took over (Wilson 95%)")
    assert list(drawn["label"]) == ["CC", "ALLD", "no fixation"]
    assert list(drawn["exact"].fillna(-1)) == [0.6, 0.4, -1]
    _another_seed(at)


def _another_seed(at: AppTest) -> None:
    """The seed picker shows seed 1's run."""
    assert at.selectbox(key="gev_seed").options == ["0", "1"]
    at.selectbox(key="gev_seed").select(1).run()
    assert_clean(at)
    assert [i.value for i in at.info] == [
        "Seed 1: no type took over in 1 generation (at the end: 6 CC, 4 ALLD)."
    ]
    shares = chart_rows(at, field="share")
    assert list(shares.loc[shares["strategy"] == "CC", "count"]) == [7, 6]
    assert any(m.value == "##### 📈 Shares over generations · seed 1" for m in at.markdown)


def test_one_seed_has_no_picker_and_no_fixation_table(tmp_path: Path) -> None:
    at = opened_on(write_group_evolution(tmp_path / "ge", seeds=1))
    assert_clean(at)
    assert not [s for s in at.selectbox if s.key == "gev_seed"]
    assert not [t for t in at.dataframe if "fixed_in" in t.value.columns]
    assert "composition" in table_with(at, "composition").columns


# --------------------------------------------------------------------------------------------
# Real runs: the views show their Parquet files' numbers


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_real_group_science(tmp_path_factory.mktemp("group_science"))


def test_a_real_group_tournament_shows_its_leaderboard_file(real_runs: tuple[Path, Path]) -> None:
    tournament, _ = real_runs
    at = opened_on(tournament)
    assert_clean(at)
    stored = pd.read_parquet(tournament / "leaderboard.parquet").sort_values("rank")
    shown = table_with(at, "cooperation")
    assert list(shown["player"]) == list(stored["player"])
    for (_, row), payoff, coop in zip(
        stored.iterrows(), shown["payoff"], shown["cooperation"], strict=True
    ):
        mean, low, high = row["mean_payoff_per_round"], row["ci_low"], row["ci_high"]
        assert payoff == f"{mean:.3f} [{low:.3f}, {high:.3f}]"
        assert coop.startswith(f"{100 * row['cooperation_rate']:.1f}% [")
    games = pd.read_parquet(tournament / "groups.parquet")
    assert len(table_with(at, "payoff_per_seat")) == len(games)


def test_a_real_group_evolution_shows_its_fixation_file(real_runs: tuple[Path, Path]) -> None:
    _, evolution = real_runs
    at = opened_on(evolution)
    assert_clean(at)
    stored = pd.read_parquet(evolution / "fixation.parquet")
    shown = table_with(at, "fixed_in")
    for (_, row), exact in zip(stored.iterrows(), shown["exact"], strict=True):
        value = row["exact_probability"]
        assert exact == ("—" if pd.isna(value) else f"{100 * value:.1f}%")
    seed0 = pd.read_parquet(evolution / "generations.parquet").query("seed == 0")
    drawn = chart_rows(at, field="share")
    last = int(seed0["generation"].max())
    assert int(drawn["generation"].max()) == last  # the last generation is drawn
    final = seed0[seed0["generation"] == last].set_index("strategy")["count"]
    drawn_final = drawn[drawn["generation"] == last].set_index("strategy")["count"]
    assert drawn_final.to_dict() == final.to_dict()
