"""The 🎮 Play tab's group game: the person takes seat A of a group of 3 to 6 and plays round by
round, Cooperate or Defect, against co-players picked from the group policies and the mock LLM
personas, in a public goods game (multiplier r), the linear N-player Prisoner's Dilemma or the
volunteer's dilemma.

After each click the game so far is replayed by the group engine a run uses
(`play_group_launcher.replay_group_play`), so every co-player moves exactly as it will in the
saved run. Each round shows the seats around the group (every seat's move, its payoff that round
and its running total, `group_look.ring_html`), the group's running totals and every seat's moves
so far. When the last round is played the game is saved as a groups run (a new `ui_<timestamp>/`
under the runs folder, seat A a `type: human` agent holding the moves) and the tab offers to
open it in the 🫂 Groups tab. No talk in group games yet.

The game lives in session state under `pg_play`, so switching tabs keeps it; it is also kept on
disk under the id in the URL's `group` parameter, so a browser Refresh finds it and replays it.
The tab (`tabs/play.py`) asks `show_game` first and offers the group form through `pick_mode`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import streamlit as st

from pdbench.core.rounds_display import NUMBERING_NOTE
from pdbench.errors import PdbenchError
from pdbench.storage.record.group_fields import seat_name
from pdbench.ui import data, group_data, group_look, play_look
from pdbench.ui import play_group_launcher as launcher
from pdbench.ui.components import AppContext, restore_widgets, save_widgets
from pdbench.ui.play_launcher import new_game_id
from pdbench.ui.play_resource_launcher import KINDS as PLAY_RESOURCE_KINDS
from pdbench.ui.style import LEGEND, card_html, human_profile
from pdbench.ui.url_state import SEL_CONDITION, SEL_REPLICATE, SEL_RUN

GAME = "pg_play"  # the group game in progress: a plain session key (survives tab switches)
STORE = "pg_form"  # the setup form's saved values
MODE = "pl_mode"  # pair or group: the Play tab's first choice
MODE_STORE = "pl_mode_form"
MODES = {
    "pair": "⚔️ One opponent",
    "group": "🫂 A group (3 to 6 players)",
    **PLAY_RESOURCE_KINDS,  # a public goods game, a commons (`play_resource`)
}
SEATS = tuple(f"pg_seat_{i}" for i in range(1, launcher.MAX_PLAYERS))  # seats B, C, ...
FORM_KEYS = ("pg_name", "pg_players", "pg_kind", "pg_r", "pg_b", "pg_rounds", "pg_seed", *SEATS)
DEFAULT_SEATS = ("policy:CC", "policy:TFT", "policy:WSLS", "persona:cooperative", "policy:ALLD")
GAME_PARAM = "group"  # the URL's query parameter naming the group game in progress
CSS = play_look.CSS.replace("pl_move_", "pg_move_")  # the pairwise game's move buttons


def pick_mode() -> str:
    """The Play tab's first choice: one opponent ('pair'), a group ('group'), or a resource
    game ('pgg', 'commons')."""
    restore_widgets(MODE_STORE)
    if st.session_state.get(MODE) not in MODES:
        st.session_state[MODE] = "pair"
    mode = st.radio(
        "Play against", list(MODES), key=MODE, format_func=MODES.__getitem__, horizontal=True
    )
    save_widgets(MODE_STORE, (MODE,))
    return str(mode)


def show_game(ctx: AppContext, config_dir: Path) -> bool:
    """Draw the group game in progress (or the one the URL names, replayed after a Refresh);
    False when there is none."""
    game = st.session_state.get(GAME)
    if game is None:
        game = _restore(ctx, config_dir)
    if game is None:
        return False
    if st.query_params.get(GAME_PARAM) != game["id"]:
        st.query_params[GAME_PARAM] = game["id"]
    _board(ctx, game, config_dir)
    return True


def _data_dir(ctx: AppContext) -> Path:
    """The app's data folder (the parent of its runs folder), where games are kept."""
    return ctx.runs_root.parent


def _keep(game: dict[str, Any]) -> None:
    """Write the game to disk under its id (see `_restore`)."""
    launcher.save_group_game(
        Path(game["data_dir"]), game["id"], game["request"], game["moves"], game["saved"]
    )


def _restore(ctx: AppContext, config_dir: Path) -> dict[str, Any] | None:
    """The group game named by the URL's `group` parameter, replayed; None when the URL names
    none, or one that is not kept (the parameter is then removed)."""
    game_id = st.query_params.get(GAME_PARAM)
    if not game_id:
        return None
    kept = launcher.load_group_game(_data_dir(ctx), str(game_id), config_dir)
    if kept is None:
        del st.query_params[GAME_PARAM]
        st.info("The game in this page's address is no longer kept: start a new one.", icon="🎮")
        return None
    try:
        with st.spinner("Seating the group again…"):
            live = launcher.replay_group_play(kept.request, config_dir, kept.moves)
    except (PdbenchError, OSError, ValueError, RuntimeError) as exc:
        _show_error(exc)
        return None
    saved = kept.saved if kept.saved and Path(kept.saved).is_dir() else None  # else: saved again
    game = _new_game(str(game_id), kept.request, live, _data_dir(ctx))
    game.update(moves=kept.moves, saved=saved)
    st.session_state[GAME] = game
    return game


def _new_game(
    game_id: str, request: launcher.GroupPlayRequest, live: Any, data_dir: Path
) -> dict[str, Any]:
    """The session's record of a group game (no move made yet)."""
    return {
        "id": game_id,
        "data_dir": str(data_dir),
        "request": request,
        "moves": [],
        "live": live,
        "error": None,
        "saved": None,
    }


def _show_error(exc: Exception) -> None:
    lines = exc.lines() if isinstance(exc, PdbenchError) else [str(exc)]
    for line in lines:
        st.error(line.splitlines()[0] if line.strip() else "failed", icon="🚫")


# --------------------------------------------------------------------------------------------
# Setup


def setup(ctx: AppContext, config_dir: Path) -> None:
    """Pick the group and the game; Start replays the empty game and opens the board."""
    restore_widgets(STORE)
    options = {o.key: o for o in launcher.co_player_options(config_dir)}
    for key, default in zip(SEATS, DEFAULT_SEATS, strict=True):
        if st.session_state.get(key) not in options:
            st.session_state[key] = default if default in options else next(iter(options))
    st.markdown(
        "Take a seat in a group: each round everyone chooses at the same time to "
        "**cooperate** 🤝 or **defect** 🗡️, and each payoff depends on your move and on how "
        "many of the others cooperated. Your game is saved as a groups run (your seat an agent "
        "of type `human`), which the 🫂 Groups tab replays."
    )
    left, right = st.columns(2)
    with left:
        st.text_input("Your name (in the records)", key="pg_name", max_chars=40)
        n_players = int(
            st.slider("Players (you included)", launcher.MIN_PLAYERS, launcher.MAX_PLAYERS, 4,
                      key="pg_players")
        )  # fmt: skip
        kind = st.selectbox(
            "Game", list(launcher.GAMES), key="pg_kind", format_func=launcher.GAMES.__getitem__
        )
        r = b = 2.0
        if kind == "public_goods":
            r = float(st.number_input("Multiplier r", 0.1, 20.0, 2.0, 0.1, key="pg_r"))
        elif kind == "volunteer":
            b = float(st.number_input("Benefit b (a volunteer pays 1)", 0.1, 20.0, 2.0, 0.5,
                                      key="pg_b"))  # fmt: skip
        c1, c2 = st.columns(2)
        n_rounds = int(c1.slider("Rounds", 1, 30, 10, key="pg_rounds"))
        seed = int(c2.number_input("Seed", 0, 2**31 - 1, 1337, key="pg_seed"))
    with right:
        picks = []
        for i, key in enumerate(SEATS[: n_players - 1], start=1):
            picks.append(
                st.selectbox(
                    f"Seat {group_data.seat_letter(i)}",
                    list(options),
                    key=key,
                    format_func=lambda k: options[k].label,
                )
            )
    save_widgets(STORE, FORM_KEYS)
    request = launcher.GroupPlayRequest(
        co_players=tuple(options[k] for k in picks),
        name=str(st.session_state.get("pg_name") or ""),
        n_rounds=n_rounds,
        seed=seed,
        game=str(kind),
        r=r,
        b=b,
    )
    cards = st.columns(n_players)
    cards[0].html(card_html(human_profile(request.human_name), "A"))
    for i, player in enumerate(request.co_players, start=1):
        cards[i].html(card_html(player.profile, group_data.seat_letter(i)))
    try:
        stage = request.stage_game()
    except ValueError as exc:
        st.error(str(exc), icon="🚫")
        return
    _payoff_table(stage)
    if request.needs_refs:
        st.info(
            "A mock LLM co-player answers offline through the mock provider; its replies are "
            "cached, so the saved run replays exactly what you saw.",
            icon="💬",
        )
    if not st.button("▶️ Start the game", type="primary", key="pg_start"):
        return
    try:
        with st.spinner("Seating the group…"):
            live = launcher.replay_group_play(request, config_dir, [])
    except (PdbenchError, OSError, ValueError) as exc:
        _show_error(exc)
        return
    game = _new_game(new_game_id(), request, live, _data_dir(ctx))
    _keep(game)
    st.session_state[GAME] = game
    st.query_params[GAME_PARAM] = game["id"]
    st.rerun()


def _payoff_table(stage: Any) -> None:
    """The stage game's payoffs by how many of the others cooperate."""
    st.markdown(f"#### 💰 Payoffs · `{stage.describe()}`")
    st.dataframe(pd.DataFrame(launcher.payoff_rows(stage)), hide_index=True)
    verdict = (
        "defecting pays more than cooperating whatever the others do, yet everyone cooperating "
        "pays each more than everyone defecting: a social dilemma"
        if stage.defection_dominates() and stage.all_cooperate() > stage.all_defect()
        else "defecting does not always pay more than cooperating here"
    )
    st.caption(f"Each round, per player: {verdict}.")


# --------------------------------------------------------------------------------------------
# The game


def _move(action: str) -> None:
    """A move button's callback: replay the game with one more move."""
    game = st.session_state.get(GAME)
    if game is None or game["live"].finished:
        return
    moves = [*game["moves"], action]
    try:
        live = launcher.replay_group_play(game["request"], game["config_dir"], moves)
    except (PdbenchError, OSError, ValueError, RuntimeError) as exc:
        game["error"] = data.first_line(exc)
        return
    game.update(moves=moves, live=live, error=None)
    _keep(game)


def _form_of(request: launcher.GroupPlayRequest) -> dict[str, Any]:
    """The setup form's values that make `request` again."""
    seats = {key: p.key for key, p in zip(SEATS, request.co_players, strict=False)}
    return {
        "pg_name": request.name,
        "pg_players": request.n_players,
        "pg_kind": request.game,
        "pg_r": request.r,
        "pg_b": request.b,
        "pg_rounds": request.n_rounds,
        "pg_seed": request.seed,
        **seats,
    }


def _quit() -> None:
    """Leave the group game (a finished one stays saved) and go back to the group form, set
    as for the game left (also in a session opened by a Refresh)."""
    game = st.session_state.pop(GAME, None)
    if game is not None:
        launcher.forget_group_game(Path(game["data_dir"]), game["id"])
        form = {**(st.session_state.get(STORE) or {}), **_form_of(game["request"])}
        st.session_state[STORE] = form
        st.session_state.update(form)
    st.session_state[MODE_STORE] = {MODE: "group"}
    st.session_state[MODE] = "group"
    if GAME_PARAM in st.query_params:
        del st.query_params[GAME_PARAM]


def played_rounds(live: Any, condition: str) -> group_data.GroupGameRounds | None:
    """The rounds played so far as the Groups tab reads a game (None before the first)."""
    if not live.records:
        return None
    lines = [orjson.dumps(record) for record in live.records]
    return group_data.game_from_lines(lines, condition, 0)


def _emojis(request: launcher.GroupPlayRequest) -> list[str]:
    return [human_profile(request.human_name).emoji, *(p.profile.emoji for p in request.co_players)]


def _board(ctx: AppContext, game: dict[str, Any], config_dir: Path) -> None:
    """The round, the seats around the group, the move buttons, the running totals, every
    seat's moves so far and what the co-players see."""
    game["config_dir"] = config_dir
    request: launcher.GroupPlayRequest = game["request"]
    live = game["live"]
    n, played = live.n_rounds, len(live.records)
    st.html(group_look.GROUP_CSS)
    st.html(CSS)
    heading = "Game over" if live.finished else f"Round {played + 1} of {n}"
    st.html(f'<div class="pdb-round">{heading}</div>')
    st.caption(f"{live.game_label} · you are seat A · {n} rounds · everyone moves at the same time")
    rounds = played_rounds(live, request.condition_name)
    left, right = st.columns([3, 2], gap="medium")
    with left:
        if rounds is not None:
            st.markdown(f"**What everyone did in round {played}**")
            st.html(group_look.ring_html(rounds, played - 1, _emojis(request), total_rounds=n))
        else:
            st.markdown("**The group is seated.** Make your first move.")
            for seat, (name, emoji) in enumerate(zip(live.names, _emojis(request), strict=True)):
                st.markdown(f"{emoji} **{group_data.seat_label(seat, name)}**")
    with right:
        if game["error"]:
            st.error(game["error"], icon="🚫")
        if live.finished:
            _finish(ctx, game, rounds)
        else:
            st.html(f'<div class="pdb-pick">Your move in round {played + 1}:</div>')
            c, d = st.columns(2)
            for col, action in ((c, "C"), (d, "D")):
                col.button(
                    play_look.MOVE_LABEL[action],
                    key=f"pg_move_{action}",
                    on_click=_move,
                    args=(action,),
                    width="stretch",
                )
        if rounds is not None:
            _totals(rounds)
    if rounds is not None:
        st.markdown("**🧭 Every seat's moves**")
        st.html(group_look.timeline_html(rounds, played - 1))
        st.html(LEGEND)
        st.caption(f"{NUMBERING_NOTE} The ringed cell is the last round played.")
    _co_players_view(request, live)
    st.button("🏳️ New game" if live.finished else "🏳️ Give up", key="pg_quit", on_click=_quit)


def _totals(rounds: group_data.GroupGameRounds) -> None:
    """The group's running totals: each seat's cooperation so far and total payoff."""
    t = rounds.n_rounds
    table = pd.DataFrame(
        {
            "seat": [group_data.seat_label(s, name) for s, name in enumerate(rounds.names)],
            "cooperated": [f"{int((rounds.moves[s] == 'C').sum())} of {t}"
                           for s in range(rounds.n_seats)],
            "last round": [group_look.number(rounds.payoffs[s, -1]) for s in range(rounds.n_seats)],
            "total": [group_look.number(rounds.totals[s, -1]) for s in range(rounds.n_seats)],
        }
    )  # fmt: skip
    st.markdown("**🧮 Running totals**")
    st.dataframe(table, hide_index=True)
    group_total = float(rounds.totals[:, -1].sum())
    st.caption(
        f"The group has earned {group_look.number(group_total)} in {t} round"
        f"{'s' * (t != 1)}; {int(rounds.cooperators[-1])} of {rounds.n_seats} cooperated in "
        "the last one."
    )


def _co_players_view(request: launcher.GroupPlayRequest, live: Any) -> None:
    """What the co-players see: a policy's rule, an LLM's prompt of the last round."""
    with st.expander("👁️ What the co-players see", expanded=False):
        last = live.records[-1] if live.records else {}
        for seat, player in enumerate(request.co_players, start=1):
            label = group_data.seat_label(seat, live.names[seat])
            if player.kind == "policy":
                st.markdown(
                    f"**{label}** is a group policy: it sees every seat's moves so far and "
                    f"follows its rule. {player.profile.description}"
                )
                continue
            prompt = ((last.get("prompts") or {}).get(seat_name(seat)) or {}).get("round")
            st.markdown(f"**{label}** is a mock LLM agent ({player.value}).")
            if prompt:
                st.caption("Its prompt for the last round:")
                st.code(str(prompt), language=None, wrap_lines=True)
            else:
                st.caption("Its prompt shows once a round has been played.")


def _finish(ctx: AppContext, game: dict[str, Any], rounds: Any) -> None:
    """Save the finished game as a groups run (once), check it, and offer to open it."""
    request: launcher.GroupPlayRequest = game["request"]
    if game["saved"] is None and not game.get("save_failed"):
        try:
            with st.spinner("Saving your game…"):
                finished = launcher.save_group_play(
                    request, Path(game["config_dir"]), ctx.runs_root, game["moves"]
                )
        except (PdbenchError, OSError, ValueError, RuntimeError) as exc:
            game["save_failed"] = True
            _show_error(exc)
            return
        game["saved"] = str(finished.run_dir.resolve())
        try:
            saved = group_data.load_game(
                finished.run_dir, finished.manifest, request.condition_name, 0
            )
            game["same"] = rounds is not None and bool((saved.moves == rounds.moves).all())
        except data.RunLoadError:
            game["same"] = False
        _keep(game)
    if not game["saved"]:
        return
    if rounds is not None:
        mine = int((rounds.moves[0] == "C").sum())
        best = max(float(v) for v in rounds.totals[:, -1])
        you = float(rounds.totals[0, -1])
        st.success(
            f"You scored **{group_look.number(you)}** (the best seat scored "
            f"{group_look.number(best)}); you cooperated in {mine} of {rounds.n_rounds} rounds. "
            f"Saved as groups run `{Path(game['saved']).name}` → {game['saved']}",
            icon="✅",
        )
    if not game.get("same", True):
        st.error(
            "The saved run's moves differ from the game you played (an LLM reply was not "
            "served from the cache?).",
            icon="🚫",
        )
    if st.button("🫂 Open in the Groups tab", type="primary", key="pg_open"):
        from pdbench.ui.tabs import groups
        from pdbench.ui.tabs.run_experiment import PENDING_TAB

        st.session_state[SEL_RUN] = game["saved"]
        st.session_state[SEL_CONDITION] = request.condition_name
        st.session_state[SEL_REPLICATE] = 0
        st.session_state[PENDING_TAB] = groups.KEY
        st.rerun()
