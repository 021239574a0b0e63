"""A commons: GovSim's fishery (a shared stock that regrows, harvested by N agents each season).

The rules are read from GovSim's code, giorgiopiatti/GovSim at commit
1d11adf047b24fa2ba0d44a1d4931015ea2e5210 (2025-01-19); paths below are in that repository.

- Capacity 100 tons, and the lake starts full: `initial_resource_in_pool: 100` in
  `simulation/scenarios/fishing/conf/experiment/fish_baseline_concurrent.yaml`; the regrowth cap
  is that same number (`min(self.cfg.initial_resource_in_pool, resource_in_pool * 2)`).
- Regrowth (`poupulation_change_after_round: double_100_cap`): at the end of each month the
  remaining stock doubles, capped at capacity, in `ConcurrentEnv.step` of
  `simulation/scenarios/common/environment/concurrent_env.py` (and `PerturbationEnv.step` of
  `perturbation_env.py`); the system prompt says the same ("the remaining fish will reproduce
  and double once, up to the carrying capacity", `get_sytem_prompt_v3` in
  `simulation/scenarios/fishing/agents/persona_v3/cognition/utils.py`).
- Collapse: the simulation ends when `resource_in_pool < 5` ("less than 5 fish remain, so we
  collapse"), checked in the same `step` on the stock left after the month's harvest, before it
  doubles (also after the month's discussion, so the talk still happens). Its analysis
  (`simulation/analysis/plots.py`, `compute_survival_months_stats`) counts survival months as
  the first such month's index + 1, or 12 when there is none.
- Catches: the system prompt says "between 0 and 100 tons"; the act prompt offers
  `range(0, current_resource_num + 1)` (0 to the current stock, `persona_v3/persona.py`) and the
  answer is the first integer after "Answer:" (`act_prompts.py`, default 0), not clamped.
- Requests over the stock (`assign_resource_strategy: stochastic`, `ConcurrentEnv._assign_
  stochastic`): when the requests fit, each agent gets its request; otherwise the stock is handed
  out one ton at a time, each to a uniformly random agent still wanting more, until it is empty.
  The alternative `proportional` gives floor(stock * request / total) and hands out the rounding
  remainder at random; here `proportional` hands it out by largest remainder, ties to the lower
  seat (deterministic: a deviation). Either way, an over-subscribed month empties the lake.
- Agents and months: 5 agents (John, Kate, Jack, Emma, Luke), `max_num_rounds: 12`, harvesting
  `concurrent`. The outsider (`fish_perturbation_outsider.yaml`): 4 `traditional_fisherman`
  agents for 15 months and, from round 3 (0-based: the 4th month, `perturbation: round: 3,
  type: insert_outsider`), a fifth, `outsider_fisherman` ("You don't care if in the future there
  is no fish in the lake, you just want to make money").
- Sustainable reference: `sustainability_threshold = int((resource_in_pool // 2) // num_agents)`,
  set after each regrowth (initially hard-coded 10 = 50 // 5, "maximum 50 can be fished"); the
  universalization prompt reads "if everyone fishes more than {threshold} every month, the lake
  will eventually be empty". `num_agents` there is the configured count, so in the outsider run it
  stays 4 after the fifth agent arrives (12 tons at a full lake); here `outsider_policy` has its
  incumbents share among themselves likewise. GovSim has no closed-form outcome; those below are
  ours.

Closed forms (for `fixed_collapse_season`): N agents each asking h a season, H = N h, capacity
C, collapse below theta, starting full. If H <= C / 2 the remainder C - H doubles back to C and
the stock stays at C forever. Otherwise D = 2H - C > 0 and, as long as no month empties the lake,
S_{t+1} = 2 (S_t - H) (below C, so uncapped), whence S_t - 2H = 2^t (S_0 - 2H) and the stock left
after month t is R_t = S_t - H = H - 2^t D (0 once that is negative: the lake is emptied). The
collapse month is the least t >= 0 with H - 2^t D < theta, i.e. with 2^t > (H - theta) / D:
t* = bit_length(floor(max(0, H - theta) / D)). Greedy agents asking min(max_catch, stock) are
the case h = max_catch (a request over the stock takes all of it either way).
Pure: no I/O, no clock; the random allocation draws only from a Generator passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

ALLOCATIONS = ("stochastic", "proportional")


@dataclass(frozen=True, slots=True)
class CommonsRules:
    """A fishery's rules; the defaults are GovSim's baseline (see the module docstring).

    `capacity`: the cap of the regrowth (and the starting stock unless `initial_stock` is set);
    `growth`: the factor the remaining stock is multiplied by each season; `collapse_below`: the
    group collapses when the stock left after a season's harvest is below it; `max_catch`: the
    most one agent may ask for; `allocation`: how requests over the stock are granted (one of
    ALLOCATIONS)."""

    n_agents: int = 5
    capacity: int = 100
    n_seasons: int = 12
    collapse_below: int = 5
    max_catch: int = 100
    growth: int = 2
    initial_stock: int | None = None
    allocation: str = "stochastic"

    def __post_init__(self) -> None:
        if self.n_agents < 1:
            raise ValueError(f"n_agents must be at least 1 (got {self.n_agents})")
        if self.capacity < 1:
            raise ValueError(f"capacity must be at least 1 (got {self.capacity})")
        if self.n_seasons < 1:
            raise ValueError(f"n_seasons must be at least 1 (got {self.n_seasons})")
        if not 0 <= self.collapse_below <= self.capacity:
            raise ValueError(
                f"collapse_below must be 0..capacity {self.capacity} (got {self.collapse_below})"
            )
        if self.max_catch < 0:
            raise ValueError(f"max_catch must be at least 0 (got {self.max_catch})")
        if self.growth < 1:
            raise ValueError(f"growth must be at least 1 (got {self.growth})")
        if self.initial_stock is not None and not 0 <= self.initial_stock <= self.capacity:
            raise ValueError(
                f"initial_stock must be 0..capacity {self.capacity} (got {self.initial_stock})"
            )
        if self.allocation not in ALLOCATIONS:
            raise ValueError(
                f"unknown allocation {self.allocation!r}; choose one of {', '.join(ALLOCATIONS)}"
            )

    @property
    def start_stock(self) -> int:
        """The stock of the first season (capacity unless `initial_stock` is set)."""
        return self.capacity if self.initial_stock is None else self.initial_stock


@dataclass(frozen=True, slots=True)
class SeasonResult:
    """One season: the stock before the harvest, the requests and the catches granted, the
    stock left after the harvest, the stock after regrowth (next season's) and whether the
    group collapsed (left < collapse_below)."""

    stock: int
    requested: tuple[int, ...]
    caught: tuple[int, ...]
    left: int
    next_stock: int
    collapsed: bool


def sustainable_catch(stock: int, n_agents: int) -> int:
    """GovSim's sustainability threshold: (stock // 2) // n_agents tons per agent."""
    if n_agents < 1:
        raise ValueError(f"n_agents must be at least 1 (got {n_agents})")
    return (stock // 2) // n_agents


def sustainable_total(stock: int, growth: int = 2) -> int:
    """The most a group can take from `stock` (at most the capacity) and find it again next
    season: the largest H with growth (stock - H) >= stock, floor(stock / 2) when growth is 2."""
    if stock < 0 or growth < 1:
        raise ValueError(f"stock must be >= 0 and growth >= 1 (got {stock}, {growth})")
    return stock - -(-stock // growth)  # ceil(stock / growth) must be left


def _check(rules: CommonsRules, stock: int, harvests: Sequence[int]) -> tuple[int, ...]:
    if not 0 <= stock <= rules.capacity:
        raise ValueError(f"stock must be 0..capacity {rules.capacity} (got {stock})")
    if len(harvests) != rules.n_agents:
        raise ValueError(f"{rules.n_agents} harvests needed, one per agent (got {len(harvests)})")
    out = []
    for h in harvests:
        if isinstance(h, bool) or not isinstance(h, int | np.integer):
            raise ValueError(f"a harvest must be an integer 0..{rules.max_catch} (got {h!r})")
        if not 0 <= h <= rules.max_catch:
            raise ValueError(f"a harvest must be 0..max_catch {rules.max_catch} (got {h})")
        out.append(int(h))
    return tuple(out)


def _stochastic(requested: tuple[int, ...], stock: int, rng: np.random.Generator) -> list[int]:
    """GovSim's `_assign_stochastic`: one ton at a time to a random agent still wanting."""
    wanted = list(requested)
    caught = [0] * len(wanted)
    for _ in range(stock):
        open_ = [i for i, w in enumerate(wanted) if w > 0]
        i = open_[int(rng.integers(len(open_)))]
        wanted[i] -= 1
        caught[i] += 1
    return caught


def _proportional(requested: tuple[int, ...], stock: int) -> list[int]:
    """floor(stock * request / total), the remainder by largest remainder (lower seat on ties)."""
    total = sum(requested)
    caught = [stock * r // total for r in requested]
    rest = stock - sum(caught)
    order = sorted(range(len(requested)), key=lambda i: (-(stock * requested[i] % total), i))
    for i in order[:rest]:
        caught[i] += 1
    return caught


def step(
    rules: CommonsRules,
    stock: int,
    harvests: Sequence[int],
    rng: np.random.Generator | None = None,
) -> SeasonResult:
    """One season: grant the requests `harvests` (one per agent, 0..max_catch) from `stock`,
    then regrow what is left (min(capacity, growth * left)). Requests over the stock are granted
    by `rules.allocation`; "stochastic" needs `rng` then."""
    requested = _check(rules, stock, harvests)
    if sum(requested) <= stock:
        caught = list(requested)
    elif rules.allocation == "proportional":
        caught = _proportional(requested, stock)
    else:
        if rng is None:
            raise ValueError("requests over the stock with allocation 'stochastic' need an rng")
        caught = _stochastic(requested, stock, rng)
    left = stock - sum(caught)
    return SeasonResult(
        stock=stock,
        requested=requested,
        caught=tuple(caught),
        left=left,
        next_stock=min(rules.capacity, rules.growth * left),
        collapsed=left < rules.collapse_below,
    )


# A harvest policy: (rules, season index, stock) -> one request per agent.
HarvestPolicy = Callable[[CommonsRules, int, int], Sequence[int]]


def run_commons(
    rules: CommonsRules,
    harvest_policy: HarvestPolicy,
    n_seasons: int | None = None,
    rng: np.random.Generator | None = None,
) -> list[SeasonResult]:
    """Play seasons from the start stock until the group collapses (that season included, as
    GovSim ends then) or `n_seasons` (default `rules.n_seasons`) have been played."""
    n = rules.n_seasons if n_seasons is None else n_seasons
    if n < 1:
        raise ValueError(f"n_seasons must be at least 1 (got {n})")
    seasons: list[SeasonResult] = []
    stock = rules.start_stock
    for t in range(n):
        result = step(rules, stock, list(harvest_policy(rules, t, stock)), rng)
        seasons.append(result)
        if result.collapsed:
            break
        stock = result.next_stock
    return seasons


def sustainable_policy() -> HarvestPolicy:
    """Each agent asks GovSim's threshold (stock // 2) // N."""

    def policy(rules: CommonsRules, season: int, stock: int) -> list[int]:
        share = min(rules.max_catch, sustainable_catch(stock, rules.n_agents))
        return [share] * rules.n_agents

    return policy


def greedy_policy() -> HarvestPolicy:
    """Each agent asks as much as it may: min(max_catch, stock)."""

    def policy(rules: CommonsRules, season: int, stock: int) -> list[int]:
        return [min(rules.max_catch, stock)] * rules.n_agents

    return policy


def fixed_policy(amount: int) -> HarvestPolicy:
    """Each agent asks `amount` every season."""
    if amount < 0:
        raise ValueError(f"a fixed harvest must be at least 0 (got {amount})")

    def policy(rules: CommonsRules, season: int, stock: int) -> list[int]:
        return [amount] * rules.n_agents

    return policy


def outsider_policy(arrival: int = 3, outsider_amount: int | None = None) -> HarvestPolicy:
    """GovSim's perturbation_outsider: the last agent is absent (asks 0) before season
    `arrival`, then asks min(max_catch, stock) (or `outsider_amount`); the N - 1 incumbents each
    ask (stock // 2) // (N - 1) throughout, GovSim's threshold with its configured 4 agents."""
    if arrival < 0:
        raise ValueError(f"the outsider's arrival must be a season index >= 0 (got {arrival})")
    if outsider_amount is not None and outsider_amount < 0:
        raise ValueError(f"the outsider's harvest must be at least 0 (got {outsider_amount})")

    def policy(rules: CommonsRules, season: int, stock: int) -> list[int]:
        if rules.n_agents < 2:
            raise ValueError("the outsider variant needs at least 2 agents")
        share = min(rules.max_catch, sustainable_catch(stock, rules.n_agents - 1))
        if season < arrival:
            outsider = 0
        elif outsider_amount is None:
            outsider = min(rules.max_catch, stock)
        else:
            outsider = outsider_amount
        return [share] * (rules.n_agents - 1) + [outsider]

    return policy


def fixed_collapse_season(
    n_agents: int, amount: int, capacity: int = 100, collapse_below: int = 5
) -> int | None:
    """The 0-based season a group of `n_agents` each asking `amount` collapses in, from a full
    lake with doubling regrowth (the closed form of the module docstring); None when H <= C / 2
    and the stock stays full."""
    total = n_agents * amount
    if capacity - total < collapse_below:
        return 0
    if 2 * total <= capacity:
        return None
    d = 2 * total - capacity
    return (max(0, total - collapse_below) // d).bit_length()
