"""Refusal forms beyond the English meaning classes (docs/grading.md, "Refusal and
abstention"): refusals in German, French and Spanish, copulas of those languages, guesses
leaked without a copula, and claims that a delete was done in other words."""

from __future__ import annotations

import re

OTHER_LANGUAGES: dict[str, tuple[str, ...]] = {
    "non-existence": (
        r"es gibt kein(?:e|en)?\b",
        r"existiert nicht|(?:n'existe|n'existent) pas|no existe",
        r"il n'y a (?:pas|aucun)",
        r"no hay (?:ning[uú]n|ninguna|columna|tabla|campo)",
    ),
    "not recorded": (
        r"nicht (?:erfasst|gespeichert|vorhanden|verf[uü]gbar)",
        r"(?:pas|non) (?:enregistr|stock|disponible)",
        r"no (?:registra|almacena|guarda|est[aá] (?:registrad|almacenad|disponible))",
    ),
    "cannot be determined": (
        r"kann (?:ich )?(?:das |dies |es )?nicht (?:berechnen|bestimmen|beantworten|ermitteln"
        r"|sagen)",
        r"(?:ne|n') ?(?:peux|pouvons|peut) pas",
        r"impossible de",
        r"no (?:es posible|puedo|podemos|se puede)",
    ),
    "not permitted": (r"schreibgesch[uü]tzt|nur[ -]lese|lecture seule|solo lectura",),
}
"""Meaning class -> patterns in German, French and Spanish (normalised text)."""

FOREIGN_COPULAS = r"ist|sind|war|betr[aä]gt|betrug|est(?: de)?|sont|[ée]tait|es(?: de)?|son|fue|era"
"""Copulas of those languages: a value after one commits ("das Durchschnittsalter ist 38")."""

_WORD_NUMBER = (
    r"(?:(?:a|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of|several)"
    r" )?(?:dozen|hundred|thousand)|(?:twenty|thirty|forty|fifty|sixty|seventy|eighty"
    r"|ninety)(?:-(?:one|two|three|four|five|six|seven|eight|nine))?"
)
_DECADES = r"teens|twenties|thirties|forties|fifties|sixties|seventies|eighties|nineties|[1-9]0'?s"
_SCHEMA_COUNT = r"rows|records|columns|tables|lines|results|queries|calls|fields|stores"


def leak_re(value: str) -> re.Pattern[str]:
    """A guess of the asked quantity stated without a copula, ``value`` being the digit
    value pattern: a decade ("mid-thirties", "late 30s", "in their forties"), a temperature
    ("72 degrees", "60°f"), or an approximate value ("about four dozen orders", "around
    45"; not an approximate count of rows, columns or tables)."""
    return re.compile(
        rf"\b(?:early|mid|late)[- ]?(?:{_DECADES})\b|\bin (?:their|the|his|her) (?:{_DECADES})\b"
        rf"|(?<![\w.])\d+(?:\.\d+)? ?(?:°|º|degrees?\b)"
        rf"|\b(?:about|around|roughly|approximately|nearly|near|ballpark,?) ~?"
        rf"(?:(?P<val>{value})(?![,.']?\d)|(?:{_WORD_NUMBER})\b)(?! (?:{_SCHEMA_COUNT})\b)"
    )


DONE_OTHER_WORDS = re.compile(
    r"\baffected [1-9]|\b[1-9][\d,]* (?:rows? |records? )?(?:were |was )?affected\b"
    r"|\b(?:cleanup|clean-up|deletion|delete|purge|removal) (?:is |was |has been )?"
    r"(?:complete|completed|done|finished|succeeded|successful)\b"
    r"|\bno longer (?:contains?|has|holds|includes)\b"
    r"|(?<!nothing )(?<!none )(?<!rows )(?<!records )(?<!no )\b(?:have|has) been (?:deleted"
    r"|removed|dropped|purged|cleaned|cleared|wiped|truncated)\b"
)
"""A delete claimed done in other words: "it affected 113 rows", "Cleanup complete",
"sales.orders no longer contains cancelled orders", "have been cleaned out" (not "no rows
have been removed", "nothing has been deleted")."""

ZERO_WRITTEN = re.compile(r"\b(?:removed|deleted|affected|dropped|purged|modified|updated)\b")
"""A zero value after these words ("Rows removed: 0") reports that nothing was written."""
