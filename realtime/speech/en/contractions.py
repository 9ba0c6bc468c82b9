"""English contractions whose apostrophe upstream's clean-up drops, leaving
another word ("we'll" -> "well", "he'll" -> "hell", "I'd've" -> "Idve"):
expanded. The rest ("don't", "it's", "let's") sound the same without it and
stay. "'d" is "had" before a past participle ("you'd asked", "she'd gone",
"I'd been") and before "better", else "would" ("I'd need").
"""

from __future__ import annotations

import re

from realtime.speech.rewrite import Rule, rule

_CONTRACTED = {"ll": "will", "re": "are", "d": "would", "ve": "have", "m": "am"}
_CONTRACTS = {"i": "ll d ve m", "you": "ll re d ve", "we": "ll re d ve", "they": "ll re d ve",
              "he": "ll d", "she": "ll d", "it": "ll d", "who": "ll re d ve", "that": "ll d"}
# Past participles that do not end in "-ed", after "'d": "had".
_PARTICIPLES = frozenset({"been", "better", "gone", "done", "seen", "known", "taken", "given", "eaten",
                          "written", "said", "made", "found", "thought", "told", "left", "heard", "felt",
                          "kept", "brought", "bought", "forgotten", "gotten", "got", "had", "come",
                          "become", "run", "begun", "won", "lost", "met", "paid", "sent", "spent", "built",
                          "read", "driven", "flown", "grown"})
_NEXT_WORD = re.compile(r"\s+([A-Za-z]+)")


def _contraction(m: re.Match[str]) -> str | None:
    pronoun, suffix = m.group(1), m.group(2).lower()
    if suffix not in _CONTRACTS.get(pronoun.lower(), "").split():
        return None
    verb = _CONTRACTED[suffix]
    if m.group(3):  # "I'd've", "you'd've": would have
        return f"{pronoun} {verb} have"
    if suffix == "d":
        after = _NEXT_WORD.match(m.string, m.end(), m.end() + 24)  # bounded: linear over the sentence
        word = after.group(1).lower() if after else ""
        if word in _PARTICIPLES or word.endswith("ed") and not word.endswith("eed"):
            verb = "had"  # "you'd asked", "I'd been"; "I'd need" stays "would"
    return pronoun + " " + verb


RULE: Rule = rule("contraction", r"\b([A-Za-z]{1,4})['’]([A-Za-z]{1,2})(?:['’](ve))?\b", _contraction)
