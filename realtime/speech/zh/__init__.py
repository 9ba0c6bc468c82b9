"""Chinese readings: the rules in priority order (``rules.RULES``), the
shorthand of addresses, ranges and scores (``shorthand``) and the number
words (``words``)."""

from realtime.speech.zh.rules import JOINTS, RULES

__all__ = ["JOINTS", "RULES"]
