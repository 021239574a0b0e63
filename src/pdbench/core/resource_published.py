"""Published numbers stored beside a resource-game recipe (`pgg.published` or
`commons.published`, issue 31): PGG-Bench's and GovSim's, each with its source and definition,
and how this run differs from the authors' (pure: the file is read by the loader).

```yaml
study: PGG-Bench, Contribute & Punish
source: lechmazur/pgg_bench README.md
published_only:            # metrics the source reports that no aggregates column measures
  trueskill_mu: TrueSkill mu, the median over 200 passes through all games
entries:
  - metric: retaliation_rate           # an aggregates.parquet column, or a published_only name
    model: Claude 3.5 Sonnet 2024-10-22
    condition: llm_personas            # optional: the run's condition it stands beside
    value: 0.39
    ci: [0.30, 0.48]                   # optional, where the source gives one
    source: lechmazur/pgg_bench README.md @4be972b, "Key Findings"
    definition: how often a model punishes someone who punished it in the previous round
deviations:
  - Scoring: ...
```

An entry without `condition` stands beside every condition of the run.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import Field, model_validator

from pdbench.core.commons_conditions import COMMONS_METRIC_COLUMNS
from pdbench.core.pgg_conditions import PGG_METRIC_COLUMNS
from pdbench.core.strict import Strict

RESOURCE_METRICS: dict[str, tuple[str, ...]] = {
    "pgg": PGG_METRIC_COLUMNS,
    "commons": COMMONS_METRIC_COLUMNS,
}


class ResourceEntry(Strict):
    """One published number: a metric of a model (in a condition), its source and definition."""

    metric: str = Field(min_length=1)
    model: str = Field(min_length=1)
    condition: str | None = None
    value: float
    ci: tuple[float, float] | None = None
    source: str = Field(min_length=1)
    definition: str = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _lax_numbers(cls, data: Any) -> Any:
        # YAML writes 0 and 1 as integers; a value is a number either way.
        if isinstance(data, dict):
            data = dict(data)
            if isinstance(data.get("value"), int) and not isinstance(data["value"], bool):
                data["value"] = float(data["value"])
            if isinstance(data.get("ci"), list):
                data["ci"] = tuple(
                    float(x) if isinstance(x, int) and not isinstance(x, bool) else x
                    for x in data["ci"]
                )
        return data

    @model_validator(mode="after")
    def _ordered_interval(self) -> ResourceEntry:
        if self.ci is not None and not self.ci[0] <= self.value <= self.ci[1]:
            raise ValueError(
                f"ci must hold the value: low <= value <= high (got {list(self.ci)} "
                f"around {self.value})"
            )
        return self


class ResourcePublished(Strict):
    """A resource recipe's published numbers, what else the source reports, and the deviations."""

    study: str = Field(min_length=1)
    source: str = Field(min_length=1)
    note: str | None = None
    # the rounds (months) the published numbers were measured over: a run of another length
    # is told its numbers are not comparable
    rounds: int | None = Field(default=None, ge=1)
    published_only: dict[str, str] = Field(default_factory=dict)
    entries: list[ResourceEntry] = Field(min_length=1)
    not_reproduced: list[str] = Field(default_factory=list)
    deviations: list[str] = Field(default_factory=list)

    def problems(self, kind: str, conditions: Iterable[str]) -> list[tuple[tuple, str]]:
        """What does not fit a run of `kind` with these condition names, as (location inside
        the file, message): a metric that is neither an aggregates column nor published-only,
        a condition the run does not have, a published-only name that is a column."""
        columns = RESOURCE_METRICS[kind]
        names = list(conditions)
        out: list[tuple[tuple, str]] = []
        for name in self.published_only:
            if name in columns:
                out.append(
                    (
                        ("published_only", name),
                        f"an aggregates column of {kind} runs; name it in entries only",
                    )
                )
        for i, entry in enumerate(self.entries):
            if entry.metric not in columns and entry.metric not in self.published_only:
                valid = ", ".join([*columns, *self.published_only])
                out.append(
                    (
                        ("entries", i, "metric"),
                        f"not an aggregates column of {kind} runs nor a published_only name "
                        f"(valid: {valid}) (got {entry.metric!r})",
                    )
                )
            if entry.condition is not None and entry.condition not in names:
                out.append(
                    (
                        ("entries", i, "condition"),
                        f"no condition of this run has that name (valid: {', '.join(names)}) "
                        f"(got {entry.condition!r})",
                    )
                )
        return out

    def manifest_entry(self, source_file: str) -> dict[str, Any]:
        """What the manifest keeps under `published` (the report and `summary_lines` read it)."""
        return {
            "source_file": source_file,
            "study": self.study,
            "source": self.source,
            "rounds": self.rounds,
            "entries": [
                {
                    "metric": e.metric,
                    "model": e.model,
                    "condition": e.condition,
                    "value": e.value,
                    "ci": list(e.ci) if e.ci is not None else None,
                    "source": e.source,
                    "definition": e.definition,
                    "published_only": e.metric in self.published_only,
                }
                for e in self.entries
            ],
            "not_reproduced": list(self.not_reproduced),
            "deviations": list(self.deviations),
        }
