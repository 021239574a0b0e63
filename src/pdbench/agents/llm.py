"""The LLM agent: renders prompts with str.format, calls a provider, parses strictly, retries.

Every attempt (prompt hash, raw reply, valid or not) is kept in the returned Decision. When all
attempts are invalid, `on_parse_failure` decides: play D, play C, or abort the run.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Mapping
from dataclasses import dataclass

from pdbench.agents.base import AgentBase
from pdbench.agents.llm_talk import messages_block
from pdbench.agents.providers.base import CallTag, CompletionRequest, Provider
from pdbench.core.config import LLMAgentConfig
from pdbench.core.group_game import GroupObservation
from pdbench.core.parse import (
    DEFAULT_LABELS,
    Labels,
    correction_message,
    decision_probability,
)
from pdbench.core.parse_modes import read_reply
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.rng import Purpose, counter_bits
from pdbench.core.types import Action, Attempt, Decision, Observation

SYSTEM_FIELDS = ("persona", "payoff_table", "R", "S", "T", "P", "C", "D", "output_instruction")
ROUND_FIELDS = (
    "C",
    "D",
    "round_number",
    "horizon_text",
    "totals",
    "history",
    "history_section",
    "history_len",
    "history_window",
    "opponent_last_move",
    "my_last_move",
    "output_instruction",
    # for prompts in a paper's own words (see PromptTemplates)
    "history_lines",
    "history_block",
    "first_option",
    "second_option",
    "total_rounds",
    "R",
    "S",
    "T",
    "P",
    "my_total",
    "opp_total",
    "my_cooperations",
    "my_defections",
    "opp_cooperations",
    "opp_defections",
    "messages",  # the messages the agent can see (games with a message channel)
)
# The history and first-round blocks take every round field but the block itself.
BLOCK_FIELDS = tuple(name for name in ROUND_FIELDS if name != "history_block")
HISTORY_LINE_FIELDS = ("round", "my_move", "opp_move", "my_payoff", "opp_payoff", "C", "D")
OPTIONAL_PROMPTS = ("history_line", "history", "first_round", "message")
DEFAULT_HISTORY_LINE = (
    "Round {round}: you played {my_move}, the opponent played {opp_move}; "
    "you got {my_payoff}, they got {opp_payoff}."
)


class ParseFailureAbort(RuntimeError):
    """Raised when an agent with on_parse_failure=error gets no valid move."""


@dataclass(frozen=True, slots=True)
class PromptTemplates:
    """Template texts (already read from disk) for one LLM agent."""

    system: str
    round: str
    persona: str
    # Optional parts (prompts.history_line, .history, .first_round): one shown round, the
    # block shown once a round was played and the text before the first round.
    history_line: str = DEFAULT_HISTORY_LINE
    history: str | None = None
    first_round: str | None = None
    message: str | None = None  # the message prompt (games with talk; see agents/llm_talk.py)
    # True: sent byte for byte (each file's one final newline dropped); False: stripped.
    verbatim: bool = False


def finish(text: str, verbatim: bool) -> str:
    """A rendered template as sent: stripped and ending with one newline (empty stays empty),
    or, verbatim, as written."""
    if verbatim:
        return text
    text = text.strip()
    return text + "\n" if text else ""


def file_text(text: str) -> str:
    """A template file's text without its one final newline (verbatim prompts)."""
    return text[:-1] if text.endswith("\n") else text


def prompt_sha256(system: str, prompt: str, turns: tuple[tuple[str, str], ...] = ()) -> str:
    """sha256 of the system and round prompt of one attempt (and of the earlier invalid replies
    and corrections it carries)."""
    text = "\x1e".join([system, prompt, *(part for turn in turns for part in turn)])
    return hashlib.sha256(text.encode()).hexdigest()


def placeholders(template: str) -> set[str]:
    """The `{name}` placeholders used by a str.format template."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def output_instruction(output_format: str, labels: Labels = DEFAULT_LABELS) -> str:
    """The sentence telling the model exactly what to answer (in the agent's labels)."""
    c, d = labels
    if output_format in ("json", "choice"):
        return f'Answer with only the JSON object {{"action": "{c}"}} or {{"action": "{d}"}}, nothing else.'
    unit = "letter" if len(c) == len(d) == 1 else "word"
    return f"Answer with only one {unit}, {c} or {d}, nothing else."


def payoff_table(matrix: PayoffMatrix, labels: Labels = DEFAULT_LABELS) -> str:
    """The payoff matrix as lines a model can read (moves in the agent's labels)."""
    c, d = labels
    rows = []
    for mine, theirs, key in (
        (c, c, "cc"),
        (c, d, "cd"),
        (d, c, "dc"),
        (d, d, "dd"),
    ):
        me, them = getattr(matrix, key)
        rows.append(f"- you play {mine}, they play {theirs}: you get {me:g}, they get {them:g}")
    return "\n".join(rows)


def horizon_text(obs: Observation | GroupObservation) -> str:
    """What the agent is told about the game's length (set by horizon_disclosure)."""
    if obs.total_rounds is not None:
        return f"Round {obs.round_number} of {obs.total_rounds}."
    if obs.stop_prob is not None:
        return (
            f"Round {obs.round_number}. After each round the game ends with probability "
            f"{obs.stop_prob:g}; otherwise another round is played."
        )
    return f"Round {obs.round_number}."


def render_system(
    templates: PromptTemplates,
    matrix: PayoffMatrix,
    output_format: str,
    labels: Labels = DEFAULT_LABELS,
) -> str:
    """The system prompt (persona and rules)."""
    values: Mapping[str, object] = {
        "persona": templates.persona.strip(),
        "payoff_table": payoff_table(matrix, labels),
        "R": f"{matrix.reward:g}",
        "S": f"{matrix.sucker:g}",
        "T": f"{matrix.temptation:g}",
        "P": f"{matrix.punishment:g}",
        "C": labels[0],
        "D": labels[1],
        "output_instruction": output_instruction(output_format, labels),
    }
    return finish(templates.system.format(**values), templates.verbatim)


def render_round(
    template: str,
    obs: Observation,
    history_window: int | None,
    output_format: str,
    labels: Labels = DEFAULT_LABELS,
    payoff_scale: float = 1.0,
    templates: PromptTemplates | None = None,
    swap_options: bool = False,
    extra: Mapping[str, object] | None = None,
) -> str:
    """The round prompt for this observation (moves in the agent's labels, payoffs times
    `payoff_scale`). `templates` gives the history line and blocks and whether the text is sent
    verbatim; `swap_options` lists the options D first ({first_option}, {second_option});
    `extra` adds values (the message prompt's). Messages the agent can see are `{messages}`; a
    template without it shows them after the history section (or at the end)."""
    k = payoff_scale
    verbatim = templates is not None and templates.verbatim
    word = {Action.C: labels[0], Action.D: labels[1]}
    first_shown = obs.round_index - len(obs.history) + 1
    lines = [
        f"Round {first_shown + i}: you played {word[h.my_action]}, "
        f"the opponent played {word[h.opp_action]}; "
        f"you got {h.my_payoff * k:g}, they got {h.opp_payoff * k:g}."
        for i, h in enumerate(obs.history)
    ]
    parts = (template, templates.history or "", templates.first_round or "") if templates else ()
    wanted = any("{history_lines}" in part for part in parts)  # else not rendered at all
    line_template = templates.history_line if templates is not None else DEFAULT_HISTORY_LINE
    shown_lines = "".join(
        finish(
            line_template.format(
                round=first_shown + i,
                my_move=word[h.my_action],
                opp_move=word[h.opp_action],
                my_payoff=f"{h.my_payoff * k:g}",
                opp_payoff=f"{h.opp_payoff * k:g}",
                C=labels[0],
                D=labels[1],
            ),
            verbatim,
        ).rstrip("\n")
        + "\n"
        for i, h in enumerate(obs.history if wanted else ())
    )
    if obs.my_cumulative_payoff is not None and obs.opponent_cumulative_payoff is not None:
        totals = (
            f"Total so far: you {obs.my_cumulative_payoff * k:g} points, "
            f"the opponent {obs.opponent_cumulative_payoff * k:g} points."
        )
    else:
        totals = ""
    if not lines:
        section = (
            "No rounds played yet." if obs.round_index == 0 else "Earlier rounds are not shown."
        )
    elif len(lines) == obs.round_index:
        section = "Rounds so far (oldest first):\n" + "\n".join(lines)
    else:
        section = f"Last {len(lines)} rounds (oldest first):\n" + "\n".join(lines)
    m = obs.payoff_matrix
    mine, theirs = obs.my_cooperations, obs.opponent_cooperations
    first, second = (labels[1], labels[0]) if swap_options else labels
    values: dict[str, object] = {
        "round_number": obs.round_number,
        "history_section": section,
        "horizon_text": horizon_text(obs),
        "totals": totals,
        "history": "\n".join(lines)
        if lines
        else ("(no rounds played yet)" if obs.round_index == 0 else "(not shown)"),
        "history_len": len(lines),
        "history_window": "all" if history_window is None else history_window,
        "opponent_last_move": word[obs.history[-1].opp_action] if obs.history else "none yet",
        "my_last_move": word[obs.history[-1].my_action] if obs.history else "none yet",
        "C": labels[0],
        "D": labels[1],
        "output_instruction": output_instruction(output_format, labels),
        "history_lines": shown_lines,
        "first_option": first,
        "second_option": second,
        "total_rounds": obs.total_rounds
        if obs.total_rounds is not None
        else "an unknown number of",
        "R": f"{m.reward * k:g}",
        "S": f"{m.sucker * k:g}",
        "T": f"{m.temptation * k:g}",
        "P": f"{m.punishment * k:g}",
        "my_total": "" if obs.my_cumulative_payoff is None else f"{obs.my_cumulative_payoff * k:g}",
        "opp_total": ""
        if obs.opponent_cumulative_payoff is None
        else f"{obs.opponent_cumulative_payoff * k:g}",
        "my_cooperations": "" if mine is None else mine,
        "my_defections": "" if mine is None else obs.round_index - mine,
        "opp_cooperations": "" if theirs is None else theirs,
        "opp_defections": "" if theirs is None else obs.round_index - theirs,
    }
    talk = messages_block(obs.messages) if obs.messages else ""
    values["messages"] = talk
    if extra:
        values.update(extra)
    if talk and "{messages}" not in template:
        if "{history_section}" in template:
            values["history_section"] = f"{section}\n\n{talk}"
        else:
            template = f"{template.rstrip()}\n\n{talk}\n"
    block = None
    if templates is not None:
        block = templates.first_round if obs.round_index == 0 else templates.history
    values["history_block"] = section if block is None else finish(block.format(**values), verbatim)
    return finish(template.format(**values), verbatim)


class ProviderAgent(AgentBase):
    """What every agent whose moves come from a provider shares (the pairwise `LLMAgent` and
    the group seat's `pdbench.agents.group_llm.GroupLLMAgent`): its config, provider, prompt
    texts, labels, rendered system prompt and seed, the per-call seeds, and the loop that asks
    for a move, reads the reply, re-prompts after an invalid one and falls back (`ask_move`)."""

    config: LLMAgentConfig
    provider: Provider
    templates: PromptTemplates
    name: str
    labels: Labels
    system_prompt: str
    seed: int = 0

    def reset(self, seed: int | None = None) -> None:
        """Start a new game; `seed` keys the per-call seeds sent to the provider."""
        self.seed = int(seed or 0)

    def call_seed(self, round_index: int, attempt: int) -> int:
        """The seed passed with one provider call (a pure function of agent seed, round, attempt)."""
        return counter_bits(self.seed, round_index, Purpose.PROVIDER, attempt) >> 1

    def swap_options(self, round_index: int) -> bool:
        """Whether this round's prompt lists the options D first (a draw keyed by the seed)."""
        return bool(counter_bits(self.seed, round_index, Purpose.PROMPT, 0) & 1)

    async def ask_move(self, round_index: int, round_number: int, round_prompt: str) -> Decision:
        """Ask the provider for a move after `round_prompt`. After an invalid reply the
        conversation goes on: the reply as the assistant's turn, then the correction as a new
        user turn; when every attempt is invalid, `on_parse_failure` decides."""
        cfg = self.config
        turns: tuple[tuple[str, str], ...] = ()
        attempts: list[Attempt] = []
        for index in range(cfg.max_retries + 1):
            request = CompletionRequest(
                system=self.system_prompt,
                prompt=round_prompt,
                temperature=cfg.temperature,
                max_tokens=cfg.max_tokens,
                seed=self.call_seed(round_index, index),
                tag=CallTag(round_index, index),
                turns=turns,
                output_format=cfg.output_format,
                logprobs=cfg.record_logprobs,
                labels=self.labels,
                mode=cfg.prompt_mode,
            )
            completion = await self.provider.complete(request)
            result = read_reply(
                completion.text, cfg.output_format, cfg.answer_pattern, self.labels, cfg.parse
            )
            error = result.error
            if error is not None and completion.truncated:
                error += f"; cut off at max_tokens={cfg.max_tokens}"
            p_coop = (
                decision_probability(completion.tokens, result.span, self.labels)
                if cfg.record_logprobs and result.ok
                else None
            )
            attempts.append(
                Attempt(
                    index,
                    prompt_sha256(self.system_prompt, round_prompt, turns),
                    completion.text,
                    result.ok,
                    error,
                    exact=result.exact if result.ok else None,
                    truncated=completion.truncated,
                    p_cooperate=p_coop,
                )
            )
            if result.action is not None:
                return Decision(
                    result.action, False, attempts, self.system_prompt, round_prompt, p_coop
                )
            correction = correction_message(
                cfg.output_format, error or "invalid", cfg.reprompt, self.labels
            )
            turns = (*turns, (completion.text, correction))
        if cfg.on_parse_failure == "error":
            last = attempts[-1].raw if attempts else None
            raise ParseFailureAbort(
                f"{self.name}: no valid move in round {round_number} after {len(attempts)} attempts "
                f"(on_parse_failure: error; last reply {last!r})"
            )
        fallback = Action.C if cfg.on_parse_failure == "cooperate" else Action.D
        return Decision(fallback, True, attempts, self.system_prompt, round_prompt)


class LLMAgent(ProviderAgent):
    """An agent whose moves come from a provider; see the module docstring."""

    def __init__(
        self,
        config: LLMAgentConfig,
        provider: Provider,
        templates: PromptTemplates,
        matrix: PayoffMatrix,
        name: str | None = None,
    ) -> None:
        self.config = config
        self.provider = provider
        self.templates = templates
        self.name = name or config.display_name()
        self.labels = config.labels()
        shown = matrix.scaled(config.payoff_scale) if config.payoff_scale != 1.0 else matrix
        self.system_prompt = render_system(templates, shown, config.output_format, self.labels)
        self.seed = 0

    def round_prompt(
        self,
        obs: Observation,
        template: str | None = None,
        extra: Mapping[str, object] | None = None,
    ) -> str:
        """The round prompt this agent is shown for `obs` (another `template`, with `extra`
        values: the message prompt)."""
        cfg = self.config
        return render_round(
            template or self.templates.round,
            obs,
            cfg.history_window,
            cfg.output_format,
            self.labels,
            cfg.payoff_scale,
            self.templates,
            self.swap_options(obs.round_index),
            extra,
        )

    async def decide(self, obs: Observation) -> Decision:
        """Ask the provider for a move (`ProviderAgent.ask_move`)."""
        return await self.ask_move(obs.round_index, obs.round_number, self.round_prompt(obs))
