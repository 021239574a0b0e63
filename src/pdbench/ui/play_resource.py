"""The 🎮 Play tab's resource games (issue 31): the person takes seat A of a public goods game
(PGG-Bench's rules: contributions from a balance, the pot multiplied by 1.6 and shared, an
optional punishment stage) or of a commons (GovSim's fishery: five fishermen, a 100-ton lake
that doubles what is left, collapse below 5 tons), against co-players picked from the game's
policies and the mock LLM personas.

Each round the person sees their balance and how much they may contribute and every seat's
past contributions and punishments, and types a contribution; with punishment on they then see
the round's contributions and may spend punishment tokens. In the commons they see the stock,
the sustainable share ((stock // 2) // 5, GovSim's) and the lake over the seasons with the
collapse line, and type a harvest. After each answer the game so far is replayed by the engine
a run uses (`play_resource_launcher.replay_resource_play`), so the co-players answer exactly as
they will in the saved run. At the end (the last round, or the season the lake collapses in)
the game is saved as a pgg or commons run, a short lesson is read from its seats table, and
the tab offers to open it in the 🫂 Groups tab.

The game lives in session state under `pr_play` (no talk, and not kept across a browser
Refresh). The tab (`tabs/play.py`) asks `show_game` first and offers the form through
`play_group.pick_mode`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from pdbench.core.commons import sustainable_catch
from pdbench.core.pgg import PGGRules
from pdbench.errors import PdbenchError
from pdbench.storage.record.fields import TIMESTAMP
from pdbench.ui import (
    data,
    group_data,
    group_look,
    resource_charts,
    resource_data,
    resource_replay,
)
from pdbench.ui import play_resource_launcher as launcher
from pdbench.ui.components import AppContext, restore_widgets, save_widgets
from pdbench.ui.style import card_html, human_profile
from pdbench.ui.url_state import SEL_CONDITION, SEL_REPLICATE, SEL_RUN

GAME = "pr_play"  # the game in progress: a plain session key (survives tab switches)
STORE = "pr_form"
COMMONS_PLAYERS = 5  # GovSim's fishery has five fishermen (its prompts say so)
DEFAULT_SEATS = {
    "pgg": ("policy:FREE_RIDER", "policy:CONDITIONAL_COOPERATOR", "policy:PUNISHER",
            "persona:cooperative", "policy:FULL_COOPERATOR"),
    "commons": ("policy:SUSTAINABLE", "policy:MODERATE", "policy:GREEDY", "persona:cooperative",
                "policy:SUSTAINABLE"),
}  # fmt: skip
AMOUNT = "pr_amount"  # the contribution / harvest input
TOKENS = "pr_tokens_"  # + seat: punishment tokens inputs


def _seat_keys(kind: str) -> tuple[str, ...]:
    return tuple(f"pr_{kind}_seat_{i}" for i in range(1, launcher.MAX_PLAYERS))


def _form_keys(kind: str) -> tuple[str, ...]:
    return (f"pr_{kind}_name", f"pr_{kind}_players", f"pr_{kind}_rounds", f"pr_{kind}_seed",
            "pr_pgg_punish", *_seat_keys(kind))  # fmt: skip


def show_game(ctx: AppContext, config_dir: Path) -> bool:
    """Draw the resource game in progress; False when there is none."""
    game = st.session_state.get(GAME)
    if game is None:
        return False
    _board(ctx, game, config_dir)
    return True


def _show_error(exc: Exception) -> None:
    lines = exc.lines() if isinstance(exc, PdbenchError) else [str(exc)]
    for line in lines:
        st.error(line.splitlines()[0] if line.strip() else "failed", icon="🚫")


# --------------------------------------------------------------------------------------------
# Setup


def setup(ctx: AppContext, config_dir: Path, kind: str) -> None:
    """Pick the co-players and the game's length; Start seats the group and opens the board."""
    del ctx
    restore_widgets(STORE)
    options = {o.key: o for o in launcher.co_player_options(kind, config_dir)}
    seats = _seat_keys(kind)
    for key, default in zip(seats, DEFAULT_SEATS[kind], strict=True):
        if st.session_state.get(key) not in options:
            st.session_state[key] = default if default in options else next(iter(options))
    if kind == "pgg":
        st.markdown(
            "Take a seat in PGG-Bench's **public goods game**: everyone starts with 20 tokens; "
            "each round you put some of your balance into a pot, the pot is multiplied by 1.6 "
            "and shared equally by everyone, whatever they put in. With punishment on, once "
            "the contributions are shown you may pay 1 token to take 3 from another seat."
        )
    else:
        st.markdown(
            "Fish in GovSim's **commons**: five fishermen share a lake of 100 tons. Each season "
            "everyone asks for a catch; what is left doubles (up to 100). If fewer than 5 tons "
            "are left after a harvest, the lake **collapses** and the game ends. Taking no more "
            "than the sustainable share, (stock ÷ 2) ÷ 5, keeps it full."
        )
    st.caption(
        "Your game is saved as a run (your seat an agent of type `human` holding your answers), "
        "which the 🫂 Groups tab shows. No talk in these games here."
    )
    left, right = st.columns(2)
    with left:
        st.text_input("Your name (in the records)", key=f"pr_{kind}_name", max_chars=40)
        if kind == "pgg":
            n_players = int(
                st.slider("Players (you included)", launcher.MIN_PLAYERS, launcher.MAX_PLAYERS,
                          4, key="pr_pgg_players")
            )  # fmt: skip
            punishment = bool(st.checkbox("Punishment stage", True, key="pr_pgg_punish"))
        else:
            n_players, punishment = COMMONS_PLAYERS, False
            st.caption("Five fishermen, you included (GovSim's prompts describe five).")
        c1, c2 = st.columns(2)
        word = "Rounds" if kind == "pgg" else "Seasons"
        n_rounds = int(c1.slider(word, 1, 12, 6, key=f"pr_{kind}_rounds"))
        seed = int(c2.number_input("Seed", 0, 2**31 - 1, 1337, key=f"pr_{kind}_seed"))
    with right:
        picks = [
            st.selectbox(
                f"Seat {group_data.seat_letter(i)}",
                list(options),
                key=key,
                format_func=lambda k: options[k].label,
            )
            for i, key in enumerate(seats[: n_players - 1], start=1)
        ]
    save_widgets(STORE, _form_keys(kind))
    request = launcher.ResourcePlayRequest(
        game=kind,
        co_players=tuple(options[k] for k in picks),
        name=str(st.session_state.get(f"pr_{kind}_name") or ""),
        n_rounds=n_rounds,
        seed=seed,
        punishment=punishment,
    )
    cards = st.columns(n_players)
    cards[0].html(card_html(human_profile(request.human_name), "A"))
    for i, player in enumerate(request.co_players, start=1):
        cards[i].html(card_html(player.profile, group_data.seat_letter(i)))
    if not st.button("▶️ Start the game", type="primary", key="pr_start"):
        return
    try:
        with st.spinner("Seating the group…"):
            live = launcher.replay_resource_play(request, config_dir, [])
    except (PdbenchError, OSError, ValueError) as exc:
        _show_error(exc)
        return
    st.session_state[GAME] = {
        "request": request,
        "amounts": [],
        "punishments": [],
        "pending": False,  # a contribution given, its punishment stage not yet
        "live": live,
        "error": None,
        "saved": None,
    }
    st.rerun()


# --------------------------------------------------------------------------------------------
# Answers


def _replay(game: dict[str, Any], amounts: list[int], punishments: list[Any]) -> bool:
    try:
        live = launcher.replay_resource_play(
            game["request"], game["config_dir"], amounts, punishments
        )
    except (PdbenchError, OSError, ValueError, RuntimeError) as exc:
        game["error"] = data.first_line(exc)
        return False
    game.update(amounts=amounts, punishments=punishments, live=live, error=None)
    return True


def _answer() -> None:
    """The contribution / harvest button's callback: replay with one more answer."""
    game = st.session_state.get(GAME)
    if game is None or game["live"].finished or game["pending"]:
        return
    amount = int(st.session_state.get(AMOUNT) or 0)
    request: launcher.ResourcePlayRequest = game["request"]
    if _replay(game, [*game["amounts"], amount], list(game["punishments"])):
        game["pending"] = request.game == "pgg" and request.punishment
        st.session_state.pop(AMOUNT, None)  # next round's box starts at its default again


def _punish() -> None:
    """The punishment button's callback: this round's tokens, then the round is whole."""
    game = st.session_state.get(GAME)
    if game is None or not game["pending"]:
        return
    n = game["request"].n_players
    tokens = [[j, int(st.session_state.get(f"{TOKENS}{j}") or 0)] for j in range(1, n)]
    tokens = [pair for pair in tokens if pair[1] > 0]
    punishments = [*game["punishments"]]
    punishments += [[] for _ in range(len(game["amounts"]) - 1 - len(punishments))]
    if _replay(game, list(game["amounts"]), [*punishments, tokens]):
        game["pending"] = False
        for j in range(1, n):
            st.session_state.pop(f"{TOKENS}{j}", None)


def _quit() -> None:
    """Leave the game (a finished one stays saved) and go back to its form."""
    from pdbench.ui.play_group import MODE, MODE_STORE

    game = st.session_state.pop(GAME, None)
    kind = game["request"].game if game is not None else "pgg"
    st.session_state[MODE_STORE] = {MODE: kind}
    st.session_state[MODE] = kind


# --------------------------------------------------------------------------------------------
# The board


def _game_rounds(game: dict[str, Any], upto: int | None = None) -> resource_data.ResourceGame:
    live = game["live"]
    records = tuple(live.records if upto is None else live.records[:upto])
    condition = game["request"].condition_name
    return resource_data.ResourceGame(condition, 0, live.kind, live.names, records)


def _board(ctx: AppContext, game: dict[str, Any], config_dir: Path) -> None:
    """The round, what the person may answer, every seat's answers so far."""
    game["config_dir"] = config_dir
    request: launcher.ResourcePlayRequest = game["request"]
    live = game["live"]
    played = len(live.records)
    word = "Round" if live.kind == "pgg" else "Season"
    if live.finished and not game["pending"]:
        heading = "Game over"
    elif game["pending"]:
        heading = f"{word} {played} of {live.n_rounds} · punishment"
    else:
        heading = f"{word} {played + 1} of {live.n_rounds}"
    st.html(group_look.GROUP_CSS)
    st.html(f'<div class="pdb-round">{heading}</div>')
    names = ", ".join(group_data.seat_label(i, n) for i, n in enumerate(live.names))
    st.caption(f"{launcher.KINDS[live.kind]} · you are seat A · seats: {names}")
    if game["error"]:
        st.error(game["error"], icon="🚫")
    if live.kind == "pgg":
        _pgg_board(game)
    else:
        _commons_board(game)
    if live.finished and not game["pending"]:
        _finish(ctx, game)
    st.button(
        "🏳️ New game" if live.finished and not game["pending"] else "🏳️ Give up",
        key="pr_quit",
        on_click=_quit,
    )
    del request


def _pgg_board(game: dict[str, Any]) -> None:
    live = game["live"]
    rules = PGGRules(**live.rules)
    pending = game["pending"]
    complete = len(live.records) - int(pending)  # rounds whose punishment stage is done
    last = live.records[-1] if live.records else None
    if pending:
        _punish_stage(game, rules, last)
    elif not live.finished:
        balance = float(last["balances"][0]) if last else float(rules.initial_balances()[0])
        limit = rules.contribution_limit(balance)
        st.markdown(
            f"**Your balance: {balance:g} tokens.** You may contribute 0 to **{limit}**; the "
            f"pot is multiplied by {rules.multiplier:g} and shared by all {rules.n_players}."
        )
        st.number_input("Your contribution", 0, limit, min(limit, rules.endowment // 2),
                        key=AMOUNT)  # fmt: skip
        st.button("💰 Contribute", type="primary", key="pr_contribute", on_click=_answer)
    if complete:
        shown = _game_rounds(game, complete)
        table = resource_data.pgg_seat_rounds(shown)
        st.html(resource_replay.MSG_CSS)
        st.html(resource_replay.seat_legend_html(shown.labels))
        st.markdown("**Everyone's contributions so far** (tokens)")
        wide = table.pivot(index="seat", columns="round", values="contribution")
        wide.columns = [f"round {c}" for c in wide.columns]
        st.dataframe(wide.reindex(shown.labels), width="stretch")
        st.altair_chart(
            resource_charts.seat_bars(table, "contribution", "contribution (tokens)",
                                      shown.labels, complete, n=live.n_rounds),
            width="stretch",
        )  # fmt: skip
        balances = table[table["round"] == complete][["seat", "balance", "punish_received"]]
        balances = balances.rename(columns={"punish_received": "punishment received"})
        st.markdown(f"**Balances after round {complete}**")
        st.dataframe(balances, hide_index=True)
        if rules.punishment:
            acts = resource_data.pgg_punishments(shown)
            st.markdown("**Punishments so far**")
            if acts.empty:
                st.caption("No one has punished anyone yet.")
            else:
                st.dataframe(acts, hide_index=True)


def _punish_stage(game: dict[str, Any], rules: PGGRules, last: dict[str, Any]) -> None:
    """This round's contributions and the punishment tokens to spend (the co-players decide at
    the same time; theirs show once yours are given)."""
    live = game["live"]
    labels = [group_data.seat_label(i, n) for i, n in enumerate(live.names)]
    held = float(last["post_fund"][0])
    st.markdown(
        f"**This round's contributions** (the pot was {float(last['pot']):g}, each share "
        f"{float(last['share']):g}). You now hold {held:g} tokens."
    )
    st.dataframe(
        pd.DataFrame({"seat": labels, "contributed": last["contributions"],
                      "could": last["limits"]}),
        hide_index=True,
    )  # fmt: skip
    targets = (
        f" on at most {rules.punish_max_targets} seat{'s' * (rules.punish_max_targets != 1)}"
        if rules.punish_max_targets
        else ""
    )
    st.markdown(
        f"**Punish?** Each token costs you {rules.punish_cost:g} and takes "
        f"{rules.punish_effect:g} from its target; at most {rules.punish_max_tokens} tokens"
        f"{targets} (more is cut, in seat order)."
    )
    cols = st.columns(len(labels) - 1)
    for j in range(1, len(labels)):
        cols[j - 1].number_input(labels[j], 0, rules.punish_max_tokens, 0, key=f"{TOKENS}{j}")
    st.button("⚖️ Done", type="primary", key="pr_punish", on_click=_punish)


def _commons_board(game: dict[str, Any]) -> None:
    live = game["live"]
    rules = live.rules
    last = live.records[-1] if live.records else None
    n = len(live.names)
    capacity = float(rules["capacity"])
    threshold = float(rules["collapse_below"])
    if not live.finished:
        stock = int(last["next_stock"]) if last else int(rules.get("initial_stock") or capacity)
        share = sustainable_catch(stock, n)
        st.markdown(
            f"**🐟 {stock} tons in the lake.** The sustainable share is **{share}** tons each "
            f"((stock ÷ 2) ÷ {n}); the lake collapses if fewer than {threshold:g} tons are left "
            "after the harvest."
        )
        st.number_input("Your catch (tons)", 0, min(int(rules["max_catch"]), stock),
                        min(share, stock), key=AMOUNT)  # fmt: skip
        st.button("🎣 Fish", type="primary", key="pr_fish", on_click=_answer)
    if not live.records:
        return
    shown = _game_rounds(game)
    season = shown.collapse_season
    if season is not None:
        st.markdown(
            f'<div class="pdb-rcollapse" data-season="{season}" style="color:#b42318;'
            f'font-weight:700;font-size:1.1rem">💥 The lake collapsed in season {season} of '
            f"{live.n_rounds}: fewer than {threshold:g} tons were left after the harvest.</div>",
            unsafe_allow_html=True,
        )
    st.altair_chart(
        resource_charts.game_stock_chart(
            resource_data.commons_seasons(shown), threshold, capacity, live.n_rounds,
            current=len(live.records), collapse_season=season,
        ),
        width="stretch",
    )  # fmt: skip
    catches = resource_data.commons_catches(shown)
    wide = catches.pivot(index="seat", columns="season", values="caught")
    wide.columns = [f"season {c}" for c in wide.columns]
    st.markdown("**Each seat's catch** (tons)")
    st.dataframe(wide.reindex(shown.labels), width="stretch")


# --------------------------------------------------------------------------------------------
# The end


def _finish(ctx: AppContext, game: dict[str, Any]) -> None:
    """Save the finished game as a run (once), show the lesson, and offer to open it."""
    request: launcher.ResourcePlayRequest = game["request"]
    if game["saved"] is None and not game.get("save_failed"):
        try:
            with st.spinner("Saving your game…"):
                finished = launcher.save_resource_play(
                    request, Path(game["config_dir"]), ctx.runs_root, game["amounts"],
                    game["punishments"],
                )  # fmt: skip
        except (PdbenchError, OSError, ValueError, RuntimeError) as exc:
            game["save_failed"] = True
            _show_error(exc)
            return
        game["saved"] = str(finished.run_dir.resolve())
        try:
            saved = resource_data.load_game(finished.run_dir, request.game,
                                            request.condition_name, 0)  # fmt: skip
            game["same"] = _untimed(saved.records) == _untimed(game["live"].records)
        except data.RunLoadError:
            game["same"] = False
    if not game["saved"]:
        return
    st.success(
        f"{lesson(game)} Saved as {request.game} run `{Path(game['saved']).name}` → "
        f"{game['saved']}",
        icon="✅",
    )
    if not game.get("same", True):
        st.error(
            "The saved run's rounds differ from the game you played (an LLM reply was not "
            "served from the cache?).",
            icon="🚫",
        )
    if st.button("🫂 Open in the Groups tab", type="primary", key="pr_open"):
        from pdbench.ui.tabs import groups
        from pdbench.ui.tabs.run_experiment import PENDING_TAB

        st.session_state[SEL_RUN] = game["saved"]
        st.session_state[SEL_CONDITION] = request.condition_name
        st.session_state[SEL_REPLICATE] = 0
        st.session_state[PENDING_TAB] = groups.KEY
        st.rerun()


def _untimed(records: Any) -> list[dict[str, Any]]:
    """Records without their timestamps and calls (what a replay may differ in)."""
    out = []
    for record in records:
        kept = {k: v for k, v in record.items() if k not in (TIMESTAMP, "run_id")}
        kept["decisions"] = [
            {k: v for k, v in d.items() if k != "calls"} for d in record.get("decisions") or []
        ]
        out.append(kept)
    return out


def lesson(game: dict[str, Any]) -> str:
    """One or two sentences read from the saved run's seats table (and the commons' record of
    the collapse): the person's numbers beside the group's."""
    live = game["live"]
    try:
        seats = resource_data.load_table(game["saved"], "resource_seats.parquet")
    except data.RunLoadError:
        seats = None
    if seats is None or seats.empty:
        return "Your game is over."
    rows = seats.sort_values("seat").to_dict("records")
    you, others = rows[0], rows[1:]
    if live.kind == "pgg":
        low = min(others, key=lambda r: (r["contribution_rate"], r["seat"]))
        who = group_data.seat_label(int(low["seat"]), str(low["name"]))
        text = (
            f"You contributed {you['contribution_rate']:.0%} of what you could and ended with "
            f"{you['final_balance']:g} tokens; the group's lowest contributor, {who}, "
            f"contributed {low['contribution_rate']:.0%} and ended with "
            f"{low['final_balance']:g}."
        )
        if float(you["punish_spent"]) or float(you["punish_received"]):
            text += (
                f" You spent {you['punish_spent']:g} on punishment and lost "
                f"{you['punish_received']:g} to it."
            )
        return text
    shown = _game_rounds(game)
    season = shown.collapse_season
    fate = (
        f"The lake collapsed in season {season} of {live.n_rounds}."
        if season is not None
        else f"The lake lasted all {live.n_rounds} seasons."
    )
    best = max(others, key=lambda r: (r["total_caught"], -r["seat"]))
    who = group_data.seat_label(int(best["seat"]), str(best["name"]))
    return (
        f"{fate} You caught {you['total_caught']:g} tons and asked for more than the "
        f"sustainable share in {you['overuse_rate']:.0%} of your seasons; {who} caught "
        f"{best['total_caught']:g}."
    )
