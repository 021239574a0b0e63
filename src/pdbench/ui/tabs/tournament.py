"""🏆 Tournament: a round robin between strategies (and mock LLM personas), run from the page,
then the medal leaderboard and who scores against whom.

A run is written to a new `data/tournaments/ui_<timestamp>/` (see `pdbench.ui.launcher`) and
shown from its files; tournaments already on disk (or any directory typed in) open the same
way. Every number comes from the library's leaderboard.parquet and payoff_matrix.parquet. A
saved group tournament (`pdbench tournament` of a `group_tournament` config) is listed with
them and shown by `ui.group_science_views`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from pdbench.ui import (
    charts,
    data,
    group_science_views,
    launcher,
    planning,
    podium,
    presets,
    tables,
)
from pdbench.ui.components import (
    AppContext,
    agent_multiselect,
    percent_column,
    restore_widgets,
    run_prepared,
    save_widgets,
    saved_results,
)
from pdbench.ui.group_science_data import TOURNAMENT_KIND, GroupTournament
from pdbench.ui.style import podium_html

LABEL = "🏆 Tournament"
KEY = "tournament"  # the tab's name in the session state (e.g. a pending tab switch)
POSITION = 4  # its place among the tabs, left to right
FIRST_FOR: tuple[str, ...] = ("tournament", TOURNAMENT_KIND)  # opens first for these
PREFIX = "tn"  # the results picker's keys: tn_dir (selected), tn_flash, tn_path, tn_extra
FORM = "tn_form"  # saved widget values (see components.restore_widgets)
FORM_KEYS = (
    "tn_players",
    "tn_horizon",
    "tn_rounds",
    "tn_stop",
    "tn_noise",
    "tn_reps",
    "tn_self_play",
    "tn_seed",
)


def render(ctx: AppContext) -> None:
    """Draw the tab."""
    config_dir = launcher.find_config_dir()
    noise = float(st.session_state.get("tn_noise", presets.tournament_defaults(config_dir).noise))
    now = (
        "With the noise at 0 as now, that is what you will see."
        if noise == 0
        else f"The noise is at {noise:.0%} now: mistakes echo between Copycats, and Always Cheat "
        "can take the top; set it to 0 to see the first result."
    )
    st.caption(
        "A round robin: every pair of strategies meets in the same number of matches, and a "
        "strategy's score is its mean payoff per round over all of them. Without noise, "
        "😈 Always Cheat wins every match it plays yet ends near the bottom, while 🪞 Copycat "
        f"wins none and tops the table. {now} Players the data do not separate (overlapping "
        "rank intervals) share a medal."
    )
    if config_dir is None:
        st.error("No configs folder with agents/ found: cannot list the strategies.", icon="🚫")
    else:
        _form(config_dir)
    given = ctx.run_dir is not None and data.run_kind(ctx.run_dir) in FIRST_FOR
    root = data.TOURNAMENTS_ROOT
    result = saved_results(
        PREFIX,
        "tournament",
        [root],
        [str(ctx.run_dir)] if given else [],
        f"No tournaments yet under `{root}/`: run one above, or "
        "`uv run pdbench tournament configs/tournament.yaml` "
        "(`configs/group_tournament.yaml` for one of groups).",
        also=(TOURNAMENT_KIND,),
    )
    if isinstance(result, tables.Tournament):
        _show(result)
    elif isinstance(result, GroupTournament):  # a tournament of groups: its own view
        group_science_views.show_tournament(result)


def _form(config_dir: Path) -> None:
    defaults = presets.tournament_defaults(config_dir)
    options = {
        o.key: o
        for o in launcher.agent_options(config_dir)
        if o.kind in ("policy", "persona", "llm_file")
    }
    restore_widgets(FORM, LABEL)
    initial: dict[str, Any] = {
        "tn_players": [f"policy:{k}" for k in defaults.players if f"policy:{k}" in options],
        "tn_horizon": "Fixed",
        "tn_rounds": defaults.n_rounds,
        "tn_stop": 0.02,
        "tn_noise": defaults.noise,
        "tn_reps": defaults.repetitions,
        "tn_self_play": defaults.self_play,
        "tn_seed": defaults.seed,
    }
    for key, value in initial.items():
        st.session_state.setdefault(key, value)
    with st.container(border=True):
        st.markdown("#### ⚙️ New tournament")
        picked = agent_multiselect(
            "Strategies (scripted policies, mock LLM personas, or LLM agents from agents/)",
            "tn_players",
            options,
            "Pick at least two",
        )
        c1, c2, c3, c4, c5 = st.columns([1.6, 1.2, 1.2, 0.9, 0.9])
        with c1:
            kind = st.radio("Turns", ["Fixed", "Geometric"], horizontal=True, key="tn_horizon")
            if kind == "Fixed":
                n = st.slider("Rounds per match", 1, 500, key="tn_rounds")
                horizon: dict[str, Any] = {"type": "fixed", "n_rounds": int(n)}
            else:
                stop = st.slider("Stop probability", 0.01, 0.5, step=0.01, key="tn_stop")
                horizon = {"type": "geometric", "stop_prob": float(stop), "max_rounds": 2000}
                st.caption(f"About {1 / stop:.0f} rounds per match on average (at most 2000).")
        noise = c2.slider(
            "Noise (move flip probability)",
            0.0,
            0.3,
            step=0.01,
            key="tn_noise",
            help="Probability that a chosen move is flipped before it is played.",
        )
        reps = c3.slider("Repetitions per pair", 1, 50, key="tn_reps")
        with c4:
            st.write("")
            self_play = st.toggle("Self-play", key="tn_self_play")
        seed = c5.number_input("Seed", 0, 2**31 - 1, key="tn_seed")
        save_widgets(FORM, FORM_KEYS)
        players = [options[k] for k in picked]
        if any(p.kind != "policy" for p in players):
            st.info(
                "LLM players answer through their provider, one call per round (the mock offline, "
                "an agent file's provider otherwise): check the calls and cost below first.",
                icon="💬",
            )
        if len(players) >= 2:
            request = launcher.TournamentRequest(
                players, horizon, float(noise), int(reps), bool(self_play), int(seed)
            )
            with st.expander(
                "📋 Plan: matches, LLM calls, tokens and cost",
                expanded=any(p.kind != "policy" for p in players),
            ):
                st.code(planning.plan_text("tournament", request, config_dir), language="text")
        run = st.button(
            "🏆 Run Tournament", type="primary", key="tn_run", disabled=len(players) < 2
        )
        if len(players) < 2:
            st.caption("Pick at least two strategies to run a tournament.")
    if run:
        request = launcher.TournamentRequest(
            players, horizon, float(noise), int(reps), bool(self_play), int(seed)
        )
        _run(request, config_dir)


def _run(request: launcher.TournamentRequest, config_dir: Path) -> None:
    finished = run_prepared(
        lambda: launcher.prepare_tournament(request, config_dir, data.TOURNAMENTS_ROOT),
        "tournament",
        "Playing rounds",
    )
    if finished is not None:
        st.session_state[f"{PREFIX}_dir"] = str(finished.run_dir.resolve())
        st.session_state[f"{PREFIX}_flash"] = finished.message()


def _describe(t: tables.Tournament) -> str:
    m = t.manifest
    horizon = m.get("horizon") or {}
    if horizon.get("type") == "geometric":
        turns = f"geometric turns (stop prob {horizon.get('stop_prob')})"
    else:
        turns = f"{horizon.get('n_rounds', '?')} rounds per match"
    totals = m.get("totals") or {}
    return (
        f"**{m.get('run_id', Path(t.path).name)}** · {len(t.players)} players · {turns} · "
        f"noise {m.get('noise', 0):g} · {m.get('repetitions', '?')} repetitions per pair · "
        f"self-play {'on' if m.get('self_play') else 'off'} · seed {m.get('seed', '?')} · "
        f"{totals.get('matches', 0):,} matches, {totals.get('rounds', 0):,} rounds"
    )


def _show(t: tables.Tournament) -> None:
    st.caption(_describe(t))
    board = t.leaderboard
    by_name = t.by_name
    scores = dict(zip(board["player"].astype(str), board["mean_score_per_round"], strict=True))
    steps = podium.podium_steps(board)
    st.html(
        podium_html(
            [
                (
                    step.rank,
                    [
                        (by_name[n].profile, n, f"{scores[n]:.3f} points / round")
                        for n in step.players
                    ],
                    step.note,
                )
                for step in steps
            ]
        )
    )

    st.markdown("##### 🏅 Leaderboard")
    st.altair_chart(
        charts.leaderboard_chart(board, t.players, podium.podium_medals(steps)), width="stretch"
    )
    table = tables.leaderboard_table(board, t.players, steps)
    st.dataframe(
        tables.in_percent(table, ["cooperation_rate"]),
        hide_index=True,
        width="stretch",
        column_order=[c for c in table.columns if c != "name"],
        column_config={
            "rank": st.column_config.TextColumn("rank", width="small"),
            "player": st.column_config.TextColumn("player", width="large"),
            "score_per_round": st.column_config.NumberColumn("score / round", format="%.3f"),
            "ci95": st.column_config.TextColumn("95% CI of the mean"),
            "rank_range": st.column_config.TextColumn("rank (95%)", width="small"),
            "wins": st.column_config.NumberColumn("wins", format="%d"),
            "draws": st.column_config.NumberColumn("draws", format="%d"),
            "losses": st.column_config.NumberColumn("losses", format="%d"),
            "matches": st.column_config.NumberColumn("matches", format="%d"),
            "cooperation_rate": percent_column("cooperation"),
        },
    )
    st.caption(
        "Score: mean payoff per round over a player's matches. Its 95% interval (error bars) "
        "and the rank range come from a bootstrap over repetitions (the repetition is the "
        "unit; none with one repetition). Players whose rank intervals overlap share a podium "
        "step and its medal. Wins / draws / losses compare match totals against each opponent."
    )

    st.markdown("##### 🔥 Who scores against whom")
    m = t.matrix()
    left, right = st.columns([3, 1.2])
    with left:
        st.altair_chart(
            charts.payoff_heatmap(
                t.pairwise,
                podium.ranked_players(board, t.players),
                m.sucker,
                (m.reward + m.punishment) / 2,
                m.temptation,
            ),
            width="content",
        )
    right.markdown(
        f"Each cell is the **row** player's mean score per round against the **column** "
        f"player, both in leaderboard order. Green: above the midpoint between mutual "
        f"cooperation (R = {m.reward:g}) and "
        f"mutual defection (P = {m.punishment:g}); red: below it."
    )
    with st.expander("🎲 Every match (matches.parquet)"):
        st.dataframe(t.matches, hide_index=True, width="stretch")
