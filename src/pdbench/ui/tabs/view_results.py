"""📊 View Results: one game of a run in detail, its metrics, and all conditions of the run.

Read-only: nothing here writes to the run directory or re-runs anything.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from pdbench.core import rounds_display
from pdbench.core.metrics import comparable_metric, horizons_differ
from pdbench.storage.record.fields import RAW_RESPONSES, side_field
from pdbench.ui import animation, charts, data, files, science, tables
from pdbench.ui.components import (
    FLASH,
    AppContext,
    Game,
    matchup,
    percent_column,
    pick_game,
    show_error,
    text_column_width,
)
from pdbench.ui.style import LEGEND, agent_profile, timeline_html

LABEL = "📊 View Results"
KEY = "view"  # the tab's name in the session state (e.g. a pending tab switch)
POSITION = 1  # its place among the tabs, left to right
FIRST_FOR: tuple[str, ...] = ("experiment",)  # opens first for these run kinds (and any other)
HTML_TIMELINE_MAX = 200  # longer games get the zoomable timeline (animation.timeline_page)


def render(ctx: AppContext) -> None:
    """Draw the tab."""
    flash = st.session_state.pop(FLASH, None)
    if flash:
        st.success(flash, icon="✅")
    game = pick_game("vr", ctx)
    if game is None:
        return
    matchup(game)
    # The headline and the timeline are drawn into their places after the charts below them,
    # so that the first chart reaches the browser sooner.
    headline, timeline = st.container(), st.container()
    _charts(game)
    with headline:
        _headline(game)
    with timeline:
        _timeline(game)
    _metrics_table(game)
    _intervals(game)
    _strategy_cards(game)
    _memory_one(game)
    _conditions(game)
    _compare(game)
    if game.has_llm:
        _llm_inspector(game)
    _downloads(game)


def _spread(row: pd.Series) -> str:
    """'mean 92% · 85–98%': the condition mean and the range over replicates, compact."""
    kind = row["kind"]
    if pd.isna(row["condition_mean"]):
        return "no replicate has a value"
    mean = tables.format_value(row["condition_mean"], kind, compact=True)
    if row["n_replicates"] <= 1 or row["min"] == row["max"]:
        return f"mean {mean}"
    lo = tables.format_value(row["min"], kind, compact=True)
    hi = tables.format_value(row["max"], kind, compact=True)
    return f"mean {mean} · {lo}–{hi}"


def _headline(game: Game) -> None:
    summary = tables.metric_summary(game.aggregates, game.condition, game.replicate)
    by_metric = {r["metric"]: r for _, r in summary.iterrows()}
    shown = [
        ("n_rounds", "🔢 Rounds"),
        ("agent_a_cooperation_rate", f"{game.profiles[0].emoji} A cooperation"),
        ("agent_b_cooperation_rate", f"{game.profiles[1].emoji} B cooperation"),
        ("agent_a_total_payoff", f"{game.profiles[0].emoji} A payoff"),
        ("agent_b_total_payoff", f"{game.profiles[1].emoji} B payoff"),
    ]
    n_rep = int(summary["n_replicates"].max()) if len(summary) else 0
    st.subheader("📈 Headline metrics")
    st.caption(
        f"Big numbers: replicate {game.replicate}. Grey chip below each: mean over the condition's "
        f"{n_rep} replicate(s) and their range. Source: {game.aggregates_source}."
    )
    cols = st.columns(len(shown) + 1)
    for col, (metric, label) in zip(cols, shown, strict=False):
        row = by_metric.get(metric)
        if row is None:
            continue
        col.metric(
            label,
            tables.format_value(row["replicate"], row["kind"]),
            delta=_spread(row),
            delta_color="off",
            delta_arrow="off",
            border=True,
            help=f"`{metric}` from aggregates.parquet",
        )
    row = by_metric.get("time_to_collapse")
    if row is not None:
        value, delta = tables.round_chip(row)
        cols[-1].metric(
            "📉 Collapse at",
            value,
            delta=delta,
            delta_color="off",
            delta_arrow="off",
            border=True,
            help=rounds_display.metric_help("time_to_collapse"),
        )


def _timeline(game: Game) -> None:
    st.subheader("🎮 Game timeline")
    table = game.table
    flips, fails = tables.flips_and_fallbacks(table)
    if len(table) <= HTML_TIMELINE_MAX:
        st.html(timeline_html(table, game.labels))
        st.html(LEGEND)
    else:
        st.iframe(animation.timeline_page(table, game.labels), height=animation.TIMELINE_HEIGHT)
        st.caption(
            f"{rounds_display.NUMBERING_NOTE} The lower strip is the whole game (each pixel column "
            "coloured by its share of C); drag on it to choose the window drawn above, one cell "
            "per round. Hover a round for its moves."
        )
    st.caption(f"{flips} noise flip(s) · {fails} parse fallback(s) in this game.")


def _charts(game: Game) -> None:
    auto = charts.auto_window(len(game.table))
    window = st.select_slider(
        "Smoothing window (rounds) for the rolling cooperation rate",
        options=[0, *charts.WINDOWS],
        value=0,
        format_func=lambda w: f"auto ({auto})" if w == 0 else str(w),
        key="vr_window",
        help="auto: about 50 windows across the game, so a long game shows its course",
    )
    window = window or auto
    mine = tables.replicate_row(game.aggregates, game.condition, game.replicate)
    mean = tables.condition_row(game.aggregates, game.condition)
    joint = tables.series_from_json(None if mine is None else mine["cooperation_rate_over_time"])
    cond = tables.series_from_json(None if mean is None else mean["cooperation_rate_over_time"])
    band = None
    if mean is not None and "cooperation_rate_over_time_ci_low" in mean:
        band = (
            tables.series_from_json(mean["cooperation_rate_over_time_ci_low"]),
            tables.series_from_json(mean["cooperation_rate_over_time_ci_high"]),
        )
    left, right = st.columns(2)
    with left:
        st.markdown("**🤝 Cooperation over time**")
        st.altair_chart(
            charts.cooperation_chart(game.table, game.labels, int(window), joint, cond, band),
            width="stretch",
        )
        if band and band[0]:
            st.caption(
                "Grey band: the condition mean's 95% interval per round over games (games as "
                f"the unit), averaged over the same {window}-round window as the lines."
            )
    with right:
        st.markdown("**💰 Cumulative payoff**")
        st.altair_chart(charts.payoff_chart(game.table, game.labels), width="stretch")


def _metrics_table(game: Game) -> None:
    summary = tables.metric_summary(game.aggregates, game.condition, game.replicate)
    shown = tables.metric_text_table(summary, game.replicate)
    with st.expander("📋 All metrics of this game and condition", expanded=False):
        st.dataframe(shown, hide_index=True, width="stretch")
        note = tables.talk_note(game.aggregates, game.condition)
        if note is not None:
            st.caption(note)


def _intervals(game: Game) -> None:
    st.subheader("📏 This condition, with 95% intervals")
    st.dataframe(
        tables.interval_table(game.aggregates, game.condition), hide_index=True, width="stretch"
    )
    st.caption(
        "Means over the condition's games; the interval treats the game as the unit, by the "
        "metric's kind (README: Intervals), clipped to the metric's feasible range; from "
        "aggregates.parquet."
    )
    note = tables.talk_note(game.aggregates, game.condition)
    if note is not None:
        st.caption(note)


def _strategy_cards(game: Game) -> None:
    st.subheader("🧬 Strategy card")
    fits = data.load_strategy_fit(game.run.path)
    if fits is None:
        st.info(f"No strategy fit yet: run `pdbench profile {game.run.path}`.")
        return
    columns = st.columns(2)
    for column, side, profile in zip(columns, ("a", "b"), game.profiles, strict=True):
        with column:
            st.markdown(f"**Agent {side.upper()} · {profile.short}**")
            ties = tables.strategy_ties(fits, game.condition, side)
            if ties:
                st.info(ties)
            verdict = tables.strategy_verdict(fits, game.condition, side)
            if verdict:
                st.warning(verdict)
            card = tables.strategy_card(fits, game.condition, side)
            st.dataframe(card, hide_index=True, width="stretch")
    st.caption(
        "Rank by BIC of each strategy fitted alone; mixture shares (Dal Bo-Frechette) with "
        "bootstrap intervals over games, conditional on the library: the best strategy is "
        "tested against memory-three, and a card that fails shows no share. Strategies that "
        "explain the moves equally well are named together; coin flips are RANDOM(p). From "
        "strategy_fit.parquet."
    )


KEY_CONDITION_COLUMNS = (
    "agent_a_cooperation_rate",
    "agent_b_cooperation_rate",
    "overall_cooperation_rate",
    "agent_a_total_payoff",
    "agent_b_total_payoff",
    "time_to_collapse",  # shown as a round numbered from 1 (tables.conditions_table)
)


def _conditions(game: Game) -> None:
    st.subheader("🧮 All conditions of this run")
    table = tables.conditions_table(game.aggregates)
    configs = data.condition_configs(game.manifest)
    for side in ("a", "b"):
        table[f"agent_{side}"] = [
            agent_profile((configs.get(c) or {}).get(f"agent_{side}"), n).short
            for c, n in zip(table["condition"], table[f"agent_{side}_name"], strict=True)
        ]
    table.insert(0, " ", ["👉" if c == game.condition else "" for c in table["condition"]])
    config: dict[str, Any] = {
        # the text columns as wide as their longest text: names are not cut (the table scrolls)
        "condition": st.column_config.TextColumn(
            "condition", width=text_column_width([*table["condition"], "condition"])
        ),
        "agent_a": st.column_config.TextColumn(
            "agent A", width=text_column_width(table["agent_a"])
        ),
        "agent_b": st.column_config.TextColumn(
            "agent B", width=text_column_width(table["agent_b"])
        ),
        "agent_a_name": st.column_config.TextColumn("agent A name"),
        "agent_b_name": st.column_config.TextColumn("agent B name"),
        "n_replicates": st.column_config.NumberColumn("reps", format="%d", width="small"),
        "n_rounds": st.column_config.NumberColumn("rounds", format="%.4g", width="small"),
        "time_to_collapse": st.column_config.NumberColumn(
            rounds_display.metric_label("time_to_collapse"),
            format="%.4g",
            help=rounds_display.metric_help("time_to_collapse"),
        ),
    }
    for column, (label, kind) in tables.METRICS.items():
        if column in config or column not in table.columns:
            continue
        if kind == "rate":
            config[column] = percent_column(label, color="auto")
        elif kind == "per_round":
            config[column] = st.column_config.NumberColumn(label, format="%.2f")
        else:
            config[column] = st.column_config.NumberColumn(label, format="%.1f")
    # The share of each agent's moves that were fallbacks, shown when there are any.
    failures = [c for c in ("agent_a_fallback_rate", "agent_b_fallback_rate") if c in table]
    shown = [" ", "condition", "agent_a", "agent_b", "n_replicates", "n_rounds"]
    shown += [c for c in KEY_CONDITION_COLUMNS if c in table.columns]
    if failures and table[failures].fillna(0).to_numpy().sum() > 0:
        shown += failures
    rates = [c for c, (_, kind) in tables.METRICS.items() if kind == "rate"]
    st.dataframe(
        tables.in_percent(table, rates),
        hide_index=True,
        width="stretch",
        column_config=config,
        column_order=shown,
    )
    st.caption(
        "Condition means over replicates, from aggregates.parquet. 👉 = the selected condition."
    )
    with st.expander("All metric columns of every condition"):
        full = tables.in_percent(table.drop(columns=[" ", "agent_a", "agent_b"]), rates)
        st.dataframe(full, hide_index=True, width="stretch", column_config=config)


COMPARE_DEFAULT = ("agent_a_cooperation_rate", "agent_b_cooperation_rate", "agent_a_total_payoff")


def _compare(game: Game) -> None:
    st.subheader("⚖️ Compare conditions")
    every = tables.conditions_table(game.aggregates)["condition"].tolist()
    metrics = [m for m in tables.METRICS if f"{m}_ci_low" in game.aggregates.columns]
    rounds = tables.rounds_by_condition(game.aggregates)
    defaults = dict.fromkeys(comparable_metric(m, rounds) for m in COMPARE_DEFAULT)
    chosen = st.multiselect(
        "Metrics",
        metrics,
        default=[m for m in defaults if m in metrics],
        format_func=lambda m: tables.METRICS[m][0],
        key="vr_compare_metrics",
    )
    shown = st.multiselect("Conditions", every, default=every[:12], key="vr_compare_conditions")
    if not chosen or not shown:
        st.info("Pick at least one metric and one condition.")
        return
    for metric in chosen:
        label, kind = tables.METRICS[metric]
        frame = science.comparison_frame(game.aggregates, metric, shown)
        st.altair_chart(science.interval_chart(frame, label, kind == "rate"), width="stretch")
    if horizons_differ(rounds):
        st.caption(
            "The conditions' games differ in length, so payoffs are offered per round (totals "
            "of unequal horizons are not comparable)."
        )
    st.caption(
        "Each dot is the mean over a condition's games; the whisker its 95% interval with the "
        "game as the unit, by the metric's kind: a share of games (Wilson with continuity "
        "correction), a ratio pooled over games (Wilson at the games' effective sample size) "
        "or a mean of per-game values (hull of Student-t and bootstrap-t, with Hall's interval "
        "for totals), "
        "clipped to the metric's feasible range; none for 1 game. From aggregates.parquet. "
        "`pdbench compare` tests the differences."
    )


def _memory_one(game: Game) -> None:
    frame = science.memory_one_frame(game.aggregates, game.condition)
    if frame.empty:
        return
    st.subheader("🧠 Memory-one profile")
    st.altair_chart(science.memory_one_chart(frame, game.labels), width="stretch")
    st.caption(
        "P(cooperate) after each outcome of the previous round (mine, theirs), pooled over the "
        "condition's games, with 95% intervals over games; hover for the number of such rounds."
    )


def _downloads(game: Game) -> None:
    st.subheader("⬇️ Download")
    run_dir = game.run.path
    name = Path(run_dir).name
    found = files.run_files(run_dir)
    buttons = [
        ("📄 Report (HTML)", partial(files.report, run_dir), f"{name}_report.html", "text/html"),
        ("🗜️ All files (zip)", partial(files.zipped, run_dir), f"{name}.zip", "application/zip"),
    ]
    buttons += [(p.name, partial(p.read_bytes), p.name, files.mime(p)) for p in found]
    columns = st.columns(min(4, len(buttons)))
    for i, (label, content, file_name, mime) in enumerate(buttons):
        columns[i % len(columns)].download_button(
            label,
            data=content,
            file_name=file_name,
            mime=mime,
            key=f"vr_dl_{file_name}",
            on_click="ignore",
        )


def _llm_inspector(game: Game) -> None:
    st.subheader("💬 LLM prompts and replies")
    n = len(game.table)
    key = "vr_llm_round"
    if not 1 <= int(st.session_state.get(key, 1)) <= n:
        st.session_state[key] = 1
    col_round, col_note = st.columns([1, 3])
    round_no = int(col_round.number_input(f"Round (1–{n})", min_value=1, max_value=n, key=key))
    failed = game.table.loc[
        game.table[side_field("a", "parse_failure")] | game.table[side_field("b", "parse_failure")],
        "round",
    ].tolist()
    col_note.caption(
        "Rounds with a fallback move after invalid replies: "
        + (
            ", ".join(map(str, failed[:30])) + (" …" if len(failed) > 30 else "")
            if failed
            else "none"
        )
    )
    try:
        record = data.load_round_record(
            game.run.path, game.condition, game.replicate, rounds_display.round_index_of(round_no)
        )
    except data.RunLoadError as exc:
        show_error(exc)
        return
    columns = st.columns(2)
    for col, side, profile, cfg in zip(
        columns, ("a", "b"), game.profiles, game.configs, strict=True
    ):
        with col:
            _agent_exchange(record, side, profile.short, cfg)


def _agent_exchange(
    record: dict[str, Any], side: str, title: str, cfg: dict[str, Any] | None
) -> None:
    played = record.get(side_field(side, "action"))
    intended = record.get(side_field(side, "intended_action"), played)
    st.markdown(
        f"**{side.upper()} · {title}** — played **{played}**"
        + (f" (meant {intended})" if intended != played else "")
    )
    if not cfg or cfg.get("type") != "llm":
        st.caption("Scripted policy: no prompts.")
        return
    prompts = (record.get("prompts") or {}).get(f"agent_{side}")
    if prompts:
        with st.expander("System prompt"):
            st.code(prompts.get("system") or "", language="text", wrap_lines=True)
        st.markdown("Round prompt")
        st.code(prompts.get("round") or "", language="text", wrap_lines=True)
    else:
        st.caption("Prompts were not stored for this run (store_prompts: false).")
    attempts = (record.get(RAW_RESPONSES) or {}).get(f"agent_{side}") or []
    if not attempts:
        st.caption("No replies recorded.")
    for attempt in attempts:
        valid = bool(attempt.get("valid"))
        badge = "✅ valid" if valid else "❌ invalid"
        st.markdown(f"Reply {int(attempt.get('attempt', 0)) + 1} · {badge}")
        raw = attempt.get("raw")
        st.code(
            "(raw reply not stored)" if raw is None else (raw or "(empty reply)"),
            language="text",
            wrap_lines=True,
        )
        if attempt.get("error"):
            st.caption(f"error: {attempt['error']}")
    if record.get(side_field(side, "parse_failure")):
        st.warning("All replies were invalid: the agent's fallback move was played.", icon="⚠️")
