"""🧬 Evolution: the sandbox of Nicky Case's "The Evolution of Trust". Set the initial population,
miscommunication, match length and dynamics, run, then watch the population change.

A run is written to a new `data/evolutions/ui_<timestamp>/` (see `pdbench.ui.launcher`) and shown
from its generations.parquet: the population over time (stacked area), the animated population
(a ring of members and a bar per strategy, played in the browser by `animation.evolution_page`)
and the final shares. A saved group evolution (`pdbench evolve` of a `group_evolution` config)
is listed with them and shown by `ui.group_science_views`.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from pdbench.ui import (
    animation,
    charts,
    data,
    group_science_views,
    launcher,
    planning,
    presets,
    science,
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
from pdbench.ui.group_science_data import EVOLUTION_KIND, GroupEvolution
from pdbench.ui.presets import PRESETS, PROCESSES, EvolutionSettings
from pdbench.ui.style import policy_profile, population_strip_html

LABEL = "🧬 Evolution"
KEY = "evolution"  # the tab's name in the session state (e.g. a pending tab switch)
POSITION = 5  # its place among the tabs, left to right
FIRST_FOR: tuple[str, ...] = ("evolution", EVOLUTION_KIND)  # opens first for these
PREFIX = "ev"  # results picker keys (ev_dir, ev_flash, ...)
STORE = "ev_form"  # saved widget values (see components.restore_widgets)
SPEED_MS = 250  # the animation's default speed (ms per generation)
LESSON = (
    "**The lesson** (after [The Evolution of Trust](https://ncase.me/trust/)). Each generation "
    "every pair of players plays a match; the *N* lowest scorers are eliminated and the *N* "
    "highest scorers cloned. Without mistakes, 🪞 **Copycat** (tit for tat) takes over: it "
    "cooperates with the nice and never lets 😈 cheaters exploit it twice, so cheaters feast on "
    "🕊️ the naive, then starve. Add a little *miscommunication* and Copycats fall into endless "
    "feuds after an accidental defection: forgiving strategies (😇 **Generous Copycat**, "
    "🐱 **Copykitten**) win instead. Try the two presets: they differ only in noise."
)


LLM_COUNT = 2  # individuals of an LLM agent when it is added
POOL_NOTE = (
    "LLM members answer through their provider, one call per round. Their matches are played "
    "once: *Matches per pair* (Advanced) for every pair of types, each type against itself too "
    "(a pair of LLM members makes two calls a round), and each generation draws its matches "
    "from that pool. Extra seeds rerun the process on the same pool: they cost no calls. "
    "Check the calls and cost in the plan below first."
)


def _keys() -> list[str]:
    strategies = [f"ev_n_{k}" for k in presets.evolution_strategies()]
    llm = [f"ev_llm_n_{k}" for k in st.session_state.get("ev_llm") or []]
    return (
        strategies
        + llm
        + [
            "ev_llm",
            "ev_seeds",
            "ev_rounds",
            "ev_noise",
            "ev_process",
            "ev_eliminate",
            "ev_mutation",
            "ev_generations",
            "ev_seed",
            "ev_fitness",
            "ev_reps",
        ]
    )


def _apply(settings: EvolutionSettings, keep_seeds: bool = False) -> None:
    """Set every form widget to `settings` (preset buttons, first visit); `keep_seeds` leaves
    the number of seeds as the user set it (a preset is a population and game, not a study)."""
    for key in presets.evolution_strategies():
        st.session_state[f"ev_n_{key}"] = int(settings.counts.get(key, 0))
    st.session_state.update(
        ev_rounds=int(settings.rounds),
        ev_noise=int(round(settings.noise * 100)),
        ev_process=settings.process if settings.process in PROCESSES else "eliminate_clone",
        ev_eliminate=int(settings.eliminate),
        ev_mutation=int(round(settings.mutation_rate * 100)),
        ev_generations=int(settings.generations),
        ev_seed=int(settings.seed),
        ev_fitness=settings.fitness if settings.fitness in presets.FITNESS_MODES else "auto",
        ev_reps=int(settings.repetitions),
        ev_llm=list(settings.llm_members),
    )
    if not keep_seeds or "ev_seeds" not in st.session_state:
        st.session_state["ev_seeds"] = int(settings.seeds)
    for key, n in settings.llm_members.items():
        st.session_state[f"ev_llm_n_{key}"] = int(n)


def _current() -> EvolutionSettings:
    s = st.session_state
    return EvolutionSettings(
        counts={k: int(s[f"ev_n_{k}"]) for k in presets.evolution_strategies()},
        rounds=int(s["ev_rounds"]),
        noise=int(s["ev_noise"]) / 100,
        process=str(s["ev_process"]),
        eliminate=int(s["ev_eliminate"]),
        mutation_rate=int(s["ev_mutation"]) / 100,
        generations=int(s["ev_generations"]),
        seed=int(s["ev_seed"]),
        fitness=str(s["ev_fitness"]),
        repetitions=int(s["ev_reps"]),
        seeds=int(s["ev_seeds"]),
        agents={k: int(s.get(f"ev_llm_n_{k}", LLM_COUNT)) for k in s.get("ev_llm") or []},
    )


def render(ctx: AppContext) -> None:
    """Draw the tab."""
    st.caption(LESSON)
    settings = _form()
    if settings is not None:
        _run(settings)
    given = ctx.run_dir is not None and data.run_kind(ctx.run_dir) in FIRST_FOR
    root = data.EVOLUTIONS_ROOT
    result = saved_results(
        PREFIX,
        "evolution",
        [root],
        [str(ctx.run_dir)] if given else [],
        f"No evolutions yet under `{root}/`: run one above, or "
        "`uv run pdbench evolve configs/evolution.yaml` "
        "(`configs/group_evolution.yaml` for one of groups).",
        also=(EVOLUTION_KIND,),
    )
    if isinstance(result, tables.Evolution):
        _show(result)
    elif isinstance(result, GroupEvolution):  # strategies meeting in groups: its own view
        group_science_views.show_evolution(result)


def _form() -> EvolutionSettings | None:
    """The sandbox; returns the settings when Run was clicked with valid ones."""
    config_dir = launcher.find_config_dir()
    restore_widgets(STORE, LABEL)
    if "ev_rounds" not in st.session_state:
        _apply(presets.evolution_defaults(config_dir))
    st.session_state.setdefault("ev_seeds", 1)  # a form saved before seeds were offered
    with st.container(border=True):
        st.markdown("#### 🎛️ Sandbox")
        buttons = st.columns([1, 1, 1, 1.6])
        for col, (key, (name, preset)) in zip(buttons, PRESETS.items(), strict=False):
            col.button(
                name, key=f"ev_preset_{key}", on_click=_apply, args=(preset, True), width="stretch"
            )
        buttons[2].button(
            "↺ Example config",
            key="ev_preset_config",
            on_click=lambda: _apply(presets.evolution_defaults(launcher.find_config_dir())),
            width="stretch",
        )
        st.markdown("**Initial population** (individuals per strategy)")
        keys = presets.evolution_strategies()
        for start in range(0, len(keys), 5):
            cols = st.columns(5)
            for col, key in zip(cols, keys[start : start + 5], strict=False):
                profile = policy_profile(key)
                col.slider(
                    f"{profile.emoji} {profile.title}",
                    0,
                    30,
                    key=f"ev_n_{key}",
                    help=f"{key}: {profile.description}",
                )
        options = _llm_members(config_dir)
        draft = _current()
        strip = [(policy_profile(k), n) for k, n in draft.population.items()]
        strip += [(options[k].profile, n) for k, n in draft.llm_members.items()]
        st.html(population_strip_html(strip))
        st.caption(f"{draft.size} individuals")
        c1, c2, c3, c4 = st.columns(4)
        c1.slider("Rounds per match", 1, 50, key="ev_rounds")
        c2.slider(
            "😵 Miscommunication (%)",
            0,
            50,
            key="ev_noise",
            help="Chance that a move is flipped before it is played (noise).",
        )
        process = c3.radio("Dynamics", list(PROCESSES), key="ev_process", format_func=PROCESSES.get)
        c4.slider(
            "N eliminated & cloned per generation",
            1,
            20,
            key="ev_eliminate",
            disabled=process != "eliminate_clone",
        )
        c5, c6, c7, c8 = st.columns(4)
        c5.slider(
            "🧬 Mutation (%)",
            0,
            25,
            key="ev_mutation",
            help="Chance an offspring switches strategy.",
        )
        c6.slider(
            "Generations",
            1,
            1000,
            key="ev_generations",
            help="For Moran, a generation is one birth-death event: try several hundred.",
        )
        c7.number_input("Seed", 0, 2**31 - 1, key="ev_seed")
        c7.number_input(
            "Seeds (independent runs of the process)",
            1,
            50,
            key="ev_seeds",
            help="Run the process this many times on the same played matches and show how "
            "often each strategy takes over, with a 95% interval. The charts show the first run.",
        )
        with c8.expander("Advanced"):
            st.selectbox(
                "Fitness",
                list(presets.FITNESS_MODES),
                key="ev_fitness",
                format_func=presets.FITNESS_MODES.get,
            )
            st.slider(
                "Matches per pair of types (expected fitness; the LLM members' pool)",
                1,
                50,
                key="ev_reps",
            )
        settings = _current()
        save_widgets(STORE, _keys())
        problems = settings.problems()
        if config_dir is not None:
            problems += planning.same_agent_twice(settings, config_dir)
        for problem in problems:
            st.error(problem, icon="🚫")
        if settings.llm_members:
            st.info(POOL_NOTE, icon="💬")
        if config_dir is not None and not problems:
            with st.expander(
                "📋 Plan: matches, LLM calls, tokens and cost",
                expanded=bool(settings.llm_members),
            ):
                st.code(planning.plan_text("evolution", settings, config_dir), language="text")
        clicked = st.button(
            "🧬 Run Evolution", type="primary", key="ev_run", disabled=bool(problems)
        )
    return settings if clicked and not problems else None


def _llm_members(config_dir: Path | None) -> dict[str, launcher.AgentOption]:
    """The LLM agents offered as population members (mock personas and every LLM agent file
    in configs/agents/), a count slider per picked one; returns the options by key."""
    if config_dir is None:
        return {}
    options = {
        o.key: o for o in launcher.agent_options(config_dir) if o.kind in ("persona", "llm_file")
    }
    picked = agent_multiselect(
        "💬 LLM agents in the population (mock personas, or LLM agents from configs/agents/)",
        "ev_llm",
        options,
        "None: the policies above only",
    )
    cols = st.columns(4) if picked else []
    for i, key in enumerate(picked):
        st.session_state.setdefault(f"ev_llm_n_{key}", LLM_COUNT)
        cols[i % 4].slider(
            f"{options[key].label}: individuals",
            1,
            30,
            key=f"ev_llm_n_{key}",
            help=options[key].profile.description,
        )
    return options


def _run(settings: EvolutionSettings) -> None:
    config_dir = launcher.find_config_dir()
    finished = run_prepared(
        lambda: launcher.prepare_evolution(settings, data.EVOLUTIONS_ROOT, config_dir),
        "evolution",
        "Progress",
    )
    if finished is not None:
        st.session_state[f"{PREFIX}_dir"] = str(finished.run_dir.resolve())
        st.session_state[f"{PREFIX}_flash"] = finished.message()


def _describe(ev: tables.Evolution) -> str:
    m = ev.manifest
    cfg = m.get("config") or {}
    rounds = (cfg.get("horizon") or {}).get("n_rounds", "?")
    process = str(m.get("process", "?"))
    n = f" (N = {m.get('eliminate')})" if process == "eliminate_clone" else ""
    many = int((cfg.get("evolution") or {}).get("seeds") or 1)
    seeds = f" ({many} seeds; the charts show the first)" if many > 1 else ""
    return (
        f"**{m.get('run_id', Path(ev.path).name)}** · {PROCESSES.get(process, process)}{n} · "
        f"{rounds} rounds per match · miscommunication {100 * float(m.get('noise') or 0):g}% · "
        f"mutation {100 * float(m.get('mutation_rate') or 0):g}% · fitness {m.get('fitness', '?')} "
        f"· seed {m.get('seed', '?')}{seeds} · {m.get('generations_run', '?')} of "
        f"{m.get('generations_requested', '?')} generations"
    )


def _show(ev: tables.Evolution) -> None:
    st.caption(_describe(ev))
    last = ev.last_generation
    final = ev.at(last)
    leader = final.sort_values("count", ascending=False, kind="stable").iloc[0]
    player = ev.by_name[str(leader["strategy"])]
    fixated = ev.manifest.get("fixated")
    if fixated:
        st.success(
            f"{player.profile.emoji} **{player.profile.title}** took over the whole population "
            f"after {last} generations.",
            icon="🏆",
        )
    else:
        st.info(
            f"After {last} generations {player.profile.emoji} **{player.profile.title}** leads "
            f"with {leader['share']:.0%} of the population.",
            icon="🧭",
        )
    if ev.fixation is not None:
        _fixation(ev)
    st.markdown("##### 📈 Population over time")
    st.altair_chart(charts.population_chart(ev.generations, ev.players), width="stretch")
    st.markdown("##### 🎞️ Generation by generation")
    _player(ev)
    st.markdown("##### 🏁 Final shares")
    first = ev.at(int(ev.generations["generation"].min()))
    table = tables.final_shares_table(first, final, ev.players)
    shown = table[(table["start"] > 0) | (table["count"] > 0)]
    n = max(1, len(shown))
    cols = st.columns(n if n <= 7 else -(-n // 2))
    for i, (_, row) in enumerate(shown.iterrows()):
        p = ev.by_name[row["name"]]
        change = int(row["count"]) - int(row["start"])
        cols[i % len(cols)].metric(
            f"{p.profile.emoji} {p.profile.title}",
            f"{row['share']:.0%}",
            delta=f"{change:+d} (from {int(row['start'])} to {int(row['count'])})",
            delta_color="normal" if change else "off",
            border=True,
        )
    st.dataframe(
        tables.in_percent(table, ["share"]),
        hide_index=True,
        width="stretch",
        column_order=["strategy", "start", "count", "share", "fitness"],
        column_config={
            "strategy": st.column_config.TextColumn("strategy", width="medium"),
            "start": st.column_config.NumberColumn("initial count", format="%d"),
            "count": st.column_config.NumberColumn("final count", format="%d"),
            "share": percent_column("final share"),
            "fitness": st.column_config.TextColumn("mean fitness (last generation)"),
        },
    )
    with st.expander("📉 Mean fitness per strategy over time"):
        st.altair_chart(charts.fitness_chart(ev.generations, ev.players), width="stretch")
        st.caption("Fitness: a player's mean payoff per round against the rest of the population.")


# --------------------------------------------------------------------------------------------
# The animated population


def _player(ev: tables.Evolution) -> None:
    """The population generation by generation, played in the browser; it opens on the last
    generation (the outcome) and Play starts again from generation 0."""
    st.iframe(
        animation.evolution_page(ev.generations, ev.players, SPEED_MS),
        height=animation.EVOLUTION_HEIGHT,
    )


# --------------------------------------------------------------------------------------------
# Fixation over seeds


def _fixation(ev: tables.Evolution) -> None:
    """fixation.parquet: how often each strategy took over, over the seeds, with the Wilson
    intervals the runner wrote (dot and whisker, then the numbers)."""
    assert ev.fixation is not None
    table = tables.fixation_table(ev.fixation, ev.players)
    n = int(table["seeds"].iloc[0])
    st.markdown(f"##### 🎯 Fixation over {n} seeds")
    st.altair_chart(
        science.interval_chart(
            tables.fixation_chart_frame(table), "share of seeds it took over", True, "seeds"
        ),
        width="stretch",
    )
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_order=["strategy", "share", "interval", "k_of_n"],
        column_config={
            "strategy": st.column_config.TextColumn("strategy", width="medium"),
            "share": st.column_config.TextColumn("fixation share"),
            "interval": st.column_config.TextColumn("95% interval (Wilson)"),
            "k_of_n": st.column_config.TextColumn("seeds it took over"),
        },
    )
    st.caption(
        f"The process was run {n} times on the same played matches (seed k uses "
        "derive_seed(run seed, 'evolution', k)); a seed fixates when one strategy is left. "
        "The seeds are independent, so the share's 95% interval is the Wilson score interval "
        "of k of n, as written to fixation.parquet. The charts below show the first seed."
    )
