"""A readable plan of any config: what `validate` and `--dry-run` print (games, rounds, the LLM
calls and tokens a run would need), and the text tables the commands print afterwards."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pdbench.core.rounds_display import shown_value

if TYPE_CHECKING:  # the tables below serve `aggregate` too, which loads no config or agent
    from pdbench.runners.config.loader import LoadedConfig
    from pdbench.runners.engine.engine import GamePlan


def expected_llm_calls(plans: list[GamePlan]) -> tuple[int, int]:
    """(minimum, maximum) provider calls: one per LLM agent per round, up to 1 + max_retries each."""
    from pdbench.core.config import LLMAgentConfig

    low = high = 0
    for plan in plans:
        for spec in plan.agents:
            if isinstance(spec.config, LLMAgentConfig):
                low += calls_per_game(plan)
                high += calls_per_game(plan) * (1 + spec.config.max_retries)
    return low, high


def calls_per_game(plan: GamePlan) -> int:
    """Provider calls an LLM agent makes in the game without retries (`calls_in_game`; a
    resource game's seat: its decisions, messages and reflections a round)."""
    from pdbench.runners.plan_tokens import calls_in_game

    per_round = getattr(plan, "calls_per_round", None)
    if per_round is not None:
        return per_round * plan.n_rounds

    return calls_in_game(plan.n_rounds, plan.communication)


def estimate_tokens(loaded: LoadedConfig, plans: list[GamePlan]) -> tuple[int, int]:
    """(input tokens, output tokens) a run would use, ~4 characters a token, before parse
    retries.

    Input counts the system prompt and the prompt of every call, growing with the history and
    the messages it shows (`pdbench.runners.plan_tokens`); output counts max_tokens per call
    (an upper bound).
    """
    per_model = estimate_per_model(loaded, plans)
    return (
        sum(m["tokens_in"] for m in per_model.values()),
        sum(m["tokens_out"] for m in per_model.values()),
    )


def estimate_per_model(loaded: LoadedConfig, plans: list[GamePlan]) -> dict[str, dict[str, Any]]:
    """Per "provider:model": games, calls (a move per round and a message per turn of each
    exchange; up to 1 + max_retries), tokens (as `estimate_tokens`) and the estimated cost in
    USD from its price (None when unknown)."""
    from pdbench.agents.providers.pricing import price_per_token
    from pdbench.core.config import LLMAgentConfig
    from pdbench.runners.plan_tokens import CHARS_PER_TOKEN, game_prompt_chars

    matrix = loaded.matrix()
    out: dict[str, dict[str, Any]] = {}
    known: dict[tuple[object, ...], int] = {}  # games alike cost alike: specs are shared
    for plan in plans:
        for seat, spec in enumerate(plan.agents):
            agent = spec.config
            if not isinstance(agent, LLMAgentConfig) or spec.templates is None:
                continue
            channel = plan.communication if plan.talks else None
            key = (id(plan.agents[0]), id(plan.agents[1]), seat, plan.n_rounds, id(channel))
            if key not in known:
                chars = game_prompt_chars(plan.agents, seat, matrix, plan.n_rounds, channel)
                known[key] = chars // CHARS_PER_TOKEN
            entry = out.setdefault(
                f"{agent.provider}:{agent.model}",
                {
                    "games": 0,
                    "calls": 0,
                    "calls_max": 0,
                    "tokens_in": 0,
                    "tokens_out": 0,
                    "cost_usd": 0.0,
                },
            )
            calls = calls_per_game(plan)
            tokens_in = known[key]
            tokens_out = agent.max_tokens * calls
            entry["games"] += 1
            entry["calls"] += calls
            entry["calls_max"] += calls * (1 + agent.max_retries)
            entry["tokens_in"] += tokens_in
            entry["tokens_out"] += tokens_out
            price = price_per_token(agent)
            if price is None or entry["cost_usd"] is None:
                entry["cost_usd"] = None
            else:
                entry["cost_usd"] += tokens_in * price[0] + tokens_out * price[1]
    return out


def describe_plan(loaded: LoadedConfig) -> str:
    """The config's plan: what it plays, games, rounds, expected LLM calls and tokens."""
    from pdbench.runners.start import plans_for

    cfg = loaded.config
    plans = plans_for(loaded)
    lines = [f"run_id: {cfg.run.run_id}   seed: {cfg.run.seed}   output_dir: {cfg.run.output_dir}"]
    lines.extend(_describe_kind(loaded, plans))
    rounds = sum(p.n_rounds for p in plans)
    lines.append(f"games: {len(plans)}   rounds: {rounds}")
    low, high = expected_llm_calls(plans)
    lines.append(f"expected LLM calls: {low} (up to {high} with parse retries)")
    if low and loaded.kind in (*GROUP_KINDS, "pgg", "commons"):
        lines.append("estimated tokens: not estimated for groups (their prompts grow with N)")
    elif low:
        per_model = estimate_per_model(loaded, plans)
        tokens_in = sum(m["tokens_in"] for m in per_model.values())
        tokens_out = sum(m["tokens_out"] for m in per_model.values())
        lines.append(
            f"estimated tokens: ~{tokens_in} input, at most {tokens_out} output "
            "(before parse retries)"
        )
        for model, m in per_model.items():
            cost = "cost unknown" if m["cost_usd"] is None else f"~${m['cost_usd']:.4f}"
            lines.append(
                f"  {model}: {m['games']} agent-games, {m['calls']} calls (up to "
                f"{m['calls_max']}), ~{m['tokens_in']} input / {m['tokens_out']} output "
                f"tokens, {cost}"
            )
    return "\n".join(lines)


# Kinds whose games are groups of N seats (their LLM prompts grow with N: tokens not estimated).
GROUP_KINDS = ("groups", "group_tournament", "group_evolution")


def _horizon_text(horizon: Any) -> str:
    if horizon.type == "fixed":
        return f"fixed {horizon.n_rounds} rounds"
    cap = f", max {horizon.max_rounds}" if horizon.max_rounds else ""
    return f"geometric stop_prob={horizon.stop_prob:g}{cap}"


def _describe_kind(loaded: LoadedConfig, plans: list[GamePlan]) -> list[str]:
    cfg = loaded.config
    if loaded.kind == "tournament":
        section = cfg.tournament
        return [
            f"tournament: {len(loaded.players)} players, {section.repetitions} repetitions, "
            f"{_horizon_text(cfg.horizon)}, noise {cfg.game.noise:g}"
            + (", self-play" if section.self_play else ""),
            "  players: " + ", ".join(loaded.names),
        ]
    if loaded.kind == "evolution":
        section = cfg.evolution
        members = ", ".join(
            f"{spec.name} x{m.count}"
            for spec, m in zip(loaded.players, section.population, strict=True)
        )
        return [
            f"evolution: {section.process} ({section.fitness_mode()} fitness), "
            f"{section.generations} generations, {_horizon_text(cfg.horizon)}, "
            f"noise {cfg.game.noise:g}",
            f"  population: {members}",
            f"  pool: {len(plans)} matches played once"
            if plans
            else "  pool: none (every member is a policy the vectorized engine plays)",
        ]
    if loaded.kind == "groups":
        return _describe_groups(cfg, plans)
    if loaded.kind in ("group_tournament", "group_evolution"):
        return _describe_group_science(loaded, plans)
    if loaded.kind in ("pgg", "commons"):
        section = cfg.section
        unit = "rounds" if loaded.kind == "pgg" else "seasons (at most)"
        lines = [
            f"{loaded.kind}: replicates {section.replicates}, conditions "
            f"{len(section.conditions)}, {cfg.horizon.n_rounds} {unit}"
        ]
        for cond in section.conditions:
            talk = ", talk" if cfg.talk_of(cond) else ""
            lines.append(
                f"  {cond.name}: "
                + ", ".join(
                    loaded.agents[
                        (cfg.section_name, "conditions", section.conditions.index(cond), "seats", j)
                    ].name
                    for j in range(cond.n_players)
                )
                + talk
            )
        return lines
    n_rep = cfg.experiment.replicates
    lines = [f"replicates: {n_rep}   conditions: {len(cfg.experiment.conditions)}"]
    for cond in cfg.experiment.conditions:
        games = [p for p in plans if p.condition == cond.name]
        noise = games[0].noise
        kinds = "".join(spec.config.type[0].upper() for spec in games[0].agents)  # P, L, A
        lines.append(
            f"  {cond.name}: {games[0].agents[0].name} vs {games[0].agents[1].name} [{kinds}] "
            f"{_horizon_text(cond.horizon or cfg.horizon)}{f', noise {noise:g}' if noise else ''}; "
            f"{sum(p.n_rounds for p in games)} rounds over {n_rep} replicates"
        )
    return lines


def _describe_groups(cfg: Any, plans: list[Any]) -> list[str]:
    """A groups config's plan: per condition its seats, game, horizon, noise and talk."""
    n_rep = cfg.groups.replicates
    lines = [f"replicates: {n_rep}   groups: {len(cfg.groups.conditions)}"]
    for cond in cfg.groups.conditions:
        games = [p for p in plans if p.condition == cond.name]
        if not games:
            continue
        first = games[0]
        noise = first.noise
        seats = "seats " + ", ".join(spec.name for spec in first.agents)
        if cond.matching == "random":
            pool = ", ".join(agent.display_name() for agent in cond.members)
            seats = f"groups of {cond.n_players} drawn for each game from {pool}"
        talk = ", talking" if first.talks else ""
        lines.append(
            f"  {cond.name}: {first.game.describe()}; {seats}; "
            f"{_horizon_text(cond.horizon or cfg.horizon)}{f', noise {noise:g}' if noise else ''}"
            f"{talk}; {sum(p.n_rounds for p in games)} rounds over {n_rep} replicates"
        )
    return lines


def _describe_group_science(loaded: LoadedConfig, plans: list[Any]) -> list[str]:
    """A group tournament's or group evolution's plan: the field or population, the groups,
    the game, horizon and noise."""
    cfg = loaded.config
    game = plans[0].game.describe() if plans else "-"
    play = f"{game}, {_horizon_text(cfg.horizon)}, noise {cfg.game.noise:g}"
    logged = sum(1 for p in plans if p.logged)
    tail = f"  logged games: {logged} (rounds.jsonl)" if logged else "  logged games: none"
    if loaded.kind == "group_tournament":
        section = cfg.group_tournament
        kind = "multisets (with replacement)" if section.with_replacement else "distinct players"
        return [
            f"group tournament: {len(loaded.players)} players in groups of {section.group_size} "
            f"({section.n_groups} groups of {kind}), {section.repetitions} repetitions; {play}",
            "  players: " + ", ".join(loaded.names),
            tail,
        ]
    section = cfg.group_evolution
    beta = "fitness-proportional" if section.beta is None else f"beta {section.beta:g}"
    members = ", ".join(
        f"{spec.name} x{m.count}"
        for spec, m in zip(loaded.players, section.population, strict=True)
    )
    return [
        f"group evolution: {section.process} ({beta}), groups of {section.group_size} from a "
        f"population of {section.population_size}, {section.generations} generations, mutation "
        f"{section.mutation_rate:g}, {section.seeds} seed{'s' if section.seeds > 1 else ''}",
        f"  population: {members}",
        f"  payoff table: {section.n_compositions} compositions x {section.repetitions} "
        f"repetitions; {play}",
        tail,
    ]


def groups_table(rows: list[dict[str, Any]]) -> str:
    """The summary a groups run prints: per condition its group's cooperation and payoff with
    their 95% intervals (the game as the unit)."""
    head = f"{'condition':<{CONDITION_WIDTH}} {'N':>3} {'cooperation':>22} {'payoff/round':>26}"
    lines = [head, "-" * len(head)]
    for row in rows:
        if row.get("scope", "condition") != "condition":
            continue
        coop = _interval(row, "group_cooperation_rate", 100, "%", 1)
        pay = _interval(row, "group_payoff_per_round", 1, "", 2)
        for i, piece in enumerate(_wrap(str(row["condition"]), CONDITION_WIDTH)):
            if i == 0:
                lines.append(
                    f"{piece:<{CONDITION_WIDTH}} {row.get('n_players', ''):>3} {coop:>22} {pay:>26}"
                )
            else:
                lines.append(piece)
    lines.append("intervals: 95%, the game as the unit (aggregates.parquet, seats.parquet)")
    return "\n".join(lines)


def _interval(row: dict[str, Any], metric: str, scale: float, unit: str, digits: int) -> str:
    """`mean [lo, hi]` of one metric of a row, scaled; "-" when it has no value."""
    mean = row.get(metric)
    if mean is None:
        return "-"
    lo, hi = row.get(f"{metric}_ci_low"), row.get(f"{metric}_ci_high")
    if lo is None or hi is None:
        return f"{mean * scale:.{digits}f}{unit}"
    return f"{mean * scale:.{digits}f}{unit} [{lo * scale:.{digits}f}, {hi * scale:.{digits}f}]"


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _rounds(value: float | None) -> str:
    """Rounds as an integer when whole (a mean of unequal geometric lengths may not be)."""
    if value is None:
        return "-"
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def _wrap(text: str, width: int) -> list[str]:
    """The text cut into pieces of `width` characters (continuation lines of a cell)."""
    return [text[i : i + width] for i in range(0, len(text), width)] or [""]


# Widest a column of names grows before names wrap onto continuation lines.
CONDITION_WIDTH, NAME_WIDTH = 32, 40
FALLBACK_WARN_SHARE = 0.05


def fallbacks(rows: list[dict[str, Any]], condition: str, side: str) -> tuple[int, int] | None:
    """(fallback moves, moves) of agent `side` ("a" or "b") over a condition's replicates; None
    for a policy or Axelrod player (no LLM calls, so no fallbacks).

    A fallback is a move played after every reply to that round was invalid. Counted from the
    replicate rows; without them, from the condition row's means times n_replicates.
    """
    mine = [r for r in rows if r["condition"] == condition]
    reps = [r for r in mine if r["scope"] == "replicate"]
    failures = f"agent_{side}_parse_failures"
    if reps:
        count = sum(int(r.get(failures) or 0) for r in reps)
        moves = sum(int(r["n_rounds"] or 0) for r in reps)
        llm = any(r.get(f"agent_{side}_llm_calls") is not None for r in reps)
    else:
        row = next(r for r in mine if r["scope"] == "condition")
        n = int(row.get("n_replicates") or 1)
        count = round(float(row.get(failures) or 0) * n)
        moves = round(float(row["n_rounds"] or 0) * n)
        llm = row.get(f"agent_{side}_llm_calls") is not None
    return (count, moves) if llm or count else None


def by_condition(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Aggregate rows by condition (what `fallbacks` reads of a condition, found once)."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(row["condition"], []).append(row)
    return grouped


def _fallback_text(counts: tuple[int, int] | None) -> str:
    if counts is None:
        return "-"
    count, moves = counts
    return f"{count} ({count / moves:.1%})" if moves else str(count)


def summary_table(rows: list[dict[str, Any]]) -> str:
    """An experiment's condition means as a fixed-width text table: whole names (long ones
    continue on the next lines), per agent its fallback moves (count over the replicates, and
    share of its moves; `-` for a policy), and `collapse`, the mean round (numbered from 1,
    `rounds_display`) where the games that collapsed did (aggregates store the 0-based index,
    `time_to_collapse`)."""
    conds = [r for r in rows if r["scope"] == "condition"]
    longest = max([len(r["condition"]) for r in conds] + [len("condition")])
    cw = min(CONDITION_WIDTH, longest)
    names = [r[f"agent_{s}_name"] for r in conds for s in "ab"]
    nw = min(NAME_WIDTH, max([len(n) for n in names] + [len("agent A")]))
    grouped = by_condition(rows)
    cells = {
        (r["condition"], s): _fallback_text(fallbacks(grouped[r["condition"]], r["condition"], s))
        for r in conds
        for s in "ab"
    }
    fw = max([len(c) for c in cells.values()] + [len("fallbackA")])
    header = (
        f"{'condition':<{cw}} {'agent A':<{nw}} {'agent B':<{nw}} {'rounds':>7} {'coopA':>6} "
        f"{'coopB':>6} {'payA':>8} {'payB':>8} {'collapse':>8} {'fallbackA':>{fw}} "
        f"{'fallbackB':>{fw}}"
    )
    lines = [header, "-" * len(header)]
    for row in conds:
        cond = row["condition"]
        lines.append(
            f"{cond[:cw]:<{cw}} {row['agent_a_name'][:nw]:<{nw}} "
            f"{row['agent_b_name'][:nw]:<{nw}} {_rounds(row['n_rounds']):>7} "
            f"{_fmt(row['agent_a_cooperation_rate'], '.2f'):>6} "
            f"{_fmt(row['agent_b_cooperation_rate'], '.2f'):>6} "
            f"{_fmt(row['agent_a_total_payoff'], '.1f'):>8} "
            f"{_fmt(row['agent_b_total_payoff'], '.1f'):>8} "
            f"{_fmt(shown_value('time_to_collapse', row['time_to_collapse']), '.1f'):>8} "
            f"{cells[(cond, 'a')]:>{fw}} {cells[(cond, 'b')]:>{fw}}"
        )
        rest = [_wrap(cond, cw)[1:], _wrap(row["agent_a_name"], nw)[1:]]
        rest.append(_wrap(row["agent_b_name"], nw)[1:])
        for i in range(max(len(part) for part in rest)):
            c, a, b = (part[i] if i < len(part) else "" for part in rest)
            lines.append(f"{c:<{cw}} {a:<{nw}} {b:<{nw}}".rstrip())
    return "\n".join(lines)


def fallback_warnings(rows: list[dict[str, Any]]) -> list[str]:
    """A warning per condition and agent whose moves were more than 5% fallbacks."""
    out = []
    grouped = by_condition(rows)
    for row in rows:
        if row["scope"] != "condition":
            continue
        for side in "ab":
            counts = fallbacks(grouped[row["condition"]], row["condition"], side)
            if counts is None or not counts[1] or counts[0] / counts[1] <= FALLBACK_WARN_SHARE:
                continue
            count, moves = counts
            out.append(
                f"warning: {row['condition']}: agent {side.upper()} "
                f"({row[f'agent_{side}_name']}) played {count} of {moves} moves "
                f"({count / moves:.1%}) as fallbacks after invalid replies; its cooperation "
                "rate counts them"
            )
    return out


def leaderboard_table(board: list[dict[str, Any]], width: int = 24) -> str:
    """A tournament's leaderboard as a fixed-width text table."""
    header = (
        f"{'rank':>4}  {'player':<{width}} {'score/round':>11} {'95% CI of mean':>16} "
        f"{'rank 95%':>8} {'wins':>5} {'draws':>5} {'losses':>6} {'coop':>5}"
    )
    lines = [header, "-" * len(header)]
    for row in board:
        ci = f"[{_fmt(row['ci95_low'], '.3f')}, {_fmt(row['ci95_high'], '.3f')}]"
        low, high = row.get("rank_ci_low"), row.get("rank_ci_high")
        ranks = "-" if low is None else (f"{low:.0f}" if low == high else f"{low:.0f}-{high:.0f}")
        lines.append(
            f"{row['rank']:>4}  {row['player'][:width]:<{width}} "
            f"{_fmt(row['mean_score_per_round'], '.3f'):>11} {ci:>16} {ranks:>8} {row['wins']:>5} "
            f"{row['draws']:>5} {row['losses']:>6} {_fmt(row['cooperation_rate'], '.2f'):>5}"
        )
    if board and board[0].get("rank_ci_low") is None:
        lines.append("(one repetition: no interval; intervals come from repetitions)")
    else:
        lines.append("intervals: bootstrap over repetitions (the repetition is the unit)")
    return "\n".join(lines)


def shares_table(
    rows: list[dict[str, Any]], strategies: list[str], final_counts: dict[str, int]
) -> str:
    """An evolution's initial and final counts and shares per strategy."""
    first = {r["strategy"]: r["count"] for r in rows if r["generation"] == 0}
    total = sum(first.values()) or 1
    width = max([8] + [len(s) for s in strategies])
    lines = [f"{'strategy':<{width}} {'start':>6} {'end':>6} {'share':>6}"]
    lines.append("-" * len(lines[0]))
    for name in sorted(strategies, key=lambda s: -final_counts[s]):
        end = final_counts[name]
        lines.append(f"{name:<{width}} {first[name]:>6} {end:>6} {end / total:>6.2f}")
    return "\n".join(lines)
