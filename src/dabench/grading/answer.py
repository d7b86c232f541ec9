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

from dabench.grading.asked_form import words_read
from dabench.grading.numbers import find_all_numbers
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


_FENCED_RE = re.compile(r"^[ \t]*```.*?^[ \t]*```[ \t]*$", re.DOTALL | re.MULTILINE)
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])[ \t]+(?=[^a-z0-9\s])")
_DIGIT_RE = re.compile(r"\d")
_WORDY_RE = re.compile(r"[^\W_]")
SUPPORTING_STARTS: tuple[str, ...] = (
    "this",
    "these",
    "that",
    "those",
    "based on",
    "note",
    "nb",
    "n.b.",
    "caveat",
    "assumption",
    "disclaimer",
    "warning",
    "excluding",
    "including",
    "computed",
    "calculated",
    "source",
    "using",
    "as of",
    "for reference",
    "for context",
    "(",
    "i used",
    "i ran",
    "the query",
    "query",
    "sql",
    "methodology",
    "let me know",
    "would you",
    "p.s.",
    "out of",
    "of these",
    "[^",
    "want me to",
    "should i",
    "shall i",
    "if you'd like",
    "if you would like",
    "if you want",
    "would you like",
    "do you want",
)
"""Sentence (and paragraph) starts that mark a supporting remark rather than the answer
itself (``This covers 42 orders.``, ``Note: 3 rows were NULL.``)."""
_CONCLUDING_RE = re.compile(
    r"^(?:this|that|these|those)[ \t]+(?:gives?|comes?[ \t]+to|brings?|totals?|means|yields?"
    r"|leaves?|works?[ \t]+out|adds?[ \t]+up)\b",
    re.IGNORECASE,
)
"""A remark that concludes (``This gives revenue of $37,430.20.``, ``That comes to 164
tickets.``): it states the result, it does not support it."""


_BREAKDOWN_RE = re.compile(r"^by[ \t]+\w+(?:[ \t]+\w+)?[ \t]*:")
"""A labelled breakdown after the answer (``By channel: email 81, chat 52``)."""


_ANSWER_HEADING_RE = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*|\*\*|__)(?:final[ \t]+|short[ \t]+)?answer(?:\*\*|__)?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
_NEXT_HEADING_RE = re.compile(r"^[ \t]*(?:#{1,6}[ \t]|\*\*[^*\n]+\*\*[ \t]*$)", re.MULTILINE)


@dataclass(frozen=True)
class Commitment:
    """The statement an answer commits to (see :func:`commitment`)."""

    sentence: str
    """The committed statement: the final-answer line, else the concluding sentence."""
    following: tuple[str, ...]
    """The sentences after it in the same final-answer section or paragraph (checked for
    hedges, never for the value itself)."""
    where: str
    """``the final-answer line`` or ``the concluding statement``."""
    preceding: tuple[str, ...] = ()
    """For a concluding statement (no marker, no heading): the sentences before it in its
    paragraph, where the answer may also state a value (a labelled list)."""
    later: tuple[str, ...] = ()
    """For a concluding statement: the sentences of the trailing paragraphs skipped as
    supporting remarks (``Note: ...``), checked for a correction or another committed value."""


def _has_number(text: str) -> bool:
    """A digit, or a number in words (``noon``, ``four thousand ...``, a lone ``six``)."""
    return (
        bool(_DIGIT_RE.search(text))
        or bool(find_all_numbers(text))
        or bool(_DIGIT_RE.search(words_read(text)))
    )


def _sentences(paragraph: str) -> list[str]:
    out: list[str] = []
    for line in paragraph.splitlines():
        out.extend(s.strip() for s in _SENTENCE_END_RE.split(line) if s.strip())
    return out


def is_supporting(sentence: str) -> bool:
    """True when ``sentence`` starts like a supporting remark (:data:`SUPPORTING_STARTS`)."""
    head = sentence.lstrip(" \t>*_#-|`").lower()
    if _CONCLUDING_RE.match(head):
        return False
    if sentence.rstrip(" \t*_").endswith("?") or _BREAKDOWN_RE.match(head):
        return True
    for start in SUPPORTING_STARTS:
        if head.startswith(start) and (
            not start[-1].isalnum() or len(head) == len(start) or not head[len(start)].isalnum()
        ):
            return True
    return False


def commitment(text: str) -> Commitment:
    """The committed statement of an answer.

    With a final-answer marker: the final-answer line, followed by the rest of the section.
    Else, with an answer heading (``### Answer``, ``**Final answer**`` alone on a line): the
    first non-empty line under the last such heading, followed by the rest of its section
    (to the next heading). Else: fenced code blocks are dropped, the text is split into
    paragraphs (blank lines) and the paragraph used is the last one with a digit, skipping
    trailing paragraphs that open with a supporting remark; in it, the committed sentence
    is the last sentence (lines and ``. `` boundaries) with a digit that is not a supporting
    remark (else the last one with a digit). ``following`` holds the sentences after it in
    that paragraph, ``later`` those of the skipped trailing paragraphs. A remark that
    concludes (``This gives ...``, ``That comes to ...``) is not a supporting one.
    """
    where = focus(text)
    if where.marked:
        after = where.section[where.section.find(where.line) + len(where.line) :]
        return Commitment(where.line, tuple(_sentences(after)), "the final-answer line")
    body = _FENCED_RE.sub("", text)
    headings = list(_ANSWER_HEADING_RE.finditer(body))
    if headings:
        heading = headings[-1]
        section = _NEXT_HEADING_RE.split(body[heading.end() :], maxsplit=1)[0]
        lines = [line.strip() for line in section.splitlines() if line.strip()]
        if lines:
            rest = _sentences("\n".join(lines[1:]))
            return Commitment(lines[0], tuple(rest), "the answer heading's first line")
    paragraphs = [p for p in re.split(r"\n[ \t]*\n", body) if _has_number(p)]
    if not paragraphs:
        return Commitment("", (), "the concluding statement")
    chosen = paragraphs[-1]
    skipped: list[str] = []
    for index in range(len(paragraphs) - 1, -1, -1):
        first = next((s for s in _sentences(paragraphs[index]) if _WORDY_RE.search(s)), "")
        if not is_supporting(first):
            chosen = paragraphs[index]
            skipped = [s for p in paragraphs[index + 1 :] for s in _sentences(p)]
            break
    sentences = _sentences(chosen)
    numbered = [i for i, s in enumerate(sentences) if _has_number(s)]
    pick = next((i for i in reversed(numbered) if not is_supporting(sentences[i])), numbered[-1])
    return Commitment(
        sentences[pick],
        tuple(sentences[pick + 1 :]),
        "the concluding statement",
        tuple(sentences[:pick]),
        tuple(skipped),
    )
