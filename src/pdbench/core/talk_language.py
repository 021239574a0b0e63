"""Which language a message is written in, as far as the rule reader needs to know: English or not.

A small pure heuristic (no model, no dependency), used by `pdbench.core.talk_reader`:

1. A text whose letters are mostly outside the Latin script (Cyrillic, Greek, CJK, Arabic,
   Hebrew, Hangul, ...) is not English; its reason names the script ("language: not English
   (cyrillic script)").
2. Otherwise the words are matched against short lists of frequent words (function words and
   the words of the game: "cooperate", "kooperieren", "coopérer", ...) of English and of German
   (de), French (fr), Spanish (es), Italian (it), Portuguese (pt) and Dutch (nl); letters only
   one of those languages uses (ß, ñ, ç, ã, ...) count for it too. The text is English unless
   another language scores more than English ("language: de").

Words the lists share (English "a", "me", "no", "so", "die", "will") are left out of them, so an
English sentence with a foreign word ("let's cooperate, amigo") stays English. A text with no
word of any list counts as English: the reader then finds no statement in it.
"""

from __future__ import annotations

import re
import unicodedata

ENGLISH = "en"

_WORDS: dict[str, frozenset[str]] = {
    "en": frozenset(
        "i you we they he she it the and or but not is are am was be been will shall would "
        "this that these those my your our us me let lets to of for with if as long round "
        "rounds game cooperate cooperating cooperation defect defecting defection always never "
        "play trust promise betray together both each every next now then from what how why "
        "do does don't won't can't i'm i'll i've we'll let's you're it's yes hello hi thanks "
        "thank good great sure okay ok well just keep stay fair nice deal agree again last time "
        "too also on at by have has had who which there here".split()
    ),
    "de": frozenset(
        "und ich nicht werde werden wir du dich mich uns ist sind mit wenn auch immer nie "
        "niemals kooperieren kooperiere kooperation zusammenarbeiten zusammen verraten "
        "betrügen spielen spiele lass lasst runde runden ein eine einen der den dem das "
        "zu sie aber oder ja nein hallo danke gut vertrauen vertraue dir mir jetzt ab "
        "nächste nächsten jede jeden jeder weiter bleibe bleiben schon noch sein bin".split()
    ),
    "fr": frozenset(
        "je nous vous tu et le la les des pas ne est une avec toujours jamais coopérer "
        "coopérerai coopère coopérons coopération trahir trahirai ensemble tour tours "
        "mais ou oui bonjour merci bien confiance jouer jouerai vais allons suis sommes "
        "du au aux ce cette mon notre votre faire ferai chaque prochain désormais "
        "partir maintenant toi moi".split()
    ),
    "es": frozenset(
        "yo nosotros y el los las pero siempre nunca cooperar cooperaré coopero cooperemos "
        "cooperación traicionar traicionaré juntos ronda rondas voy vamos hola gracias "
        "bueno confía confianza jugar jugaré una por para con del al mi tu "
        "nuestro cada próxima ahora desde hasta también sí soy estoy".split()
    ),
    "it": frozenset(
        "io noi il gli non sempre mai cooperare coopererò coopero cooperiamo cooperazione "
        "tradire tradirò insieme turno turni ciao grazie fiducia giocare giocherò sarò "
        "sono siamo della delle ogni prossimo adesso ora anche ti ci che di".split()
    ),
    "pt": frozenset(
        "eu nós você vocês vou vamos sempre nunca cooperar cooperarei coopero cooperemos "
        "cooperação trair trairei juntos rodada rodadas olá obrigado confiança jogar "
        "jogarei não com uma em cada próxima agora também sou estou".split()
    ),
    "nl": frozenset(
        "ik wij jij jou niet samenwerken samenwerking altijd nooit en het een zal zullen "
        "ga gaan spelen ronde rondes hallo bedankt vertrouwen verraden elke volgende nu "
        "ook maar zijn met".split()
    ),
}
# Letters that mark one language (accented letters several languages share are left out).
_LETTERS: dict[str, str] = {
    "ß": "de",
    "ä": "de",
    "ö": "de",
    "ü": "de",
    "ñ": "es",
    "¿": "es",
    "¡": "es",
    "ç": "fr",
    "œ": "fr",
    "ê": "fr",
    "è": "fr",
    "à": "fr",
    "ã": "pt",
    "õ": "pt",
    "ò": "it",
    "ì": "it",
}
# word -> the languages whose list has it
_LANGUAGES_OF: dict[str, tuple[str, ...]] = {
    word: tuple(lang for lang, vocab in _WORDS.items() if word in vocab)
    for word in set().union(*_WORDS.values())
}
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


def _script(char: str) -> str:
    """The script of a letter, from its Unicode name ("CYRILLIC SMALL LETTER A" -> cyrillic)."""
    name = unicodedata.name(char, "")
    first = name.split(" ")[0].lower()
    return "latin" if first in ("latin", "") or ord(char) < 0x250 else first


def detect_language(text: str) -> str:
    """ "en" for a text the English reader can read, else a language code ("de", "fr", "es",
    "it", "pt", "nl") or "not English (<script> script)"; see the module docstring."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return ENGLISH
    scripts: dict[str, int] = {}
    for char in letters:
        script = "latin" if char.isascii() else _script(char)
        scripts[script] = scripts.get(script, 0) + 1
    latin = scripts.pop("latin", 0)
    if scripts and latin < len(letters) / 2:
        return f"not English ({max(scripts, key=lambda s: scripts[s])} script)"
    lowered = text.lower().replace("’", "'")
    words = _WORD.findall(lowered)
    scores = dict.fromkeys(_WORDS, 0)
    for word in words:
        for lang in _LANGUAGES_OF.get(word, ()):
            scores[lang] += 1
    if not lowered.isascii():
        for char in lowered:
            if char in _LETTERS:
                scores[_LETTERS[char]] += 1
    other = max((lang for lang in scores if lang != ENGLISH), key=lambda lang: scores[lang])
    return other if scores[other] > scores[ENGLISH] else ENGLISH
