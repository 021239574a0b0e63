"""🎮 Play: play the iterated game yourself against any policy or LLM agent, as in Nicky Case's
The Evolution of Trust, seeing what the agent sees.

After each click the game so far is replayed by the engine a run uses (`play_launcher.replay_play`),
so the opponent moves exactly as it will in the saved run. When the last round is played the
game is saved as an ordinary experiment run (a new `ui_<timestamp>/` under the runs folder, the
person as a `type: human` agent whose config holds their moves), with the same artifacts and
metrics as any run, and the tab offers to open it in View Results.

With "Talk before each move" (against a policy, which speaks by a message rule, or a mock LLM
persona) the person types a message before each move and reads the opponent's: with
simultaneous order only once theirs is sent, otherwise when the opponent writes first. The saved
run records the typed messages (the human agent's `messages`) and the opponent's, as seen.

The game lives in session state under `pl_game` (a plain key), so switching tabs keeps it; the
setup form's values are kept with `components.save_widgets`. It is also kept on disk under the
id in the URL's `game` parameter (`play_launcher.save_game`), so a browser Refresh, which starts
a new session, finds it and replays it. The tab reads and writes only that parameter.

The moves are called Cooperate and Defect throughout (`play_look`). Each round's result flips in
(CSS); at the end a lesson card says which strategy the person played like (the saved run's
strategy card), both players' memory-one profiles and one sentence of the lesson (`lesson`).

The person may also take a seat in a group of 3 to 6 instead (`play_group`: its own form, board
and saved groups run, kept under the URL's `group` parameter), or in a public goods game with
punishment or a commons (`play_resource`: saved as a pgg or commons run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from pdbench.core.rounds_display import FIRST_ROUND, round_text
from pdbench.errors import PdbenchError
from pdbench.storage.record.fields import MESSAGES, ROUND_INDEX, side_field, side_fields
from pdbench.ui import (
    data,
    launcher,
    lesson,
    play_group,
    play_launcher,
    play_look,
    play_resource,
    play_talk,
    tables,
)
from pdbench.ui.components import (
    SEL_CONDITION,
    SEL_REPLICATE,
    SEL_RUN,
    AppContext,
    config_dir_or_error,
    restore_widgets,
    run_prepared,
    save_widgets,
)
from pdbench.ui.style import card_html, human_profile, trail_html
from pdbench.ui.tabs import view_results
from pdbench.ui.tabs.run_experiment import PENDING_TAB

LABEL = "🎮 Play"
KEY = "play"  # the tab's name in the session state (e.g. a pending tab switch)
POSITION = 7  # its place among the tabs, left to right
GAME = "pl_game"  # the game in progress: a plain session key (survives tab switches)
STORE = "pl_form"  # the setup form's saved values
FORM_KEYS = ("pl_opponent", "pl_name", "pl_rounds", "pl_seed", "pl_talk", "pl_order", "pl_rule")
DEFAULT_OPPONENT = "policy:TFT"
TRAIL = 20  # rounds shown in the history trail
GAME_PARAM = "game"  # the URL's query parameter naming the game in progress


def render(ctx: AppContext) -> None:
    """Draw the tab: the setup form, or the game in progress, or the finished game."""
    config_dir = config_dir_or_error()
    if config_dir is None:
        return
    game = st.session_state.get(GAME)
    if game is None and play_group.show_game(ctx, config_dir):
        return  # a group game in progress (`play_group`)
    if game is None and play_resource.show_game(ctx, config_dir):
        return  # a public goods game or a commons in progress (`play_resource`)
    if game is None:
        game = _restore(ctx, config_dir)
    if game is None:
        _setup(ctx, config_dir)
    else:
        if st.query_params.get(GAME_PARAM) != game["id"]:
            st.query_params[GAME_PARAM] = game["id"]
        _board(ctx, game, config_dir)


def _data_dir(ctx: AppContext) -> Path:
    """The app's data folder (the parent of its runs folder), where games are kept."""
    return ctx.runs_root.parent


def _keep(game: dict[str, Any]) -> None:
    """Write the game to disk under its id (see `_restore`)."""
    play_launcher.save_game(
        Path(game["data_dir"]),
        game["id"],
        game["request"],
        game["moves"],
        game["messages"],
        game["saved"],
    )


def _restore(ctx: AppContext, config_dir: Path) -> dict[str, Any] | None:
    """The game named by the URL's `game` parameter, replayed (after a browser Refresh); None
    when the URL names none, or one that is not kept (the parameter is then removed)."""
    game_id = st.query_params.get(GAME_PARAM)
    if not game_id:
        return None
    kept = play_launcher.load_game(_data_dir(ctx), str(game_id), config_dir)
    if kept is None:
        del st.query_params[GAME_PARAM]
        st.info("The game in this page's address is no longer kept: start a new one.", icon="🎮")
        return None
    config_path = play_launcher.prepare_play(kept.request, config_dir, Path())
    try:
        with st.spinner("Setting the table again…"):
            live = play_launcher.replay_play(config_path, kept.moves, kept.messages)
    except (PdbenchError, OSError, ValueError, RuntimeError) as exc:
        play_launcher.discard_live(config_path)
        _show_error(exc)
        return None
    saved = kept.saved if kept.saved and Path(kept.saved).is_dir() else None  # else: saved again
    if saved:
        play_launcher.discard_live(config_path)
    game = _new_game(str(game_id), kept.request, config_path, live, _data_dir(ctx))
    game.update(moves=kept.moves, messages=kept.messages, saved=saved)
    st.session_state[GAME] = game
    return game


def _new_game(
    game_id: str,
    request: play_launcher.PlayRequest,
    config_path: Path,
    live: Any,
    data_dir: Path,
) -> dict[str, Any]:
    """The session's record of a game (no move made yet)."""
    return {
        "id": game_id,
        "data_dir": str(data_dir),
        "request": request,
        "config": str(config_path),
        "moves": [],
        "messages": [],
        "live": live,
        "error": None,
        "saved": None,
    }


# --------------------------------------------------------------------------------------------
# Setup


def _setup(ctx: AppContext, config_dir: Path) -> None:
    """Pick the opponent and the game; Start writes the live config and opens the board. (Or,
    when the person chooses a group, the group game's form: `play_group.setup`.)"""
    mode = play_group.pick_mode()
    if mode == "group":
        play_group.setup(ctx, config_dir)
        return
    if mode in ("pgg", "commons"):
        play_resource.setup(ctx, config_dir, mode)
        return
    restore_widgets(STORE)
    options = {o.key: o for o in launcher.agent_options(config_dir)}
    if st.session_state.get("pl_opponent") not in options:
        st.session_state["pl_opponent"] = (
            DEFAULT_OPPONENT if DEFAULT_OPPONENT in options else next(iter(options))
        )
    st.markdown(
        "Play the iterated Prisoner's Dilemma yourself, as in "
        "[The Evolution of Trust](https://ncase.me/trust/): each round you and your opponent "
        "choose at the same time to **cooperate** 🤝 or **defect** 🗡️. Your game is saved as a "
        "run (agent type `human`) with the same artifacts and metrics as any other, so human "
        "baselines sit next to model results."
    )
    left, right = st.columns(2)
    with left:
        st.text_input("Your name (in the records)", key="pl_name", max_chars=40)
        choice = st.selectbox(
            "Opponent", list(options), key="pl_opponent", format_func=lambda k: options[k].label
        )
        opponent = options[choice]
        c1, c2 = st.columns(2)
        n_rounds = c1.slider("Rounds", 1, 50, 10, key="pl_rounds")
        seed = c2.number_input("Seed", 0, 2**31 - 1, 1337, key="pl_seed")
    with right:
        st.html(card_html(opponent.profile, "B"))
        talk, order, rule = play_talk.talk_options(opponent)
    save_widgets(STORE, FORM_KEYS)
    st.markdown("#### 💰 Payoffs")
    st.caption(
        "pdbench's default payoffs: both cooperate 3 each, both defect 1 each, whoever defects "
        "against a cooperator gets 5 and the cooperator 0 (The Evolution of Trust uses other "
        "numbers). Each cell: your payoff, the opponent's."
    )
    edited = st.data_editor(launcher.payoff_frame(), key="pl_payoffs", num_rows="fixed")
    try:
        matrix = launcher.parse_payoff_frame(edited)
    except launcher.PayoffInputError as exc:
        for problem in exc.problems:
            st.error(problem, icon="🚫")
        return
    if opponent.kind != "policy":
        st.info(
            "An LLM opponent answers through its configured provider (the offline mock needs no "
            "key); its replies are cached, so the saved run replays exactly what you saw.",
            icon="💬",
        )
    if not st.button("▶️ Start the game", type="primary", key="pl_start"):
        return
    request = play_launcher.PlayRequest(
        opponent=opponent,
        name=str(st.session_state.get("pl_name") or ""),
        n_rounds=int(n_rounds),
        seed=int(seed),
        matrix=matrix,
        talk=talk,
        order=order,
        rule=rule,
    )
    config_path = play_launcher.prepare_play(request, config_dir, Path())
    try:
        with st.spinner("Setting the table…"):
            live = play_launcher.replay_play(config_path, [])
    except (PdbenchError, OSError, ValueError) as exc:
        play_launcher.discard_live(config_path)
        _show_error(exc)
        return
    game = _new_game(play_launcher.new_game_id(), request, config_path, live, _data_dir(ctx))
    _keep(game)
    st.session_state[GAME] = game
    st.query_params[GAME_PARAM] = game["id"]
    st.rerun()


def _show_error(exc: Exception) -> None:
    lines = exc.lines() if isinstance(exc, PdbenchError) else [str(exc)]
    for line in lines:
        st.error(line.splitlines()[0] if line.strip() else "failed", icon="🚫")


# --------------------------------------------------------------------------------------------
# The game


def _move(action: str) -> None:
    """A move button's callback: replay the game with one more move."""
    game = st.session_state.get(GAME)
    if game is None or game["live"].finished:
        return
    if game["live"].awaiting_message:
        return  # the person writes before moving
    moves = [*game["moves"], action]
    try:
        live = play_launcher.replay_play(Path(game["config"]), moves, game["messages"])
    except (PdbenchError, OSError, ValueError, RuntimeError) as exc:
        game["error"] = data.first_line(exc)
        return
    game.update(moves=moves, live=live, error=None)
    _keep(game)


def _send() -> None:
    """The Send button's callback: replay the exchange with the person's typed message (an
    empty one: they say nothing this time)."""
    game = st.session_state.get(GAME)
    if game is None or not game["live"].awaiting_message:
        return
    text = str(st.session_state.get("pl_message") or "").strip()[: play_launcher.MAX_CHARS]
    messages = [*game["messages"], text]
    try:
        live = play_launcher.replay_play(Path(game["config"]), game["moves"], messages)
    except (PdbenchError, OSError, ValueError, RuntimeError) as exc:
        game["error"] = data.first_line(exc)
        return
    game.update(messages=messages, live=live, error=None)
    _keep(game)


def _quit() -> None:
    """Leave the game (a finished one stays saved) and go back to the setup form."""
    game = st.session_state.pop(GAME, None)
    if game is not None:
        play_launcher.discard_live(Path(game["config"]))
        play_launcher.forget_game(Path(game["data_dir"]), game["id"])
    if GAME_PARAM in st.query_params:
        del st.query_params[GAME_PARAM]


def _history(records: list[dict[str, Any]]) -> pd.DataFrame:
    """The rounds played as the trail wants them (a 1-based `round` column)."""
    frame = pd.DataFrame(records)
    frame["round"] = frame[ROUND_INDEX] + FIRST_ROUND
    return frame


def _board(ctx: AppContext, game: dict[str, Any], config_dir: Path) -> None:
    """Cards, scores, the last round, the move buttons, the trail and the agent's view."""
    request: play_launcher.PlayRequest = game["request"]
    live = game["live"]
    records: list[dict[str, Any]] = live.records
    n, played = live.n_rounds, len(records)
    you = human_profile(request.human_name)
    them = request.opponent.profile

    left, mid, right = st.columns([5, 1, 5], vertical_alignment="center")
    left.html(card_html(you, "A"))
    mid.html('<div class="pdb-vs">⚔️</div>')
    right.html(card_html(them, "B"))

    last = records[-1] if records else None
    score_you, status, score_them = st.columns([5, 2, 5], vertical_alignment="center")
    for col, side, label in ((score_you, "a", f"{you.emoji} You"), (score_them, "b", them.short)):
        total = float(last[side_field(side, "cum_payoff")]) if last else 0.0
        gained = float(last[side_field(side, "payoff")]) if last else 0.0
        col.metric(
            f"{label} · score",
            f"{total:g}",
            delta=f"{gained:+g} last round" if last else None,
            delta_color="normal" if gained > 0 else "off",
            border=True,
        )
    heading = "Game over" if live.finished else f"Round {played + 1} of {n}"
    moves = "".join(last[name] for name in side_fields("action")) if last else ""
    outcome = play_look.OUTCOMES.get(moves, "")
    status.html(f'<div class="pdb-round">{heading}</div>')  # the outcome: in the result panel
    st.html(play_look.CSS)
    if last:
        st.html(_result(last, played, outcome, them.short))
    if game["error"]:
        st.error(game["error"], icon="🚫")
    if live.finished:
        _finish(ctx, game, config_dir)
    else:
        if live.talks:
            play_talk.talk_box(live, played, them.short, request.order, _send)
        st.html(f'<div class="pdb-pick">Your move in round {played + 1}:</div>')
        c, d = st.columns(2)
        for col, action in ((c, "C"), (d, "D")):
            col.button(
                play_look.MOVE_LABEL[action],
                key=f"pl_move_{action}",
                on_click=_move,
                args=(action,),
                disabled=live.awaiting_message,
                width="stretch",
            )
    if records:
        history = _history(records)
        lo = max(0, played - TRAIL)
        labels = (f"{you.emoji} You", them.short)
        st.html(trail_html(history.iloc[lo:played], labels, played))
    if live.talks and any(r.get(MESSAGES) for r in records):
        with st.expander("💬 The conversation so far", expanded=False):
            for record in records:
                if record.get(MESSAGES):
                    st.caption(f"Before {round_text(record[ROUND_INDEX])}")
                    st.html(play_talk.chat_html(record[MESSAGES], them.short))

    _agent_view(request, live)
    st.button("🏳️ New game" if live.finished else "🏳️ Give up", key="pl_quit", on_click=_quit)


def _result(last: dict[str, Any], played: int, outcome: str, them: str) -> str:
    """The last round's result panel: both moves (the person's first) and their payoffs."""
    cards = [
        play_look.result_card(
            who,
            str(last[side_field(side, "action")]),
            str(last[side_field(side, "intended_action")]),
            float(last[side_field(side, "payoff")]),
            bool(last[side_field(side, "parse_failure")]),
            delay,
        )
        for side, who, delay in (("a", "You played", 0.0), ("b", f"{them} played", 0.25))
    ]
    return play_look.result_html(played, cards, outcome)


def _agent_view(request: play_launcher.PlayRequest, live: Any) -> None:
    """What the opponent sees: an LLM's prompts, or a policy's rule."""
    with st.expander("👁️ What the agent sees", expanded=not live.finished):
        if live.system_prompt is None:
            profile = request.opponent.profile
            st.markdown(
                f"**{profile.short}** ({profile.subtitle}) is a scripted policy: it sees every "
                f"move so far and follows its rule. {profile.description}"
            )
            return
        if live.awaiting_message:
            st.caption(
                f"Its prompt for round {len(live.records) + 1} shows once you have sent your "
                "message (it includes the messages)."
            )
        elif live.next_prompt is not None:
            st.caption(f"Its prompt for round {len(live.records) + 1}, as it will be asked:")
            st.code(live.next_prompt, language=None, wrap_lines=True)
        elif live.records:
            prompts = (live.records[-1].get("prompts") or {}).get("agent_b") or {}
            st.caption("Its prompt for the last round:")
            st.code(str(prompts.get("round") or ""), language=None, wrap_lines=True)
        st.caption("Its system prompt (the rules and its persona):")
        st.code(live.system_prompt, language=None, wrap_lines=True)


def _texts(rounds: list[Any]) -> list[list[tuple[str, str]]]:
    """Each round's messages as (writer, text), rounds without messages left out."""
    out = [[(str(e.get("from")), str(e.get("text"))) for e in r or []] for r in rounds]
    return [r for r in out if r]


def _finish(ctx: AppContext, game: dict[str, Any], config_dir: Path) -> None:
    """Save the finished game as a run (once), check it, and offer to open it."""
    request: play_launcher.PlayRequest = game["request"]
    records = game["live"].records
    if game["saved"] is None and not game.get("save_failed"):
        finished = run_prepared(
            lambda: play_launcher.prepare_play(
                request, config_dir, ctx.runs_root, game["moves"], game.get("messages", [])
            ),
            "experiment",
            "Saving your game",
        )
        if finished is None:
            game["save_failed"] = True
            return
        game["saved"] = str(finished.run_dir.resolve())
        name = request.condition_name
        saved = tables.game_rounds(data.load_game_rounds(finished.run_dir, name, 0), name, 0)
        game["same"] = all(
            saved[side_field(s, "action")].tolist() == [r[side_field(s, "action")] for r in records]
            for s in "ab"
        ) and _texts(saved[MESSAGES].tolist() if MESSAGES in saved else []) == _texts(
            [r.get(MESSAGES) for r in records]
        )
        play_launcher.discard_live(Path(game["config"]))
        _keep(game)
    if not game["saved"]:
        return
    mine = sum(r[side_field("a", "action")] == "C" for r in records)
    you, them = (
        records[-1][side_field("a", "cum_payoff")],
        records[-1][side_field("b", "cum_payoff")],
    )
    st.success(
        f"You scored **{you:g}**, {request.opponent.profile.short} **{them:g}**; you cooperated "
        f"in {mine} of {len(records)} rounds. Saved as run `{Path(game['saved']).name}` "
        f"(rounds.jsonl, aggregates.parquet, run_manifest.json) → {game['saved']}",
        icon="✅",
    )
    if not game.get("same", True):
        st.error(
            "The saved run's moves or messages differ from the game you played (an LLM reply "
            "was not served from the cache?).",
            icon="🚫",
        )
    try:
        st.html(_lesson_card(game, records))
    except (PdbenchError, OSError, ValueError, KeyError) as exc:
        st.warning(f"No lesson card: {data.first_line(exc)}", icon="⚠️")
    if st.button("📊 Open in View Results", type="primary", key="pl_open"):
        st.session_state[SEL_RUN] = game["saved"]
        st.session_state[SEL_CONDITION] = request.condition_name
        st.session_state[SEL_REPLICATE] = 0
        st.session_state[PENDING_TAB] = view_results.KEY
        st.rerun()


def _lesson_card(game: dict[str, Any], records: list[dict[str, Any]]) -> str:
    """The lesson card of a finished, saved game: the sentence (from the moves), the strategy
    the person played like (the saved run's strategy card, fitted once by `pdbench profile`)
    and both memory-one profiles (from the saved run's aggregates)."""
    request: play_launcher.PlayRequest = game["request"]
    run_dir, name = Path(game["saved"]), request.condition_name
    fits = data.load_strategy_fit(run_dir)
    if fits is None:
        play_launcher.profile_saved(run_dir)
        fits = data.load_strategy_fit(run_dir)
    like = None
    if fits is not None:
        mine = fits[(fits["condition"] == name) & (fits["agent"] == "a")]
        like = lesson.played_like(mine.astype(object).where(mine.notna(), None).to_dict("records"))
    aggregates, _ = data.load_aggregates(run_dir, data.load_manifest(run_dir))
    row = tables.replicate_row(aggregates, name, 0)
    profiles = [lesson.memory_one(row, side) for side in "ab"] if row is not None else []
    moves = ["".join(r[side_field(s, "action")] for r in records) for s in "ab"]
    return play_look.lesson_html(
        lesson.lesson(*moves),
        like,
        profiles,
        (human_profile(request.human_name).short, request.opponent.profile.short),
    )
