"""The study recipes read replies as the authors' parsers read them.

Each table row is a reply and the outcome the AUTHORS' code gives it, worked out by hand from
their parser (never by running pdbench, nor their code):

- Fontana, Pittis & Perini 2024 (NicoloFontana/nicer_than_humans_icwsm25):
  src/utils.py `find_json_object`: (1) an apostrophe between two ASCII letters becomes a comma,
  (2) every other apostrophe becomes a double quote, (3) from the first "{" the characters are
  collected while counting "{" and "}" - inside strings too - until the count is back to 0; if
  it never is, no object (None); (4) `json.loads` of that text, None when it raises.
  src/strategies/one_vs_one_pd_llm_strategy.py `play`: None -> Defect (a warning); else
  `answer["action"]`, a missing key -> Defect (a warning); src/game/two_players_pd_utils.py
  `from_nat_lang`: == "Cooperate" -> Cooperate, == "Defect" -> Defect, anything else -> Defect
  (a warning). A warning is a reply their code could not read: here a parse failure, played as
  D (`on_parse_failure: defect`, no re-prompt).
- Akata et al. 2023 (eliaka/repeatedgames, pd/query_main.py): the answer is the completion,
  `.strip()`-ed (act_llama2, act_claude2, act_gpt35, act_gpt3), and `calculate_points` counts only
  "J" and "F" exactly; anything else scores -9999 and is a failed reading here (played as F,
  the listed deviation).

Outcome per row: "C" / "D" (their code read that move) or "fail" (their code could not read it:
a defection counted as a failure).
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
import yaml
from tests.support.cli import run_in_process

from pdbench.agents.llm import LLMAgent
from pdbench.agents.providers.base import Completion, CompletionRequest, ProviderBase
from pdbench.core.config import LLMAgentConfig
from pdbench.core.transcript import Transcript
from pdbench.core.types import Action
from pdbench.runners.config.loader import LoadedConfig, load_config

REPO = Path(__file__).resolve().parents[2]

FONTANA_REPLIES: list[tuple[str, str, str]] = [
    # (why, reply, the authors' outcome)
    ("the form they asked for (GPT-3.5's stored replies)", '{"action": "Cooperate"}', "C"),
    ("the form they asked for", '{"action": "Defect"}', "D"),
    ("spaces and newlines around and inside", '  \n{ "action" : "Cooperate" }\n', "C"),
    ("single quotes: step 2 makes them double", "{'action': 'Cooperate'}", "C"),
    ("mixed quotes, same", "{\"action\": 'Defect'}", "D"),
    ("text before and after: only the object is loaded", 'I pick {"action": "Defect"} now.', "D"),
    (  # Llama-2's chatter around the object (their stored llama2_v00 replies)
        "text around the object, other keys",
        '  Sure! { "action": "Defect", "reason": "They defected." }\n\nAnything else?',
        "D",
    ),
    (
        "a Markdown fence around it (Llama-3's stored replies)",
        '```\n{"action": "Cooperate"}\n```',
        "C",
    ),
    ("a stray } before the first {: collecting starts at the {", '}{"action": "Cooperate"}', "C"),
    ("other keys beside action", '{"action": "Cooperate", "reason": "B cooperated"}', "C"),
    (
        "a nested object before action: the count handles depth",
        ('{"details": {"round": 5}, "action": "Cooperate"}'),
        "C",
    ),
    ("two objects: only the first counts", '{"action": "Defect"} {"action": "Cooperate"}', "D"),
    (
        "a repeated key: json.loads keeps the last",
        ('{"action": "Cooperate", "action": "Defect"}'),
        "D",
    ),
    ("NaN is valid for Python's json.loads", '{"action": "Defect", "p": NaN}', "D"),
    ("I'll -> I,ll (step 1), outside the object", 'I\'ll cooperate: {"action": "Cooperate"}', "C"),
    (
        "it's -> it,s inside a string: still valid",
        ('{"action": "Cooperate", "reason": "it\'s fair"}'),
        "C",
    ),
    (
        "B's -> B,s inside single quotes, then ' -> \"",
        ("{'action': 'Cooperate', 'reason': 'B's move'}"),
        "C",
    ),
    # --- what their parser cannot read: a defection
    ("cut at the token limit: the count never returns to 0", '{"action": "Coop', "fail"),
    ("cut inside a reason", 'Sure! {"action": "Cooperate", "reason": "B has been', "fail"),
    ("only an opening brace", "{", "fail"),
    ("a trailing comma: json.loads raises", '{"action": "Cooperate",}', "fail"),
    ("a missing comma", '{"action": "Cooperate" "reason": "x"}', "fail"),
    ("a broken quote: the } closes an unterminated string", '{"action": "Cooperate}', "fail"),
    ("an unquoted key", '{action: "Cooperate"}', "fail"),
    (
        "players' -> players\" (not between letters): the string breaks",
        ('{"action": "Cooperate", "reason": "the players\' points"}'),
        "fail",
    ),
    (
        "a } inside a string ends the object early",
        ('{"action": "Cooperate", "reason": "a } here"}'),
        "fail",
    ),
    (
        "a newline inside a string: json.loads refuses control characters",
        ('{"action": "Cooperate\n"}'),
        "fail",
    ),
    ("curly quotes are not JSON", "{\u201caction\u201d: \u201cCooperate\u201d}", "fail"),
    ("the first object has no action (KeyError)", '{"x": 1} {"action": "Cooperate"}', "fail"),
    ("Action is not action", '{"Action": "Cooperate"}', "fail"),
    ("lower case: from_nat_lang compares exactly", '{"action": "cooperate"}', "fail"),
    ("a space inside the value", '{"action": " Cooperate"}', "fail"),
    ("a full stop inside the value", '{"action": "Cooperate."}', "fail"),
    ("an object as the value", '{"action": {"move": "Cooperate"}}', "fail"),
    ("no object at all", "I would cooperate.", "fail"),
    ("the empty reply (their client's reply to a failed call)", "", "fail"),
]

AKATA_REPLIES: list[tuple[str, str, str]] = [
    ("the bare letter", "J", "C"),
    ("the bare letter", "F", "D"),
    ("a completion's leading space: stripped", " J", "C"),
    ("a newline after it: stripped", "F\n", "D"),
    ("tabs and spaces: stripped", "\t F ", "D"),
    ("lower case is not J", "j", "fail"),
    ("lower case is not F", "f", "fail"),
    ('"J." is not J', "J.", "fail"),
    ("the option's name", "Option J", "fail"),
    ("both letters", "JF", "fail"),
    ("two words", "J F", "fail"),
    ("quoted", '"J"', "fail"),
    ("a full-width J", "\uff2a", "fail"),
    ("another letter", "K", "fail"),
    ("the word the prompt ends with", "Option", "fail"),
    ("only whitespace", "  ", "fail"),
    ("empty", "", "fail"),
]


class Replies(ProviderBase):
    """Answers every call with the next scripted reply."""

    name = "scripted"

    def __init__(self, cfg: LLMAgentConfig, replies: list[str]) -> None:
        super().__init__(cfg, None)
        self.replies = list(replies)

    async def complete(self, request: CompletionRequest) -> Completion:
        return Completion(text=self.replies.pop(0))


@pytest.fixture(scope="module")
def fontana() -> LoadedConfig:
    return load_config(REPO / "configs/studies/fontana2024.yaml")


@pytest.fixture(scope="module")
def akata() -> LoadedConfig:
    return load_config(REPO / "configs/studies/akata2023.yaml")


def moves(loaded: LoadedConfig, replies: list[str]) -> list[tuple[Action, bool]]:
    """The recipe's LLM agent's move for each reply in round 1: (move, counted as a failure)."""
    spec = next(s for s in loaded.agents.values() if getattr(s.config, "type", None) == "llm")
    cfg = spec.config
    matrix = loaded.config.game.matrix()
    obs = Transcript(matrix).observation(
        0,
        history_window=cfg.history_window,
        include_totals=cfg.include_totals,
        horizon_type="fixed",
        total_rounds=loaded.config.horizon.n_rounds,
    )
    out = []
    for reply in replies:
        provider = Replies(cfg, [reply])
        decision = asyncio.run(LLMAgent(cfg, provider, spec.templates, matrix).decide(obs))
        assert not provider.replies and len(decision.attempts) == 1  # no re-prompt
        out.append((decision.action, decision.parse_failure))
    return out


def expected(outcome: str) -> tuple[Action, bool]:
    """A failure is played as a defection and counted as a failure."""
    return {"C": (Action.C, False), "D": (Action.D, False), "fail": (Action.D, True)}[outcome]


@pytest.mark.parametrize(
    ("spec_name", "table"),
    [
        ("fontana", FONTANA_REPLIES),
        ("akata", AKATA_REPLIES),
    ],
)
def test_each_reply_gets_the_move_the_authors_parser_gives(
    spec_name: str, table: list[tuple[str, str, str]], request: pytest.FixtureRequest
) -> None:
    loaded = request.getfixturevalue(spec_name)
    got = moves(loaded, [reply for _, reply, _ in table])
    wrong = [
        (why, reply, outcome, got_move)
        for (why, reply, outcome), got_move in zip(table, got, strict=True)
        if got_move != expected(outcome)
    ]
    assert not wrong
    # the same counts as theirs: defections, and the replies their code could not read
    n_fail = sum(outcome == "fail" for _, _, outcome in table)
    n_d = sum(outcome in ("D", "fail") for _, _, outcome in table)
    assert sum(failed for _, failed in got) == n_fail
    assert sum(move is Action.D for move, _ in got) == n_d


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"parse": "akata"}, "unknown parse mode 'akata' (valid: akata_exact, fontana_json)"),
        (
            {"parse": "fontana_json"},
            "parse fontana_json reads output_format json (this agent's is token)",
        ),
        ({"answer_pattern": "exact"}, "parse (akata_exact) and answer_pattern are two ways"),
    ],
)
def test_a_parse_mode_that_cannot_apply_is_one_line_and_exit_2(
    change: dict[str, str], words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configs = tmp_path / "configs"
    shutil.copytree(REPO / "configs", configs)
    recipe = configs / "studies" / "akata2023.yaml"
    data = yaml.safe_load(recipe.read_text())
    data["experiment"]["conditions"] = data["experiment"]["conditions"][:1]
    data["experiment"]["conditions"][0]["agent_a"]["overrides"].update(change)
    recipe.write_text(yaml.safe_dump(data, sort_keys=False))
    code, _, err = run_in_process(["validate", str(recipe)], capsys)
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2 and len(lines) == 1 and words in lines[0], err
    assert lines[0].startswith(f"{recipe}: experiment.conditions[0].agent_a.overrides.parse: ")


def test_the_deviations_name_what_the_recipes_still_do_otherwise(
    akata: LoadedConfig, fontana: LoadedConfig
) -> None:
    """Each difference from the authors' code that the audit of issue 29 found is listed once,
    and the parsing, now theirs, is no longer listed."""

    def listed(loaded: LoadedConfig, *words: str) -> int:
        assert loaded.published is not None
        return sum(all(w in d for w in words) for d in loaded.published["deviations"])

    games = akata.config.experiment.replicates
    assert listed(akata, f"plays {games} games", "played each ordered pair of players once") == 1
    assert listed(akata, "Option order") == 1
    assert listed(akata, "-9999 points for both players", "raw answer") == 1
    assert listed(akata, "GPT-4's chat reply") == 1
    assert listed(akata, "Llama-2's temperature", "1e-6") == 1
    assert listed(fontana, "Hugging Face client", "OpenAI client", "Defect") == 1
    assert listed(fontana, "Parsing") == listed(fontana, "regular expression") == 0
