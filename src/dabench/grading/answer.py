"""Which part of an answer is graded: the last turn's answer and its final-answer section.

The LLM agent states its result on a line starting ``FINAL ANSWER:`` (case-insensitive;
markdown emphasis around the marker is ignored; ``Answer:`` at the start of a line counts too).
When such a line exists, graders look only at what follows the *last* marker, so an agent may
discuss other values or tables earlier without being graded on them. Without a marker the
whole answer is graded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dabench.journal.records import Episode

_MARKER_RE = re.compile(
    r"^[ \t>#*_`]*(?:final[ \t]+answer|answer)[ \t*_`]*[:：][ \t*_`]*",
    re.IGNORECASE | re.MULTILINE,
)


@dataclass(frozen=True)
class AnswerFocus:
    """The graded part of an answer and where it came from."""

    section: str
    """Text after the last final-answer marker (to the end), or the whole answer."""
    line: str
    """The final-answer line (the next non-empty line when the marker line is empty),
    or the whole answer when there is no marker."""
    marked: bool
    """True when a final-answer marker was found."""

    @property
    def where(self) -> str:
        """Words for reasons: ``the final-answer line`` or ``the answer``."""
        return "the final-answer line" if self.marked else "the answer"


def graded_answer(episode: Episode) -> str:
    """The answer that is graded: the last turn's answer, else ``final_answer``, else ``""``."""
    if episode.answers:
        return episode.answers[-1] or ""
    return episode.final_answer or ""


def focus(text: str) -> AnswerFocus:
    """Locate the final-answer section and line of ``text``."""
    last = None
    for match in _MARKER_RE.finditer(text):
        last = match
    if last is None:
        return AnswerFocus(section=text.strip(), line=text.strip(), marked=False)
    section = text[last.end() :].strip()
    line = ""
    for candidate in section.splitlines():
        if candidate.strip():
            line = candidate.strip()
            break
    return AnswerFocus(section=section, line=line, marked=True)
