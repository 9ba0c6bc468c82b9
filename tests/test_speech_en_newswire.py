"""English readings of news-wire and market text: a press release's dateline and wire, a
state as the wires abbreviate it, a lawmaker's party and state, a currency pair, a
multiple of earnings, market shorthand ("YTD", "P/E"), an abbreviation that ends a
sentence (realtime/speech/en/address.py, shorthand.py, money.py, rules.py). Each reading
has its counterpart that must stay as it is."""

from __future__ import annotations

import pytest

from realtime.speech.lang import needs_rules
from realtime.speech.normalize import normalize

DATELINES = [
    ("NEW YORK, Dec. 4, 2026 /PRNewswire/ -- Acme Corp. today announced results.",
     "NEW YORK, December fourth, twenty twenty six, PR Newswire, -- Acme Corp. today announced results."),
    # The state before the wire ends no sentence: no period is kept before the wire's pause.
    ("SAN JOSE, Calif. /BUSINESS WIRE/ -- Foo Inc. said.",
     "SAN JOSE, California, Business Wire, -- Foo Inc. said."),
    ("TORONTO /GLOBE NEWSWIRE/ -- Bar.", "TORONTO, Globe Newswire, -- Bar."),
    # A path stays a path.
    ("Run cd /tmp now.", "Run cd slash tmp now."),
]

STATES = [
    ("He lives in Gary, Ind., near Chicago; she moved to Tulsa, Okla., in May.",
     "He lives in Gary, Indiana, near Chicago; she moved to Tulsa, Oklahoma, in May."),
    ("NEW YORK, N.Y. -- Shares rose. Reno, Nev. is hot.",
     "NEW YORK, New York -- Shares rose. Reno, Nevada is hot."),
    ("Reno, Nev. is hot.", "Reno, Nevada is hot."),
    # An abbreviation that is also a word or a name needs a place before it.
    ("Hello, Miss. Smith. Yes, Pa. I know. Thanks, Ala. Bye.",
     "Hello, Miss. Smith. Yes, Pa. I know. Thanks, Ala. Bye."),
    ("Sen. Alex Padilla (D-Calif.), Rep. Jim Jordan (R-Ohio) and Sen. Bernie Sanders (I-VT) spoke.",
     "Senator Alex Padilla (Democrat of California), Representative Jim Jordan (Republican of Ohio) and"
     " Senator Bernie Sanders (Independent of Vermont) spoke."),
    ("The (D-N.Y.) senator.", "The (Democrat of New York) senator."),
]

MARKETS = [
    ("The EUR/USD pair fell; USD/JPY and GBP/USD rose.",
     "The euro dollar pair fell; dollar yen and pound dollar rose."),
    # Not a pair of currencies: three capitals that name none, or only one side.
    ("ABC/DEF, USD/ABC and ABC/USD.", "ABC slash DEF, USD slash ABC and ABC slash USD."),
    ("It trades at 12x EBITDA, up 18% YTD, with a P/E of 35.",
     "It trades at twelve times EBITDA, up eighteen percent year to date, with a P E of thirty five."),
    ("A/B testing is I/O bound; N/A.", "A B testing is I O bound; not applicable."),
    # An abbreviation that is no word is said at the sentence's end or before a pause too.
    ("About 1.5x the 30-day avg.", "About one point five times the thirty day average."),
    ("The avg., the min and the Sales dept.", "The average, the min and the Sales department."),
    # Before a scale a decimal's trailing zeros are not said.
    ("Votes: ~77.3M vs. ~75.0M; a $1.0 million prize; $10.0bn; 3.40k users; 1.05M.",
     "Votes: about seventy seven point three million versus about seventy five million; a one million dollar"
     " prize; ten billion dollars; three point four thousand users; one point zero five million."),
    # A currency's sign after the amount (upstream would drop it); a sign before the next amount
    # is that one's.
    ("It costs 5$, 500₽, 100₹ or 20 ¥; 5 $10.",
     "It costs five dollars, five hundred rubles, one hundred rupees or twenty yen; five ten dollars."),
    # A sign before an amount: an extra charge is "plus" (upstream would drop the "+").
    ("Late check-out +€30; a fee of +$5; 3+$5; -$20.",
     "Late check out plus thirty euros; a fee of plus five dollars; three plus five dollars; minus twenty"
     " dollars."),
    # An accountant's negative percent keeps its "%".
    ("Net loss: (3.2)% vs 1.2%.", "Net loss: minus three point two percent versus one point two percent."),
    # One that is a word stays.
    ("The name is apt.", "The name is apt."),
]


@pytest.mark.parametrize("written,spoken", DATELINES + STATES + MARKETS)
def test_reading(written, spoken):
    assert normalize(written, "en") == spoken


@pytest.mark.parametrize("sentence", ["He lives in Gary, Ind., near Chicago.", "Returns YTD look strong.",
                                      "TORONTO /GLOBE NEWSWIRE/ -- Bar.", "The avg., the min."])
def test_the_precheck_sends_them_to_the_rules(sentence):
    assert needs_rules(sentence)
