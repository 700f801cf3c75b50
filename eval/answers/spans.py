"""Where in a model's output its answer is: reasoning blocks, answer lines, sentences and
clauses. Shared by every reader; every function is linear in the length of the output."""

from __future__ import annotations

import bisect
import re

from culturebench.eval.answers import cues

_THINK_OPEN = re.compile(r"<\s*(think|thinking|reasoning|reflection|scratchpad)\s*>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"<\s*/\s*(?:think|thinking|reasoning|reflection|scratchpad)\s*>", re.IGNORECASE)
_NEXT_TURN = re.compile(r"\n\s*(?:#+\s*)?(?:Human|User|Пользователь|Користувач|用户)\s*:", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<!\b[тТ]\.)(?<!\d)[.!?。！？]+(?=\s|$|[*»\"”)])|\n+|[;；]")
_BLANK = re.compile(r"\n[^\S\n]*\n")


def focus(text: str) -> tuple[int, int]:
    """The span of ``text`` that holds the answer: what follows the last reasoning block
    (``<think>…</think>``), or the block itself when nothing follows it; up to a next turn the
    model wrote itself ("\\nUser: …")."""
    start, end = 0, len(text)
    turn = _NEXT_TURN.search(text)
    if turn and turn.start() > 0:
        end = turn.start()
    closes = list(_THINK_CLOSE.finditer(text, 0, end))
    if closes:
        after = closes[-1].end()
        if text[after:end].strip():
            return after, end
        opened = _THINK_OPEN.search(text, 0, closes[-1].start())
        return (opened.end() if opened else 0), closes[-1].start()
    opened = _THINK_OPEN.search(text, 0, end)
    if opened:  # a block never closed: all of it is the reasoning, and nothing follows
        return opened.end(), end
    return start, end


def unfinished(text: str) -> bool:
    """Whether the output is a reasoning block that was never closed (cut off mid-thought)."""
    opened = list(_THINK_OPEN.finditer(text))
    return bool(opened) and not _THINK_CLOSE.search(text, opened[-1].end())


def answer_lines(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The spans that explicit answer cues ("Ответ:", "Answer:", "Відповідь:", "答案是")
    introduce, in order: from the cue to the end of its line, or, when the line ends with the
    cue, the paragraph that follows (a list under "Возможная родина:")."""
    out = []
    folded = cues.fold(text)
    breaks = [m.start() for m in re.finditer("\n", text[:end])]
    for match in cues.pattern("answer_line").finditer(folded, start, end):
        k = bisect.bisect_left(breaks, match.end())
        line_end = breaks[k] if k < len(breaks) else end
        rest = text[match.end() : min(line_end, match.end() + 200)]  # bounded: linear in the answer
        if not re.sub(r"[\W_]+", "", rest):  # "**Ответ:**" alone on its line
            nxt = re.compile(r"\n[^\S\n]*(\S)").match(text, line_end, end)
            if nxt is None:
                continue
            out.append((nxt.start(1), blank_line_after(text, nxt.start(1), end)))  # a list under the cue
        else:
            out.append((match.end(), line_end))
    return out


def sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentence spans of ``text[start:end]``: split at sentence punctuation, semicolons and
    line breaks (a list item is a sentence)."""
    out = []
    pos = start
    for match in _SENTENCE_END.finditer(text, start, end):
        if text[pos : match.start()].strip():
            out.append((pos, match.start()))
        pos = match.end()
    if text[pos:end].strip():
        out.append((pos, end))
    return out


_CLAUSE_ROLES = ("adversative", "concession", "correction", "context_any", "weak", "conclusion")


def _clause_break() -> re.Pattern[str]:
    openers = "|".join(cues.alternatives(role) for role in _CLAUSE_ROLES)
    relative = (
        r"(?:который|которая|которое|которые|где|куда|откуда|який|яка|яке|які|де|куди|звідки|which|where|who|that"
        r"|это|эта|этот|эти|це|ця|цей|ці|it\s+is|it's|this\s+is|these|they\s+are)"
    )
    strong = r"(?:but|however|но|однако|але|проте|хотя|хоча|although|though|whereas|while)"
    context = cues.alternatives("context_any")
    negation = r"(?:not|а\s+не|не|ні|а\s+ні)"
    joined = r"(?:and|и|і|та|й|а)"
    return re.compile(
        rf"(?:[,:—–(]\s*|\s+-\s+)(?=(?:{openers}|{relative}|{negation})(?!\w))|\s(?=(?:{strong})(?!\w))"
        # "… from Cyprus and is also popular in Greece", "…, дуже схожа на польські"
        rf"|(?:,\s*|\s+{joined}\s+|,\s*{joined}\s+)(?=(?:[^\W\d_]+[\s,]+){{0,2}}{context})",
        re.IGNORECASE,
    )


_BREAK: list[re.Pattern[str]] = []


def clauses(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Clause spans of one sentence: split before a word that opens a new clause ("но",
    "хотя", "also", "which", …) after a comma, colon, dash or parenthesis, and before "but",
    "но", "хотя" even without one."""
    if not _BREAK:
        _BREAK.append(_clause_break())
    folded = cues.fold(text)
    out = []
    pos = start
    if cues.opening("concession").match(folded, start):  # "Unlike Polish pierogi, varenyky …"
        comma = folded.find(",", start, end)
        if comma > 0:
            out.append((start, comma))
            pos = comma + 1
    for match in _BREAK[0].finditer(folded, pos, end):
        if match.start() > pos:
            out.append((pos, match.start()))
            pos = match.end()
    if end > pos:
        out.append((pos, end))
    return out


def blank_line_after(text: str, pos: int, end: int) -> int:
    """Where the paragraph that holds ``pos`` ends (a blank line), or ``end``."""
    match = _BLANK.search(text, pos, end)
    return match.start() if match else end
