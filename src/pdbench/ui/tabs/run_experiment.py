"""🧪 Run Experiment: pick two agents and the game settings, run, then see the results.

The run is written to a new `data/runs/ui_<timestamp>/` (see `pdbench.ui.launcher`); when it
finishes, the View Results tab opens on it.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from pdbench.ui import launcher, planning
from pdbench.ui.components import (
    FLASH,
    SEL_CONDITION,
    SEL_REPLICATE,
    SEL_RUN,
    AppContext,
    config_dir_or_error,
    restore_widgets,
    run_prepared,
    save_widgets,
)
from pdbench.ui.style import card_html
from pdbench.ui.tabs import view_results

LABEL = "🧪 Run Experiment"
KEY = "run"  # the tab's name in the session state (e.g. a pending tab switch)
POSITION = 3  # its place among the tabs, left to right
FIRST_WITHOUT_RUN = True  # opens first when the app starts without a run directory
PENDING_TAB = "pending_tab"  # read by streamlit_app before the tabs are drawn
DEFAULTS = {"a": "policy:TFT", "b": "policy:ALLD"}
STORE = "rx_form"  # saved widget values: the form survives a switch to another tab
INITIAL = {
    "rx_horizon": "Fixed",
    "rx_rounds": 50,
    "rx_stop": 0.05,
    "rx_cap": 1000,
    "rx_noise": 0.0,
    "rx_reps": 3,
    "rx_seed": 1337,
    "rx_sweep_on": False,
    "rx_sweep_path": "game.noise",
    "rx_sweep_values": "0, 0.05, 0.1",
}
FORM_KEYS = ("rx_agent_a", "rx_agent_b", *INITIAL)
PAYOFF_BASE, PAYOFF_SAVED = "rx_payoff_base", "rx_payoff_saved"


def render(ctx: AppContext) -> None:
    """Draw the tab."""
    config_dir = config_dir_or_error()
    if config_dir is None:
        return
    options = {o.key: o for o in launcher.agent_options(config_dir)}
    shown_dir = (
        config_dir.relative_to(Path.cwd().resolve())
        if config_dir.is_relative_to(Path.cwd().resolve())
        else config_dir
    )
    st.caption(f"Agents from `{shown_dir}/` · results go to `{ctx.runs_root}/ui_<timestamp>/`")
    restore_widgets(STORE, LABEL)
    for key, value in INITIAL.items():
        st.session_state.setdefault(key, value)

    picks = {}
    cols = st.columns(2)
    for col, side in zip(cols, ("a", "b"), strict=True):
        with col:
            key = f"rx_agent_{side}"
            if st.session_state.get(key) not in options:
                st.session_state[key] = (
                    DEFAULTS[side] if DEFAULTS[side] in options else next(iter(options))
                )
            choice = st.selectbox(
                f"Agent {side.upper()}",
                list(options),
                key=key,
                format_func=lambda k: options[k].label,
            )
            picks[side] = options[choice]
            st.html(card_html(picks[side].profile, side.upper()))

    st.markdown("#### ⚙️ Game settings")
    c1, c2, c3, c4 = st.columns([1.6, 1.2, 1.2, 0.8])
    with c1:
        kind = st.radio("Horizon", ["Fixed", "Geometric"], horizontal=True, key="rx_horizon")
        if kind == "Fixed":
            n_rounds = st.slider("Rounds", 1, 500, key="rx_rounds")
            horizon = {"type": "fixed", "n_rounds": int(n_rounds)}
        else:
            stop_prob = st.slider(
                "Stop probability after each round", 0.01, 0.5, step=0.01, key="rx_stop"
            )
            cap = st.number_input("Max rounds (cap)", 1, 100_000, key="rx_cap")
            horizon = {"type": "geometric", "stop_prob": float(stop_prob), "max_rounds": int(cap)}
            st.caption(f"Expected length about {1 / stop_prob:.0f} rounds.")
    with c2:
        noise = st.slider(
            "Noise (move flip probability)",
            0.0,
            0.2,
            step=0.01,
            key="rx_noise",
            help="Probability that a chosen move is flipped before it is played (miscommunication).",
        )
    with c3:
        replicates = st.slider(
            "Replicates (seeds)",
            1,
            100,
            key="rx_reps",
            help="Games per condition, each with its own seed derived from the run seed and the "
            "replicate number (the same seed gives the same games). Intervals treat the game as "
            "the unit, so more seeds give narrower intervals.",
        )
    with c4:
        seed = st.number_input("Seed", 0, 2**31 - 1, key="rx_seed")

    sweep, sweep_ok = _sweep()

    st.markdown("#### 💰 Payoff matrix")
    left, right = st.columns([1, 1.3])
    with left:
        st.caption("Each cell: payoff to A, payoff to B. Edit a cell to change the game.")
        if "rx_payoffs" not in st.session_state:  # a new editor: start from the last edit
            st.session_state[PAYOFF_BASE] = st.session_state.get(
                PAYOFF_SAVED, launcher.payoff_frame()
            )
        edited = st.data_editor(st.session_state[PAYOFF_BASE], key="rx_payoffs", num_rows="fixed")
        st.session_state[PAYOFF_SAVED] = edited
    matrix = None
    with right:
        try:
            matrix = launcher.parse_payoff_frame(edited)
        except launcher.PayoffInputError as exc:
            for problem in exc.problems:
                st.error(problem, icon="🚫")
        if matrix is not None:
            st.markdown(
                f"Temptation **T = {matrix.temptation:g}** · Reward **R = {matrix.reward:g}** · "
                f"Punishment **P = {matrix.punishment:g}** · Sucker **S = {matrix.sucker:g}**"
            )
            warnings = matrix.pd_warnings()
            for warning in warnings:
                st.warning(warning, icon="⚠️")
            if not warnings:
                st.success("A Prisoner's Dilemma: T > R > P > S and 2R > T + S.", icon="✅")

    save_widgets(STORE, FORM_KEYS)
    llm = [p for p in picks.values() if p.kind != "policy"]
    if llm:
        st.info(
            "LLM agents answer through their configured provider (the offline mock needs no key); "
            "every prompt and raw reply is stored with the rounds.",
            icon="💬",
        )
    request = None
    if matrix is not None:
        request = launcher.ExperimentRequest(
            agent_a=picks["a"],
            agent_b=picks["b"],
            horizon=horizon,
            noise=float(noise),
            replicates=int(replicates),
            seed=int(seed),
            matrix=matrix,
            sweep=sweep,
        )
        with st.expander("📋 Plan: games, LLM calls, tokens and cost", expanded=bool(llm)):
            st.code(planning.plan_text("experiment", request, config_dir), language="text")
    if not st.button(
        "🚀 Run", type="primary", key="rx_run", disabled=request is None or not sweep_ok
    ):
        return
    assert request is not None
    _run(ctx, request, config_dir)


def _sweep() -> tuple[tuple[str, tuple[float, ...]] | None, bool]:
    """The optional sweep over one parameter: ((path, values) or None, whether it is valid)."""
    with st.expander("🔁 Sweep one parameter", expanded=bool(st.session_state["rx_sweep_on"])):
        on = st.toggle(
            "Play one condition per value (each with every replicate)", key="rx_sweep_on"
        )
        left, right = st.columns([1, 1.4])
        path = left.selectbox(
            "Parameter",
            list(planning.SWEEPABLE),
            format_func=planning.SWEEPABLE.get,
            key="rx_sweep_path",
            disabled=not on,
        )
        text = right.text_input("Values (comma-separated)", key="rx_sweep_values", disabled=not on)
        if not on:
            return None, True
        try:
            values = planning.parse_values(text)
        except launcher.PayoffInputError as exc:
            for problem in exc.problems:
                st.error(problem, icon="🚫")
            return None, False
        st.caption(
            f"{len(values)} conditions named `<agents>+{path.split('.')[-1]}_<value>`; the plan "
            "below checks that the parameter applies to the agents picked. The other settings "
            "above stay as they are in every condition."
        )
        return (path, values), True


def _run(ctx: AppContext, request: launcher.ExperimentRequest, config_dir: Path) -> None:
    finished = run_prepared(
        lambda: launcher.prepare_experiment(request, config_dir, ctx.runs_root),
        "experiment",
        "Playing rounds",
    )
    if finished is None:
        return
    st.session_state[SEL_RUN] = str(finished.run_dir.resolve())
    if request.sweep is None:
        st.session_state[SEL_CONDITION] = request.condition_name
    else:  # the conditions are named from the sweep: View Results starts on the first
        st.session_state.pop(SEL_CONDITION, None)
    st.session_state[SEL_REPLICATE] = 0
    st.session_state[FLASH] = finished.message()
    st.session_state[PENDING_TAB] = view_results.KEY
    st.rerun()
