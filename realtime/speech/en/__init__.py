"""English readings: the rules in priority order (``rules.RULES``) and, one
file a kind, what they read: dates and clock times (``dates``), money,
addresses, identifiers and phone numbers (``ids``), typed text (``web``),
readings from the word around a number (``context``), fractions, written
shorthand, names written with numbers (``names``: "RTX 4090", "the 737 MAX"),
contractions upstream would turn into other words (``contractions``),
and the number words themselves (``words``)."""

from realtime.speech.en.rules import JOINTS, RULES

__all__ = ["JOINTS", "RULES"]
