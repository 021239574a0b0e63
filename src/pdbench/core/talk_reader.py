"""Reading what a message says, as its reader (the partner) sees it: the rule reader (v2).

`read_message(text)` gives a `Reading`: the move the text commits its writer to (`C`, `D`),
a conditional commitment to cooperate (`conditional_C`), no statement of a move (`none`), or
`unread`: a text the reader cannot read, never counted as "no statement". `standing` says whether
the statement binds beyond the next move. The reader reads English only.

The rules (`READER_RULES` says them in one paragraph for the report):

1. **Language.** A text not in English (`pdbench.core.talk_language`) is `unread`, reason
   "language: de" (or "language: not English (cyrillic script)"). An empty text is `none`.
2. **Statements.** The text is cut into sentences (. ! ? and line breaks). A statement is a
   first person subject ("I", "we", "let's", "my plan is to") followed, within a few words
   ("will", "am going to", "promise to", "always", "keep", "both", ...), by a move phrase:
   C: cooperate, collaborate, be/stay cooperative, play nice/fair, work together, trust you, stay
   loyal, keep the peace, ...; D: defect, betray, cheat, go my own way, protect myself, look out
   for myself, take advantage, break our deal, let you down, ...; and the agent's move labels
   after "play/choose/pick/go with" ("I'll play J"), or alone as the whole message ("C", "J.").
   "You can trust me / count on me" and "I'll do my part" promise C. Past tense ("I
   cooperated") is not a statement.
3. **Negation and stopping.** Each "not"/"never"/"refuse" and each "stop/end/quit/cease/give
   up/abandon/no longer" between subject and move flips the move: "I will not defect" and "I
   will never defect" (and "never will I defect") are C, "I will stop cooperating", "I'll end
   our cooperation", "I'm done cooperating", "no more cooperation" are D, "I won't stop
   cooperating" is C.
4. **Hedges.** "might", "may", "maybe", "probably", "perhaps", "could", "whether", "thinking
   about" before the move (or just before the subject) make it no commitment (`none`).
5. **Conditions.** A statement in a sentence that makes it depend on the partner ("if you",
   "as long as you", "unless you", "until you", "provided you", "otherwise", "in return"), and
   reciprocity ("so will I", "I'll do the same", "I'll match/copy/mirror your move", "I reply in
   kind", "tit for tat") are `conditional_C` when they commit to C under the condition or
   threaten D against the partner's defection ("if you defect I'll defect"); "no matter what",
   "even if you" make a statement unconditional.
6. **Questions.** A question is `none`, except a proposal ("how about we cooperate?", "shall we
   work together?", "why don't we both cooperate?"), read as the move proposed; so are "let's"
   and "we should" statements.
7. **Several sentences.** An unconditional statement wins over a conditional one; unconditional
   C and D in one text are a contradiction: `unread`, reason "contradiction".
8. **Standing.** A statement stands beyond the next move when its text says so: "always",
   "never", "from now on", "every/each round", "for the rest of the game", "for good",
   "anymore", "as long as", "until", or a stop/end/no longer.
9. **Unread.** A sentence that mentions a move in the first person but matches no rule ("I think
   cooperation is the way") is `unread` (reason: "no rule reads ..."), unless another sentence
   is read; a move mentioned about the past or only about the partner is `none`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from pdbench.core.talk_language import ENGLISH, detect_language

# What a message can say about its writer's moves.
READINGS: tuple[str, ...] = ("C", "D", "conditional_C", "none", "unread")
READER_NAME = "rule reader v2 (English only)"
READER_RULES = (
    "English first-person statements of a move ('I will / I'll / let's / we should / my plan is "
    "to' + cooperate, work together, play nice, stay loyal, trust you, ... or defect, betray, go "
    "my own way, protect myself, ... or the agent's move label, also alone); 'not', 'never' and 'stop / end "
    "/ no longer' flip the move; 'might / maybe / probably' make it no commitment; 'if you / as "
    "long as you / unless you / so will I / I'll match your move' make it a conditional promise "
    "of C; a question is no statement unless it proposes ('how about we cooperate?'); C and D "
    "both stated is unread (a contradiction); a text not in English or a first-person mention of "
    "a move no rule reads is unread; 'always / never / from now on / every round / for the rest "
    "of the game' make it standing."
)


@dataclass(frozen=True, slots=True)
class Reading:
    """What one message says: `kind` (one of READINGS), whether it binds beyond the next move
    (`standing`), and for `unread`, why (`reason`, e.g. "language: de")."""

    kind: str
    standing: bool = False
    reason: str = ""

    def __post_init__(self) -> None:
        if self.kind not in READINGS:
            raise ValueError(f"a reading is one of {', '.join(READINGS)} (got {self.kind!r})")


# --------------------------------------------------------------------------------------------
# The lexicon (after `_normalize`: lower case, contractions spelt out)

C_PHRASES = (
    "cooperate", "cooperating", "cooperation", "co-operate", "co-operating", "collaborate",
    "collaborating", "be cooperative", "stay cooperative", "remain cooperative",
    "play cooperatively", "play nice", "play nicely", "playing nice", "play fair", "be nice",
    "be fair", "be friendly", "work together", "working together", "work with you",
    "trust you", "trusting you", "trust each other", "stay loyal", "be loyal", "remain loyal",
    "stay true", "be a team player", "team up", "keep the peace", "keep our deal",
    "honor our deal", "honour our deal", "stick with cooperation", "stick to cooperation",
    "choose cooperation", "go with cooperation", "pick cooperation", "hold up my end",
    "be generous", "help you", "help each other", "cooperative move", "cooperative option",
)  # fmt: skip
D_PHRASES = (
    "defect", "defecting", "defection", "betray", "betraying", "cheat", "cheating",
    "double-cross", "double cross", "backstab", "stab you in the back", "go my own way",
    "go it alone", "look out for myself", "look out for number one", "protect myself",
    "put myself first", "take advantage", "exploit you", "let you down", "be selfish",
    "play selfishly", "act selfishly", "retaliate", "punish you", "strike back", "turn on you",
    "break our deal", "break the deal", "break our agreement", "break my promise",
    "choose defection", "go with defection", "compete against you", "selfish move",
    "selfish option",
)  # fmt: skip
# Words allowed between the subject and the move phrase; some of them change the reading.
_NEGATIONS = frozenset({"not", "never", "refuse"})
_STOPS = frozenset(
    {"stop", "stopping", "end", "ending", "quit", "quitting", "cease", "abandon", "longer"}
)  # "no longer"; "give up", "be done" and "no more" are spelt "quit" by `_normalize`
_HEDGES = frozenset(
    {"might", "may", "maybe", "probably", "perhaps", "possibly", "could", "whether", "thinking"}
)
_FILLER = (
    "will shall would am are is be going to gonna promise intend plan want wanted commit choose "
    "decide decided have ready happy willing glad definitely certainly surely always absolutely "
    "totally really just also still again both all then now continue keep stay remain do no "
    "start begin try simply fully honestly truly only gladly hereby must should need give up our "
    "the this my further rather prefer for sure each and round too ever agree about"
).split()
_FILLER_WORDS = sorted({*_FILLER, *_NEGATIONS, *_STOPS, *_HEDGES})
_SUBJECT = r"i|we|let us|my (?:plan|intention|choice|move|decision|answer|strategy) is(?: to)?"
_PLAY_VERBS = r"(?:play|choose|pick|select|go with|answer|stick with|stay with|take)(?: option)?"
_LABEL_END = (
    r"(?=\s*(?:$|[,;:.!?'\")]|(?:this|next|now|again|in|for|from|every|each|all|and|but|then|"
    r"too|as|if|until|unless|so|always|forever)\b))"
)
_CONDITION = re.compile(
    r"\b(?:(?:if|as long as|so long as|provided(?: that)?|only if|unless|until|when|whenever|"
    r"once|the moment)\s+(?:you|your|the other|my (?:partner|opponent))|otherwise|or else|"
    r"in return|in exchange|if not)\b"
)
_UNCONDITIONAL = re.compile(
    r"\b(?:no matter what|whatever you do|regardless|even if you|whether or not you|"
    r"unconditionally)\b"
)
_RECIPROCITY = re.compile(
    r"\b(?:so will i|so do i|so shall i|i will too|i will as well|i will do the same|"
    r"i will do likewise|i will follow suit|me too|i will return the favou?r|tit for tat|"
    r"(?:i|we) (?:will |always |just |simply )*(?:match|copy|mirror|mimic|reciprocate|repay|"
    r"respond in kind|reply in kind|answer in kind|play what you|do what you|play whatever you|"
    r"follow your lead|treat you (?:as|the way) you treat me|do as you do)|"
    r"^(?:you )?cooperate(?:,| and) i (?:will )?cooperate)\b"
)
# Promises of C that name no move ("you can trust me").
_IMPLICIT_C = re.compile(r"\byou can (?:trust|count on|rely on) me\b|\bi will do my part\b")
_PARTNER_DEFECTS = re.compile(
    r"\b(?:you|your|the other|my (?:partner|opponent))\b[\w\s']{0,20}?\b(?:defect|defects|"
    r"betray|betrays|cheat|cheats|double-cross)|unless you"
)
_STANDING = re.compile(
    r"\b(?:always|never|forever|for good|from now on|from here on|henceforth|anymore|any more|"
    r"no longer|every round|each round|every time|all rounds|all game|whole game|entire game|"
    r"rest of the game|remainder of the game|until the end|throughout|as long as|so long as|"
    r"until)\b"
)
_PROPOSAL = re.compile(
    r"^(?:how about|what about|what if|why not|why do not we|shall we|should we|can we|"
    r"could we|would you like to|do you want to|want to|are you in|are you up for|ready to)\b"
)
_MOVE_STEM = re.compile(r"\b(?:co-?operat|collaborat|defect|betray|cheat|trust|loyal)")
_PAST = re.compile(
    r"\b(?:co-?operated|collaborated|defected|betrayed|cheated|trusted|last round|last time|"
    r"before|earlier|so far|was|were|did|had)\b"
)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_FIRST_PERSON = re.compile(r"\b(?:i|we|us|me|my|our)\b")
_CONTRACTIONS = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        (r"\bwon't\b", "will not"),
        (r"\bcan't\b", "cannot"),
        (r"\bshan't\b", "shall not"),
        (r"n't\b", " not"),
        (r"\blet's\b", "let us"),
        (r"\b(i|we|you|they)'ll\b", r"\1 will"),
        (r"\bi'm\b", "i am"),
        (r"\b(we|you|they)'re\b", r"\1 are"),
        (r"\b(i|we|you|they)'ve\b", r"\1 have"),
        (r"\b(i|we|you|they)'d\b", r"\1 would"),
        (r"\bgonna\b", "going to"),
        (r"\bwanna\b", "want to"),
        (r"\bnever (will|shall|would) (i|we)\b", r"\2 \1 never"),
        (r"\b(i|we) (?:am|are) done\b", r"\1 quit"),
        (r"\bgive up\b", "quit"),
        (r"^no more (cooperation|cooperating|defection|defecting)\b", r"i quit \1"),
        (r",\s*(?:right|ok|okay|yes|deal|agreed|alright)\s*\?", "."),
    )
)


def _normalize(text: str) -> str:
    lowered = " ".join(text.lower().replace("’", "'").replace("‘", "'").split())
    for pattern, replacement in _CONTRACTIONS:
        lowered = pattern.sub(replacement, lowered)
    return lowered


def _alternation(phrases: list[str]) -> str:
    return "|".join(re.escape(p) for p in sorted(phrases, key=len, reverse=True))


@lru_cache(maxsize=64)
def _statement_pattern(labels: tuple[str, str]) -> tuple[re.Pattern[str], dict[str, str]]:
    """The statement regex for these labels and the move of each phrase it can match."""
    moves = {p: "C" for p in C_PHRASES} | {p: "D" for p in D_PHRASES}
    label_moves = {}
    for label, move in ((labels[0].lower(), "C"), (labels[1].lower(), "D")):
        label_moves[label] = move
    fill = _alternation(_FILLER_WORDS)
    labels_alt = _alternation(list(label_moves))
    pattern = re.compile(
        rf"\b(?P<subject>{_SUBJECT})(?P<fill>(?:\s+(?:{fill}))*?)\s+"
        rf"(?:(?P<move>{_alternation(list(moves))})(?![\w-])"
        rf"|{_PLAY_VERBS}\s+(?P<label>{labels_alt}){_LABEL_END})"
    )
    return pattern, moves | {f"label:{k}": v for k, v in label_moves.items()}


@dataclass(frozen=True, slots=True)
class _Sentence:
    """What one sentence says: a kind (or "" for nothing read), standing, and a reason."""

    kind: str
    standing: bool = False
    reason: str = ""
    conditional: bool = False


def _statements(sentence: str, labels: tuple[str, str]) -> tuple[list[tuple[str, bool]], bool]:
    """The moves the sentence's statements state ((move, by a stop word)), and whether a
    hedged statement was seen."""
    pattern, moves = _statement_pattern(labels)
    found: list[tuple[str, bool]] = []
    hedged = False
    for match in pattern.finditer(sentence):
        fill = match.group("fill").split()
        before = sentence[: match.start()].split()[-3:]  # "maybe i will", "perhaps we"
        if any(word in _HEDGES for word in (*before, *fill)):
            hedged = True
            continue
        if match.group("move") is not None:
            move = moves[" ".join(match.group("move").split())]
        else:
            move = moves[f"label:{match.group('label')}"]
        stops = sum(word in _STOPS for word in fill)
        flips = sum(word in _NEGATIONS for word in fill) + stops
        if flips % 2:
            move = "D" if move == "C" else "C"
        found.append((move, stops > 0))
    if not found and _IMPLICIT_C.search(sentence):
        found.append(("C", False))
    return found, hedged


def _read_sentence(sentence: str, labels: tuple[str, str]) -> _Sentence:
    question = sentence.rstrip().endswith("?")
    body = sentence.rstrip(" .!?")
    found, hedged = _statements(body, labels)
    standing = bool(_STANDING.search(body)) or any(stop for _, stop in found)
    if question:
        if found and _PROPOSAL.search(body) and re.search(r"\b(?:we|us|together|both)\b", body):
            moves = {move for move, _ in found}
            if len(moves) == 1:
                return _Sentence(moves.pop(), standing)
        proposal = _PROPOSAL.search(body)
        if proposal and not found:
            c_only, _ = _statements("i " + body[proposal.end() :], labels)
            moves = {move for move, _ in c_only}
            if len(moves) == 1:
                return _Sentence(moves.pop(), standing)
        return _Sentence("none", reason="question")
    reciprocal = bool(_RECIPROCITY.search(body))
    conditional = bool(_CONDITION.search(body)) and not _UNCONDITIONAL.search(body)
    moves = {move for move, _ in found}
    if reciprocal or (conditional and found):
        if "C" in moves or reciprocal or _PARTNER_DEFECTS.search(body):
            return _Sentence("conditional_C", standing, conditional=True)
        return _Sentence("unread", reason="a condition the rules do not read", conditional=True)
    if len(moves) == 1:
        return _Sentence(moves.pop(), standing)
    if len(moves) == 2:
        return _Sentence("unread", reason="contradiction: states both C and D")
    if hedged:
        return _Sentence("none", reason="hedged")
    if (
        _MOVE_STEM.search(body)
        and _FIRST_PERSON.search(body)
        and not _PAST.search(body)
        and not body.startswith("thank")
    ):
        return _Sentence("unread", reason=f"no rule reads {sentence.strip()[:60]!r}")
    return _Sentence("none")


def read_message(text: str, labels: tuple[str, str] = ("C", "D")) -> Reading:
    """What `text` says its writer will do (the rules of the module docstring); `labels` are the
    move labels the writer was shown (J/F, C/D, ...), read as move words too."""
    if not text.strip():
        return Reading("none")
    language = detect_language(text)
    if language != ENGLISH:
        return Reading("unread", reason=f"language: {language}")
    normalized = _normalize(text)
    bare = normalized.strip(" .!'\"")
    for label, kind in zip(labels, ("C", "D"), strict=True):
        if bare == label.lower():
            return Reading(kind)
    sentences = [
        _read_sentence(s, labels) for s in _SENTENCE.findall(normalized) if s.strip(" .!?")
    ]
    plain = {s.kind for s in sentences if s.kind in ("C", "D") and not s.conditional}
    if len(plain) == 2:
        return Reading("unread", reason="contradiction: states both C and D")
    for kinds in (plain, {"conditional_C"}):
        chosen = [s for s in sentences if s.kind in kinds]
        if chosen:
            return Reading(chosen[0].kind, any(s.standing for s in chosen))
    unread = [s for s in sentences if s.kind == "unread"]
    if unread:
        return Reading("unread", reason=unread[0].reason)
    return Reading("none")
