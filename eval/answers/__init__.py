"""Readers of the answer a model commits to (docs/evaluating.md, "How answers are read").

Every task that reads a country, an option label or a rating from free text goes through
these readers. Each returns a :class:`~culturebench.eval.answers.reading.Reading`: the value
read, or ``None`` with a reason code when no committed answer could be found (a reader
abstains rather than guesses). The shared steps live in :mod:`.spans` (reasoning blocks,
answer lines, sentences and clauses) and :mod:`.cues` (the cue words of
``eval/data/answer_cues.yaml``); the country reader in :mod:`.countries`; the letter and
rating readers in :mod:`culturebench.eval.multiple_choice` and
:mod:`culturebench.eval.ratings`.
"""

#: Bumped whenever a change of the shared steps or of the cue and place files can alter what
#: some answer reads as; recorded with every run (``coverage.parsers``).
READER_VERSION = "4"
