"""The study recipes render the authors' own prompts, byte for byte, and prompt_mode completion
reaches a completion endpoint (a fake OpenAI-compatible server on 127.0.0.1) and the mock.

The expected texts are the authors' strings, not pdbench output:
- Akata et al. 2023: eliaka/repeatedgames, pd/query_main.py (the `question` string, the history
  line and the "Q: ... A: Option" request, concatenated as their loop does; payoffs from their
  `calculate_points`).
- Fontana et al. 2024, third person: the prompts their code sent, as stored in their released
  data, NicoloFontana/nicer_than_humans_icwsm25,
  relevant_runs_copies/main_runs_copies/comprehension_questions_runs/gpt35t_v10_questions/
  action_answers/A_action_answers_1.json (entries "0" and "12"), written by src/llm_utils.py.
- Fontana et al. 2024, second person: the same repository at commit aab3ef71,
  old_prompts/v0.1/prompt.txt (their saved v0.1 prompt after 5 rounds).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.support.cli import run_in_process

from pdbench.agents.llm import LLMAgent
from pdbench.agents.providers.base import CompletionRequest, ProviderBase, provider_entry
from pdbench.agents.providers.mock import MockProvider
from pdbench.agents.providers.openai import OpenAIProvider
from pdbench.core.config import BudgetConfig, LLMAgentConfig
from pdbench.core.transcript import Transcript
from pdbench.core.types import Action
from pdbench.errors import ConfigError
from pdbench.runners.config.loader import AgentSpec, LoadedConfig, load_config
from pdbench.runners.engine.broker import Budget, CallBroker

REPO = Path(__file__).resolve().parents[2]
AKATA = REPO / "configs/studies/akata2023.yaml"
FONTANA = REPO / "configs/studies/fontana2024.yaml"

# --- the authors' strings -------------------------------------------------------------------

# eliaka/repeatedgames, pd/query_main.py: `question` (num_interactions = 10) ...
AKATA_QUESTION = (
    "You are playing a game repeatedly with another player. In this game, you can choose between Option J and Option F. "
    "You will play 10 rounds in total with the same player. "
    "The rules of the game are as follows:\n"
    "If you choose Option J and the other player chooses Option J, then you win 8 points and the other player wins 8 points.\n"
    "If you choose Option J and the other player chooses Option F, then you win 0 points and the other player wins 10 points.\n"
    "If you choose Option F and the other player chooses Option J, then you win 10 points and the other player wins 0 points.\n"
    "If you choose Option F and the other player chooses Option F, then you win 5 points and the other player wins 5 points.\n\n"
)
# ... `calculate_points` ...
AKATA_POINTS = {("J", "J"): (8, 8), ("J", "F"): (0, 10), ("F", "J"): (10, 0), ("F", "F"): (5, 5)}


def akata_prompt(moves: list[tuple[str, str]], order: tuple[str, str]) -> str:
    """Their prompt for the next round after `moves` (mine, theirs), the options in `order`:
    question + conversation history + the round's request, as their loop concatenates them."""
    history = ""
    for i, (mine, theirs) in enumerate(moves, start=1):
        won, other = AKATA_POINTS[(mine, theirs)]
        history += (
            f"In round {i}, you chose Option "
            + mine
            + " and the other player chose Option "
            + theirs
            + f". Thus, you won {won} points and the other player won {other} points.\n"
        )
    i = len(moves) + 1
    return (
        AKATA_QUESTION
        + history
        + f"\nYou are currently playing round {i}.\nQ: Which Option do you choose, Option "
        + order[0]
        + " or Option "
        + order[1]
        + "?\nA: Option"
    )


FONTANA_ROUND_1 = (
    "<s>[INST] <<SYS>>\n"
    "Context: Player A and player B are playing a multi-round game.\n"
    'At each turn player A and player B simultaneously perform one of the following actions: {"Cooperate", "Defect"}\n'
    "The payoffs for each combination of chosen actions are the following:\n"
    'If A plays "Defect" and B plays "Defect", A collects 1 points and B collects 1 points.\n'
    'If A plays "Defect" and B plays "Cooperate", A collects 5 points and B collects 0 points.\n'
    'If A plays "Cooperate" and B plays "Defect", A collects 0 points and B collects 5 points.\n'
    'If A plays "Cooperate" and B plays "Cooperate", A collects 3 points and B collects 3 points.\n'
    "They will play a total of 100 rounds of this game.\n"
    "Remember that a player's objective is to get the highest possible amount of points in the long run.<<SYS>>\n"
    "This is the first round of the game.\n"
    'Remember to use only the following JSON format: {"action": <ACTION_of_A>}\n'
    "Answer saying which action player A should play.Remember to answer using the right format.[/INST]\n"
)
FONTANA_ROUND_13 = (
    "<s>[INST] <<SYS>>\n"
    "Context: Player A and player B are playing a multi-round game.\n"
    'At each turn player A and player B simultaneously perform one of the following actions: {"Cooperate", "Defect"}\n'
    "The payoffs for each combination of chosen actions are the following:\n"
    'If A plays "Defect" and B plays "Defect", A collects 1 points and B collects 1 points.\n'
    'If A plays "Defect" and B plays "Cooperate", A collects 5 points and B collects 0 points.\n'
    'If A plays "Cooperate" and B plays "Defect", A collects 0 points and B collects 5 points.\n'
    'If A plays "Cooperate" and B plays "Cooperate", A collects 3 points and B collects 3 points.\n'
    "They will play a total of 100 rounds of this game.\n"
    "Remember that a player's objective is to get the highest possible amount of points in the long run.<<SYS>>\n"
    "The history of the game in the last 12 rounds is the following:\n"
    'Round 1: A played "Cooperate" and B played "Cooperate" A collected 3 points and B collected 3 points.\n'
    'Round 2: A played "Cooperate" and B played "Defect" A collected 0 points and B collected 5 points.\n'
    'Round 3: A played "Defect" and B played "Defect" A collected 1 points and B collected 1 points.\n'
    'Round 4: A played "Cooperate" and B played "Cooperate" A collected 3 points and B collected 3 points.\n'
    'Round 5: A played "Cooperate" and B played "Defect" A collected 0 points and B collected 5 points.\n'
    'Round 6: A played "Defect" and B played "Defect" A collected 1 points and B collected 1 points.\n'
    'Round 7: A played "Cooperate" and B played "Cooperate" A collected 3 points and B collected 3 points.\n'
    'Round 8: A played "Cooperate" and B played "Cooperate" A collected 3 points and B collected 3 points.\n'
    'Round 9: A played "Cooperate" and B played "Cooperate" A collected 3 points and B collected 3 points.\n'
    'Round 10: A played "Cooperate" and B played "Cooperate" A collected 3 points and B collected 3 points.\n'
    'Round 11: A played "Cooperate" and B played "Cooperate" A collected 3 points and B collected 3 points.\n'
    'Round 12: A played "Cooperate" and B played "Defect" A collected 0 points and B collected 5 points.\n'
    'In total, A chose "Cooperate" 10 times and chose "Defect" 2 times, B chose "Cooperate" 7 times and chose "Defect" 5 times.\n'
    "In total, A collected 23 points and B collected 38 points.\n"
    "Current round: 13.\n"
    'Remember to use only the following JSON format: {"action": <ACTION_of_A>}\n'
    "Answer saying which action player A should play.Remember to answer using the right format.[/INST]\n"
)
FONTANA_V01_ROUND_6 = (
    "<s>[INST] <<SYS>>\n"
    "\tContext: You are playing a multi-round game against an opponent.\n"
    '\tAt each turn you and your opponent simultaneously perform one of the following actions: "{"Cooperate", "Defect"}"\n'
    "\tThe payoffs for each combination of chosen action are the following:\n"
    '\tIf you play "Defect" and the opponent plays "Defect", you get 1 points and the opponent gets 1 points.\n'
    '\tIf you play "Defect" and the opponent plays "Cooperate", you get 5 points and the opponent gets 0 points.\n'
    '\tIf you play "Cooperate" and the opponent plays "Defect", you get 0 points and the opponent gets 5 points.\n'
    '\tIf you play "Cooperate" and the opponent plays "Cooperate", you get 3 points and the opponent gets 3 points.\n'
    "\tYou and your opponent will play a total of 100 rounds of this game.\n"
    "\tRemember that your objective is to get the highest possible amount of points in the long run.\n"
    '\tIn round 1 you played "Cooperate" and your opponent played "Defect". You got 0 points and your opponent got 5 points.\n'
    '\tIn round 2 you played "Defect" and your opponent played "Cooperate". You got 5 points and your opponent got 0 points.\n'
    '\tIn round 3 you played "Cooperate" and your opponent played "Defect". You got 0 points and your opponent got 5 points.\n'
    '\tIn round 4 you played "Defect" and your opponent played "Cooperate". You got 5 points and your opponent got 0 points.\n'
    '\tIn round 5 you played "Cooperate" and your opponent played "Defect". You got 0 points and your opponent got 5 points.\n'
    '\tIn total, you chose "Cooperate" 3 times and chose "Defect" 2 times, your opponent chose "Cooperate" 2 times and chose "Defect" 3 times.\n'
    "\tIn total, you collected 10 points and your opponent collected 15 points.\n"
    "\tNow it is round 6.\n"
    '\tRemember to use only the following JSON format: {"action": <ACTION_of_A>, "reason": <YOUR_REASON>}<<SYS>>\n'
    "\tAnswer saying which action player A should play.[/INST]"
)


# --- helpers --------------------------------------------------------------------------------


def llm_specs(loaded: LoadedConfig) -> list[AgentSpec]:
    return [s for s in loaded.agents.values() if getattr(s.config, "type", None) == "llm"]


def spec_with_round(loaded: LoadedConfig, opening: str) -> AgentSpec:
    """The LLM agent whose round template starts with `opening` (a framing of the sweep)."""
    return next(s for s in llm_specs(loaded) if s.templates.round.startswith(opening))


def sent_text(
    spec: AgentSpec,
    loaded: LoadedConfig,
    moves: list[tuple[str, str]],
    *,
    side: int = 0,
    seed: int = 0,
    **update: Any,
) -> str:
    """The text the agent sends (system + round prompt: prompt_mode user or completion) after
    `moves`, each (this agent's move, the other's) in the agent's labels."""
    cfg = spec.config.model_copy(update=update)
    matrix = loaded.config.game.matrix()
    agent = LLMAgent(cfg, MockProvider(cfg), spec.templates, matrix.seen_by(side))
    agent.reset(seed)
    move = {cfg.labels()[0]: Action.C, cfg.labels()[1]: Action.D}
    transcript = Transcript(matrix)
    for mine, theirs in moves:
        pair = (move[mine], move[theirs])
        transcript.record(*(pair if side == 0 else pair[::-1]))
    obs = transcript.observation(
        side,
        history_window=cfg.history_window,
        include_totals=cfg.include_totals,
        horizon_type="fixed",
        total_rounds=loaded.config.horizon.n_rounds,
    )
    return agent.system_prompt + agent.round_prompt(obs)


@pytest.fixture(scope="module")
def akata() -> LoadedConfig:
    return load_config(AKATA)


@pytest.fixture(scope="module")
def fontana() -> LoadedConfig:
    return load_config(FONTANA)


# --- Akata et al. 2023 ----------------------------------------------------------------------


def test_akata_recipe_renders_the_authors_prompt_in_both_seats(akata: LoadedConfig) -> None:
    specs = llm_specs(akata)
    assert len(specs) == 8  # 3 opponents x 2 seats + both seats of the self-play
    spec = specs[0]
    cfg = spec.config
    assert (cfg.prompt_mode, cfg.max_tokens, cfg.temperature, cfg.labels()) == (
        "completion",
        1,
        0.0,
        ("J", "F"),
    )
    both = {akata_prompt([], ("J", "F")), akata_prompt([], ("F", "J"))}
    assert sent_text(spec, akata, []) in both
    # against defect-once: it defected once, the LLM answered J then F
    moves = [("J", "F"), ("F", "J"), ("F", "J")]
    for side in (0, 1):
        for seed in range(4):
            text = sent_text(spec, akata, moves, side=side, seed=seed)
            assert text in {akata_prompt(moves, ("J", "F")), akata_prompt(moves, ("F", "J"))}
    # the order of the options is drawn per round, as their random.shuffle does
    orders = {
        sent_text(spec, akata, moves[:1] * k, seed=7).endswith("Option F or Option J?\nA: Option")
        for k in range(10)
    }
    assert orders == {True, False}


def test_akata_recipe_plays_every_paper_opponent_in_both_seats(akata: LoadedConfig) -> None:
    conditions = {c.name: c for c in akata.config.experiment.conditions}
    seat_a = {
        n: c.agent_b.policy
        for n, c in conditions.items()
        if c.agent_a.type == "llm" and c.agent_b.type == "policy"
    }
    seat_b = {
        n: c.agent_a.policy
        for n, c in conditions.items()
        if c.agent_b.type == "llm" and c.agent_a.type == "policy"
    }
    # pd/query_main.py: act_defect_once, act_j, act_f besides the LLMs
    assert sorted(seat_a.values()) == sorted(seat_b.values()) == ["ALLC", "ALLD", "DEFECT_ONCE"]
    assert conditions["llm_vs_itself"].agent_b.type == "llm"
    assert akata.config.horizon.n_rounds == 10


# --- Fontana et al. 2024 --------------------------------------------------------------------

THIRD = "<s>[INST] <<SYS>>\nContext: Player A"
SECOND = "<s>[INST] <<SYS>>\n\tContext: You"
# The 12 rounds of their stored round-13 prompt: (A, B).
STORED_12 = (
    [
        ("Cooperate", "Cooperate"),
        ("Cooperate", "Defect"),
        ("Defect", "Defect"),
        ("Cooperate", "Cooperate"),
        ("Cooperate", "Defect"),
        ("Defect", "Defect"),
    ]
    + [("Cooperate", "Cooperate")] * 5
    + [("Cooperate", "Defect")]
)


def test_fontana_third_person_is_their_stored_prompt(fontana: LoadedConfig) -> None:
    spec = spec_with_round(fontana, THIRD)
    cfg = spec.config
    assert (cfg.max_tokens, cfg.temperature, cfg.labels(), cfg.output_format) == (
        128,
        0.7,
        ("Cooperate", "Defect"),
        "json",
    )
    assert sent_text(spec, fontana, []) == FONTANA_ROUND_1
    # their stored run showed every round (no window) ...
    assert sent_text(spec, fontana, STORED_12, history_window=None) == FONTANA_ROUND_13
    # ... the published runs the last 10 (start = max(0, len - window) in their code); the
    # counts and totals stay over the whole game
    lines = FONTANA_ROUND_13.split("\n")
    windowed = "\n".join(
        line for line in lines if not line.startswith(("Round 1:", "Round 2:"))
    ).replace("in the last 12 rounds", "in the last 10 rounds")
    assert sent_text(spec, fontana, STORED_12) == windowed


def test_fontana_second_person_is_their_v01_prompt(fontana: LoadedConfig) -> None:
    spec = spec_with_round(fontana, SECOND)
    moves = [("Cooperate", "Defect"), ("Defect", "Cooperate")] * 2 + [("Cooperate", "Defect")]
    assert sent_text(spec, fontana, moves, history_window=None) == FONTANA_V01_ROUND_6


def test_fontana_framings_are_a_sweep_axis_and_the_published_numbers_are_third_person(
    fontana: LoadedConfig,
) -> None:
    axis = "agent_a.overrides.prompts.round"
    framings = {c[axis] for c in fontana.sweep_coordinates.values()}
    assert framings == {
        "prompts/fontana2024_third_person.md",
        "prompts/fontana2024_second_person.md",
    }
    assert len(fontana.sweep_coordinates) == 22
    published = fontana.published
    assert published is not None
    for comparison in published["comparisons"]:
        assert comparison["where"] == {axis: "prompts/fontana2024_third_person.md"}
    assert published["deviations"]


# --- prompt_mode completion over HTTP and with the mock ---------------------------------------


class _Completions(BaseHTTPRequestHandler):
    """POST /v1/completions answers " F" (a one-token continuation); GET /v1/models lists m."""

    bodies: list[dict[str, Any]]
    paths: list[str]

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def _send(self, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.paths.append(self.path)
        self._send({"object": "list", "data": [{"id": "m", "object": "model"}]})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.paths.append(self.path)
        self.bodies.append(json.loads(self.rfile.read(length)))
        self._send(
            {
                "id": "cmpl-1",
                "object": "text_completion",
                "model": "m",
                "choices": [{"index": 0, "text": " F", "finish_reason": "length"}],
                "usage": {"prompt_tokens": 300, "completion_tokens": 1, "total_tokens": 301},
            }
        )


@pytest.fixture
def completion_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, type[_Completions]]]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    handler = type("Handler", (_Completions,), {"bodies": [], "paths": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler
    finally:
        server.shutdown()
        server.server_close()


def test_completion_mode_posts_the_plain_text_to_v1_completions(
    akata: LoadedConfig, completion_server: tuple[str, type[_Completions]]
) -> None:
    base_url, handler = completion_server
    spec = llm_specs(akata)[0]
    cfg = spec.config.model_copy(update={"provider": "openai", "model": "m", "base_url": base_url})
    text = akata_prompt([("J", "F")], ("J", "F"))
    request = CompletionRequest(
        system="", prompt=text, temperature=0.0, max_tokens=1, seed=5, mode="completion"
    )

    async def call() -> Any:
        provider = OpenAIProvider(cfg, None)
        try:
            return await provider.complete(request)
        finally:
            await provider.aclose()

    completion = asyncio.run(call())
    assert handler.paths == ["/v1/completions"]
    body = handler.bodies[0]
    assert body["prompt"] == text and "messages" not in body
    assert (body["max_tokens"], body["temperature"], body["model"]) == (1, 0.0, "m")
    assert (completion.text, completion.finish_reason, completion.input_tokens) == (
        " F",
        "length",
        300,
    )


def test_akata_runs_in_completion_mode_over_http(
    tmp_path: Path,
    completion_server: tuple[str, type[_Completions]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    base_url, handler = completion_server
    configs = tmp_path / "configs"
    shutil.copytree(REPO / "configs", configs)
    recipe = configs / "studies" / "akata2023.yaml"
    data = yaml.safe_load(recipe.read_text())
    data["experiment"]["replicates"] = 1
    data["experiment"]["conditions"] = data["experiment"]["conditions"][:1]
    data["experiment"]["conditions"][0]["agent_a"]["overrides"].update(
        provider="openai", model="m", base_url=base_url
    )
    data["experiment"].pop("published")
    recipe.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "run"
    code, _, err = run_in_process(["run", str(recipe), "-o", str(out)], capsys)
    assert code == 0, err
    prompts = [b["prompt"] for b in handler.bodies]
    assert len(prompts) == 10 and all(p.endswith("?\nA: Option") for p in prompts)
    # the model always answered F; defect-once played F then J
    theirs = ["F"] + ["J"] * 8
    assert prompts[-1] in {
        akata_prompt(list(zip(["F"] * 9, theirs, strict=True)), order)
        for order in (("J", "F"), ("F", "J"))
    }
    rounds = [json.loads(line) for line in (out / "rounds.jsonl").read_text().splitlines()]
    assert [r["agent_a_intended_action"] for r in rounds] == ["D"] * 10


@pytest.mark.slow
def test_llamacpp_completion_mode_sends_the_text_without_a_chat_template() -> None:
    """The real llama.cpp server (SmolLM2-135M, a dev dependency): prompt_mode completion goes
    to /v1/completions, so the prompt is the text's own tokens; the same text as a chat message
    is wrapped in the model's chat template and counts more."""
    cfg = LLMAgentConfig.model_validate(
        {
            "type": "llm",
            "provider": "llamacpp",
            "model": "smollm2-135m-instruct",
            "max_concurrency": 1,
            "n_threads": 1,
            "prompts": {"system": "s.md", "round": "r.md", "personas_dir": "personas"},
        }
    )
    text = akata_prompt([("J", "F")], ("J", "F"))

    async def scenario() -> tuple[Any, Any]:
        provider = provider_entry("llamacpp").factory(cfg, None)
        try:
            replies = []
            for mode in ("completion", "user"):
                request = CompletionRequest(
                    system="", prompt=text, temperature=0.0, max_tokens=1, seed=3, mode=mode
                )
                replies.append(await provider.complete(request))
            return replies[0], replies[1]
        finally:
            await provider.aclose()

    completion, chat = asyncio.run(scenario())
    assert completion.finish_reason == "length" and completion.output_tokens == 1
    assert completion.text  # one token continuing "A: Option"
    assert 100 < completion.input_tokens < chat.input_tokens


def test_the_mock_continues_a_completion_text(akata: LoadedConfig) -> None:
    cfg = llm_specs(akata)[0].config
    mock = MockProvider(
        cfg.model_copy(update={"mock": cfg.mock.model_copy(update={"invalid_rate": 0.0})})
    )
    text = akata_prompt([], ("J", "F"))
    replies = set()
    for seed in range(12):
        for mode in ("completion", "user"):
            request = CompletionRequest(
                system="",
                prompt=text,
                temperature=0.0,
                max_tokens=1,
                seed=seed,
                labels=("J", "F"),
                mode=mode,
            )
            replies.add((mode, asyncio.run(mock.complete(request)).text))
    # a continuation of "A: Option" in completion mode, the bare label in a chat message
    assert replies == {
        ("completion", " J"),
        ("completion", " F"),
        ("user", "J"),
        ("user", "F"),
    }


def test_the_response_cache_tells_prompt_modes_apart(akata: LoadedConfig) -> None:
    cfg = llm_specs(akata)[0].config
    broker = CallBroker(None, Budget(BudgetConfig()), None, 1)
    bound = broker.bind(
        ProviderBase(cfg, None), cfg, condition="c", replicate=0, agent_key="agent_a", game_seed=1
    )
    keys = {
        bound.key_for(CompletionRequest("", "text", 0.0, 1, mode=mode))
        for mode in ("chat", "user", "completion")
    }
    assert len(keys) == 3  # the same text sent another way is another call


# --- config errors --------------------------------------------------------------------------


def _edited_akata(tmp_path: Path, **overrides: Any) -> Path:
    configs = tmp_path / "configs"
    shutil.copytree(REPO / "configs", configs)
    recipe = configs / "studies" / "akata2023.yaml"
    data = yaml.safe_load(recipe.read_text())
    data["experiment"]["conditions"] = data["experiment"]["conditions"][:1]
    data["experiment"].pop("published")
    data["experiment"]["conditions"][0]["agent_a"]["overrides"].update(overrides)
    recipe.write_text(yaml.safe_dump(data, sort_keys=False))
    return recipe


@pytest.mark.parametrize(
    ("overrides", "ending"),
    [
        (
            {"prompt_mode": "complete"},
            "agent_a.overrides.prompt_mode: Input should be 'chat', 'user' or 'completion' "
            "(got 'complete')",
        ),
        (
            {"provider": "litellm", "model": "gpt-4"},
            "agent_a.overrides.prompt_mode: the litellm provider has no completion endpoint "
            "(providers with one: llamacpp, mock, openai; for a chat provider use prompt_mode "
            "user, the same text as one user message) (got 'completion')",
        ),
        (
            {"record_logprobs": True},
            "agent_a.overrides.prompt_mode: a completion sends plain text: output_format choice "
            "and record_logprobs need prompt_mode chat or user (got 'completion')",
        ),
    ],
)
def test_prompt_mode_errors_are_one_line(
    tmp_path: Path, overrides: dict[str, Any], ending: str
) -> None:
    recipe = _edited_akata(tmp_path, **overrides)
    with pytest.raises(ConfigError) as info:
        load_config(recipe)
    lines = [line for line in info.value.lines() if "prompt_mode" in line]
    assert len(lines) == 1, info.value.lines()
    assert (
        lines[0].startswith("akata2023.yaml: experiment.conditions[0].")
        or "akata2023.yaml" in lines[0]
    )
    assert lines[0].endswith(ending)


def test_a_part_beside_the_round_template_is_checked_and_named(tmp_path: Path) -> None:
    recipe = _edited_akata(tmp_path)
    (recipe.parent / "prompts" / "akata2023.history_line.md").write_text("In round {turn}\n")
    with pytest.raises(ConfigError) as info:
        load_config(recipe)
    (line,) = info.value.lines()
    assert line.endswith(
        "experiment.conditions[0].agent_a.overrides.prompts.round: its history_line part "
        "akata2023.history_line.md: template error: unknown placeholder {turn} (valid "
        "placeholders: round, my_move, opp_move, my_payoff, opp_payoff, C, D)"
    )


def test_a_where_outside_the_sweep_is_refused(tmp_path: Path) -> None:
    configs = tmp_path / "configs"
    shutil.copytree(REPO / "configs", configs)
    published = configs / "studies" / "fontana2024.published.yaml"
    data = yaml.safe_load(published.read_text())
    data["comparisons"][0]["where"] = {"agent_a.overrides.prompts.round": "prompts/other.md"}
    published.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(ConfigError) as info:
        load_config(configs / "studies" / "fontana2024.yaml")
    (line,) = info.value.lines()
    assert "comparisons[0].where.agent_a.overrides.prompts.round: not a value of this axis" in line
    assert line.endswith("(got 'prompts/other.md')")
