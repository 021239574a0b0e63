"""Pydantic models of the experiment and agent configs (after references are resolved).

Every model forbids unknown keys. Loading YAML and resolving `{ref, overrides}` is I/O and lives in
`pdbench.runners.registry`; this module only says what a valid config looks like.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pdbench.core.horizon import FixedHorizon, GeometricHorizon, Horizon
from pdbench.core.metrics import CollapseParams
from pdbench.core.payoff import DEFAULT_MATRIX, PayoffMatrix

MetricName = Literal[
    "cooperation_rate",
    "cooperation_rate_over_time",
    "retaliation_rate",
    "forgiveness_rate",
    "exploitability_payoff_gap",
    "time_to_collapse",
]
KNOWN_METRICS: tuple[str, ...] = (
    "cooperation_rate",
    "cooperation_rate_over_time",
    "retaliation_rate",
    "forgiveness_rate",
    "exploitability_payoff_gap",
    "time_to_collapse",
)


class Strict(BaseModel):
    """Base model: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")


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
    budget: BudgetConfig = Field(default_factory=BudgetConfig)


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
    """Fixed (`n_rounds`) or geometric (`stop_prob`, optional `max_rounds` cap) horizon."""

    type: Literal["fixed", "geometric"] = "fixed"
    n_rounds: int | None = Field(default=None, ge=1)
    stop_prob: float | None = None
    max_rounds: int | None = Field(default=None, ge=1)

    @field_validator("stop_prob")
    @classmethod
    def _open_unit(cls, value: float | None) -> float | None:
        if value is not None and not (0.0 < value < 1.0):
            raise ValueError(f"must be strictly between 0 and 1 (got {value})")
        return value

    @model_validator(mode="after")
    def _complete(self) -> HorizonConfig:
        if self.type == "fixed" and self.n_rounds is None:
            raise ValueError("a fixed horizon needs n_rounds (a positive integer)")
        if self.type == "geometric" and self.stop_prob is None:
            raise ValueError("a geometric horizon needs stop_prob in (0, 1)")
        return self

    def build(self) -> Horizon:
        """The horizon object the engines use."""
        if self.type == "fixed":
            assert self.n_rounds is not None
            return FixedHorizon(self.n_rounds)
        assert self.stop_prob is not None
        return GeometricHorizon(self.stop_prob, self.max_rounds)


class PolicyParams(Strict):
    """Parameters of the built-in policies (each policy reads only the ones it needs)."""

    generous_prob: float | None = Field(default=None, ge=0.0, le=1.0)
    win_threshold: float | None = None
    coop_prob: float = Field(default=0.5, ge=0.0, le=1.0)


class PolicyAgentConfig(Strict):
    """A scripted policy such as TFT (`policy` is a registered name, case-insensitive)."""

    type: Literal["policy"]
    policy: str = Field(min_length=1)
    name: str | None = None
    history_window: int | None = Field(default=None, ge=0)
    params: PolicyParams = Field(default_factory=PolicyParams)

    def display_name(self) -> str:
        """Name used in artifacts."""
        return self.name or self.policy.upper()


class PromptFiles(Strict):
    """Prompt template files (paths are resolved against the file that names them)."""

    system: str
    round: str
    personas_dir: str


class MockSettings(Strict):
    """Behaviour of the offline MockProvider."""

    invalid_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    latency_ms: float = Field(default=0.0, ge=0.0)


class TransportConfig(Strict):
    """Retries of failed provider calls (timeouts, connection errors, 429, 5xx)."""

    max_retries: int = Field(default=5, ge=0, le=50)
    backoff_initial_s: float = Field(default=0.5, ge=0.0)
    backoff_max_s: float = Field(default=30.0, ge=0.0)


class LLMAgentConfig(Strict):
    """An agent whose moves come from a provider (an LLM or the offline mock)."""

    type: Literal["llm"]
    name: str | None = None
    provider: str = "mock"
    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=16, ge=1)
    timeout_s: float = Field(default=60.0, gt=0.0)
    max_concurrency: int = Field(default=8, ge=1)
    persona: str | None = None
    prompts: PromptFiles
    history_window: int | None = Field(default=10, ge=0)
    include_totals: bool = True
    horizon_disclosure: Literal["exact", "stop_prob", "hidden"] | None = None
    output_format: Literal["token", "json"] = "token"
    max_retries: int = Field(default=2, ge=0, le=10)
    on_parse_failure: Literal["defect", "cooperate", "error"] = "defect"
    transport: TransportConfig = Field(default_factory=TransportConfig)
    mock: MockSettings = Field(default_factory=MockSettings)

    def display_name(self) -> str:
        """Name used in artifacts."""
        if self.name:
            return self.name
        return self.model + (f"[{self.persona}]" if self.persona else "")


AgentConfig = Annotated[PolicyAgentConfig | LLMAgentConfig, Field(discriminator="type")]


class ConditionConfig(Strict):
    """One matchup: two agents, optionally with their own horizon or noise."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._+-]+$")
    agent_a: AgentConfig
    agent_b: AgentConfig
    horizon: HorizonConfig | None = None
    noise: float | None = Field(default=None, ge=0.0, le=0.5)


class ExperimentSection(Strict):
    """Conditions and how many replicates of each."""

    replicates: int = Field(default=1, ge=1)
    conditions: list[ConditionConfig] = Field(min_length=1)

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
    """Which metrics to report and the collapse parameters."""

    report: list[MetricName] = Field(default_factory=lambda: list(KNOWN_METRICS))
    collapse: CollapseConfig = Field(default_factory=CollapseConfig)

    def collapse_params(self) -> CollapseParams:
        """As the metrics module wants them."""
        return CollapseParams(self.collapse.k, self.collapse.threshold)


class ExperimentConfig(Strict):
    """The whole experiment, refs expanded."""

    run: RunConfig
    game: GameConfig = Field(default_factory=GameConfig)
    horizon: HorizonConfig
    experiment: ExperimentSection
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
