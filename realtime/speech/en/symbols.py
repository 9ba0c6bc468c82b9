"""English readings of mathematical notation, symbols and Greek letters, which upstream's
clean-up would drop or misread: an algorithm's order ("O(n log n)" -> "O of n log n",
"O(n^2)" -> "O of n squared"), a function of a variable ("f(x)" -> "f of x"), a power
("mc^2", "x^10"); "=" "equals", "≠" "is not equal to", "±" "plus or minus", "√"
"square root of", "²" "squared", "∈" "in", "∞" "infinity", "∫" "integral", a lone
Greek letter ("A = πr²": pi, "Δt": delta t, "a β-blocker": beta blocker) and a micro
unit written with "μ" after an operator ("2 * 10 μm": micrometers); a note's accidental
("B♭" -> "B flat", "G# minor" -> "G sharp minor"), a derivative ("dy/dx" -> "d y by d x").
"""

from __future__ import annotations

import re

from realtime.speech.en.words import cardinal
from realtime.speech.rewrite import Rule, rule

_SYMBOLS = {"=": "equals", "==": "equals", "≠": "is not equal to", "≈": "is about", "±": "plus or minus",
            "≤": "is at most", "≥": "is at least", "×": "times", "÷": "divided by", "&": "and",
            "√": "square root of", "²": "squared", "³": "cubed", "∈": "in", "∉": "not in", "∞": "infinity",
            "∫": "integral", "∑": "sum", "∀": "for all", "∃": "there exists", "≡": "is equivalent to",
            "∝": "is proportional to", "∂": "partial", "∓": "minus or plus", "∅": "the empty set",
            "∩": "intersection", "∪": "union", "⊂": "subset of", "⊆": "subset of", "⊃": "superset of",
            "⊇": "superset of", "∧": "and", "∨": "or", "¬": "not", "∴": "therefore", "∵": "because",
            "∠": "angle", "∆": "delta", "∇": "nabla", "≅": "is congruent to", "≪": "is much less than",
            "≫": "is much greater than", "∏": "product", "⋅": "times",
            "−": "minus"}  # U+2212: only maths writes it
_MICRO = {"m": "micrometers", "g": "micrograms", "s": "microseconds", "L": "microliters", "V": "microvolts",
          "A": "microamps", "W": "microwatts"}
# A lone Greek letter ("A = πr²", "Δt", "β-blocker"); upstream drops it.
_GREEK = {"π": "pi", "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "Δ": "delta", "ε": "epsilon",
          "θ": "theta", "λ": "lambda", "μ": "mu", "ρ": "rho", "σ": "sigma", "Σ": "sigma", "τ": "tau",
          "φ": "phi", "ω": "omega", "Ω": "omega", "χ": "chi", "ψ": "psi", "Ψ": "psi", "η": "eta",
          "κ": "kappa", "ν": "nu", "ξ": "xi", "ζ": "zeta", "Γ": "gamma", "Λ": "lambda", "Π": "pi", "Φ": "phi",
          "Θ": "theta"}


def _symbol(m: re.Match[str]) -> str:
    return _SYMBOLS[m.group(0)]


RULES: tuple[Rule, ...] = (
    rule("symbol", r"==|[=≠≈±≤≥×÷&√²³−∈∉∞∫∑∀∃≡∝∂∓∅∩∪⊂⊆⊃⊇∧∨¬∴∵∠∆∇≅≪≫∏⋅]", _symbol),
    rule("micro unit", r"(?<![\w\u0370-\u03ff])[μµ](m|g|s|L|V|A|W)\b",
         lambda m: _MICRO[m.group(1)]),  # "10 μm" past an operator: "ten times ten micrometers"
    rule("greek letter", r"(?<![\u0370-\u03ff])([" + "".join(_GREEK) + r"])(?![\u0370-\u03ff])"
         r"(-(?=[A-Za-z]))?",
         lambda m: _GREEK[m.group(1)] + (" " if m.group(2) else "")),
)


def _exponent(m: re.Match[str]) -> str:
    return " " + _exponent_words(int(m.group(1)))


_BIG_O_PART = re.compile(r"\s*+(?:(\d{1,3})|(log|lg|ln|sqrt|[a-zA-Z])|\^(\d|[a-z])|([²³])|([*·×+/!]))")
_BIG_O_SIGNS = {"*": "times", "·": "times", "×": "times", "+": "plus", "/": "over", "!": "factorial"}


def _big_o(m: re.Match[str]) -> str | None:
    """ "O(n log n)" -> "O of n log n", "O(n^2)" -> "O of n squared", "Θ(1)" -> "theta of one"."""
    words, pos, inner = [], 0, m.group(2)
    for part in _BIG_O_PART.finditer(inner):
        if part.start() != pos:
            return None
        pos = part.end()
        count, name, power, small, sign = part.groups()
        if count:
            words.append(cardinal(int(count)))
        elif name:
            words.append("square root of" if name == "sqrt" else name)
        elif power or small:
            if power and power.isalpha():
                words.append("to the " + power)  # "2^n"
            else:
                words.append(_exponent_words(int(power) if power else "²³".index(small) + 2))
        else:
            words.append(_BIG_O_SIGNS[sign])
    if pos != len(inner.rstrip()) or not words:
        return None
    return _GREEK.get(m.group(1), "O") + " of " + " ".join(words)


def _exponent_words(power: int) -> str:
    return {2: "squared", 3: "cubed"}.get(power, "to the power of " + cardinal(power))


_ACCIDENTALS = {"♭": "flat", "♯": "sharp", "♮": "natural", "b": "flat", "#": "sharp"}

# A note's accidental: "B♭", "F♯", "E♮" anywhere; "Bb", "G#" before a key's or chord's word
# ("in Eb major", "a G# minor chord"; a lone "Bb" stays letters). Before "#" is a tag's.
MUSIC_RULE = rule("accidental", r"\b([A-G])(?:([♭♯♮])|([b#])(?=\s(?:major|minor|maj|min|chord|scale|key|note"
                  r"|string|tuning|clarinet|trumpet)\b|m\b|maj7\b|7\b))",
                  lambda m: f"{m.group(1)} {_ACCIDENTALS[m.group(2) or m.group(3)]}")


# "dy/dx": before a slash between words is read
DERIVATIVE_RULE = rule("derivative", r"\bd([a-z])/d([a-z])\b", lambda m: f"d {m.group(1)} by d {m.group(2)}")


# An order whole, before its marks ("*", "^", "/") are read one by one: "O(n log n)", "Θ(n*m)".
BIG_O_RULE = rule("big O", r"(?<![\w.])([OΘΩ])\(([^()]{1,24})\)", _big_o, flags=0)


# Notation before the symbols' own reading ("^" of "x^10" is the exponent's).
NOTATION_RULES: tuple[Rule, ...] = (
    rule("function", r"\b([A-Za-z])\(([A-Za-z])\)(?![\w(])",
         lambda m: f"{m.group(1)} of {m.group(2)}"),  # "f(x)", "P(A)"
    rule("exponent", r"(?<=[A-Za-z)])\^(\d{1,3})\b", _exponent),  # "mc^2", "x^10"
)
