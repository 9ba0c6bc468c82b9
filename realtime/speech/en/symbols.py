"""English readings of mathematical symbols and Greek letters, which upstream's
clean-up would drop: "=" "equals", "≠" "is not equal to", "±" "plus or minus", "√"
"square root of", "²" "squared", "∈" "in", "∞" "infinity", "∫" "integral", a lone
Greek letter ("A = πr²": pi, "Δt": delta t, "a β-blocker": beta blocker) and a micro
unit written with "μ" after an operator ("2 * 10 μm": micrometers).
"""

from __future__ import annotations

import re

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
          "φ": "phi", "ω": "omega", "Ω": "omega"}


def _symbol(m: re.Match[str]) -> str:
    return _SYMBOLS[m.group(0)]


RULES: tuple[Rule, ...] = (
    rule("symbol", r"==|[=≠≈±≤≥×÷&√²³−∈∉∞∫∑∀∃≡∝∂∓∅∩∪⊂⊆⊃⊇∧∨¬∴∵∠∆∇≅≪≫∏⋅]", _symbol),
    rule("micro unit", r"(?<![\w\u0370-\u03ff])[μµ](m|g|s|L|V|A|W)\b",
         lambda m: _MICRO[m.group(1)]),  # "10 μm" past an operator: "ten times ten micrometers"
    rule("greek letter", r"(?<![\u0370-\u03ff])([παβγδΔεθλμρστφωΣΩ])(?![\u0370-\u03ff])(-(?=[A-Za-z]))?",
         lambda m: _GREEK[m.group(1)] + (" " if m.group(2) else "")),
)
