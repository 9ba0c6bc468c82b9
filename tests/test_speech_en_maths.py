"""English readings of science and maths text: subscript and superscript digits, the
symbols of logic, sets and calculus, a function of a variable, concentrations, an
equation's number in brackets (realtime/speech/en/symbols.py, context.py, shorthand.py,
normalize.fold_width, units.py). Each reading has its counterpart that must stay as it is."""

from __future__ import annotations

import pytest

from realtime.speech.lang import needs_rules
from realtime.speech.normalize import normalize

CASES = [
    # Subscripts are digits: a formula keeps them (upstream's clean-up would drop them).
    ("Reaction: 2H₂ + O₂ → 2H₂O.", "Reaction: two H two plus O two to two H two O."),
    # A power written in superscripts; a lone "²" is still "squared".
    ("A 10⁻⁶ M solution; x⁴ and 2¹⁰; 5 m².",
     "A ten to the power of minus six M solution; x to the power of four and two to the power of ten;"
     " five square meters."),
    ("3×10⁸ m/s", "three times ten to the power of eight meters per second"),
    # A function of one variable; "x" is a variable, not "by", after an operator.
    ("f(x) = x² − 4x + 4 and P(A) = 0.5.",
     "f of x equals x squared minus four x plus four and P of A equals zero point five."),
    # Not a function: a plural's "(s)", letters on either side.
    ("Check the option(s) in a(b)c and g(x)(y).", "Check the option(s) in a(b)c and g(x)(y)."),
    ("∀ x ∃ y: x ≡ y, ∑ to ∞, ∫ f, y ∝ x, x ∉ S.",
     "for all x there exists y: x is equivalent to y, sum to infinity, integral f, y is proportional to x,"
     " x not in S."),
    # A concentration, after an "=" too; molar units take no plural.
    ("IC50 = 12 nM; a 5 mM buffer; 10 μM.", "IC fifty equals twelve nanomolar; a five millimolar buffer; ten"
     " micromolar."),
    ("See Eq. (3) and eq. (12).", "See Equation(three) and equation(twelve)."),
    ("A ∩ B = ∅ and A ∪ B ⊆ C, so p ∧ ¬q ∨ r; ∴ x ≪ y, ∵ 2 ∓ 1.",
     "A intersection B equals the empty set and A union B subset of C, so p and not q or r; therefore x is"
     " much less than y, because two minus or plus one."),
    # A spaced slash after a bracket: divided in a formula, else said (upstream would drop it).
    ("BMI = weight (kg) / height (m)².", "BMI equals weight (kg) divided by height (m) squared."),
    ("Pick (yes) / (no).", "Pick (yes) slash(no)."),
    # A letter between measures is "by"; between an operator and a number it is "times".
    ('A 12" x 8" box; x = 5 x 3.', "A twelve by eight inch box; x equals five times three."),
]


@pytest.mark.parametrize("written,spoken", CASES)
def test_reading(written, spoken):
    assert normalize(written, "en") == spoken


@pytest.mark.parametrize("sentence", ["Let f(x) be smooth.", "Water, H₂O, is wet.", "For all ∀ and ∃."])
def test_the_precheck_sends_them_to_the_rules(sentence):
    assert needs_rules(sentence)
