"""English readings of everyday writing where a plain reading goes wrong: a model number
counted many ("two RTX 4090s" is no "seconds"), a share of a kitchen measure, weekdays
joined by slashes, "10x faster", a mixing ratio, "the low 70s", two measures either side of
a spaced slash, an estimate's year, "pop." (realtime/speech/en/shorthand.py, fractions.py,
dates.py, rules.py). Each reading has its counterpart that must stay as it is."""

from __future__ import annotations

import pytest

from realtime.speech.lang import needs_rules
from realtime.speech.normalize import normalize
from realtime.speech.rewrite import rule, run
from realtime.speech.sentences import split_sentences

NAMES = [
    # Named things counted many: the number's last word takes the plural.
    ("The 747s and two RTX 4090s.", "The seven forty sevens and two RTX forty nineties."),
    ("Buy 8 H100s, 16 A100s and MP3s.", "Buy eight H one hundreds, sixteen A one hundreds and MP threes."),
    ("Two Pixel8s and a times b / c.", "Two Pixel eights and a times b divided by c."),
    ("Two F-35s and an F-16.", "Two F thirty fives and an F sixteen."),
    ("The A380s and an A320.", "The A three eighties and an A three twenty."),
    # A variant after a hyphen is its own number: no pause, no "to".
    ("The 777-300ER and Boeing 747-400.", "The seven seventy seven three hundred ER and Boeing seven forty"
     " seven four hundred."),
    ("A 787-9 and an A321-200s.", "A seven eighty seven nine and an A three twenty one two hundreds."),
    ("Boeing 777X and Boeing 7478.", "Boeing seven seventy seven X and Boeing seven thousand four hundred"
     " seventy eight."),
    # A named release's parts are numbers; a decimal's digits elsewhere.
    ("Python 3.12, Node 18.17, iOS 17.4 and version 2.10.", "Python three point twelve, Node eighteen point"
     " seventeen, iOS seventeen point four and version two point ten."),
    ("Python 3.11.4, 3.12 kg and Mr 3.12.", "Python three point eleven point four, three point one two"
     " kilograms and Mr three point one two."),
    ("Windows 10/11 and iPhone 14/15.", "Windows ten or eleven and iPhone fourteen or fifteen."),
    ("Windows 9/10, Win 10/12, add 10/11.", "Windows nine out of ten, Win ten twelfths, add ten elevenths."),
    ("Per Sec. 4(b), secs. 3 and 30 sec. later.",
     "Per Section four b, sections three and thirty seconds later."),
    # A prescription's times; the zone between two clocks.
    ("Take 10 mg b.i.d., 5 mg t.i.d., 2 mg q.i.d., 1 tab p.r.n., q6h, q4-6h.",
     "Take ten milligrams twice a day, five milligrams three times a day, two milligrams four times a day,"
     " one tab as needed, every six hours, every four to six hours."),
    ("Take it q.d.", "Take it once a day."),
    ("At 8:15 p.m. ET/5:15 p.m. PT.", "At eight fifteen p m ET, five fifteen p m PT."),
    # A lone Greek letter is named; a Greek word is another script (listed unspoken by the caller).
    ("A = πr², Δt, α + β, a β-blocker, 5 μm.", "A equals pi r squared, delta t, alpha plus beta, a beta"
     " blocker, five micrometers."),
    ("Say Καλημέρα.", "Say Καλημέρα."),
    ("Beads of 3 x 5 μm, 2 * 10 μm and the μ of it.", "Beads of three by five micrometers, two times ten"
     " micrometers and the mu of it."),
    # A range of quarters.
    ("It covers Q1–Q3 and Q2-Q4 2024.", "It covers the first to the third quarter and the second to the"
     " fourth quarter of twenty twenty four."),
    ("Growth in 1H23, 2H 2024 and H1 '25; an H1 heading.", "Growth in the first half of twenty three, the"
     " second half of twenty twenty four and the first half of twenty five; an H one heading."),
    # A mark alone between two readings: a dash or tilde a range, a slash or an em dash a pause.
    ("It is 20°C~25°C, 10 kg–20 kg, 3rd–5th, 5 kg - 9 kg.", "It is twenty degrees Celsius to twenty five"
     " degrees Celsius, ten kilograms to twenty kilograms, third to fifth, five kilograms to nine"
     " kilograms."),
    ("Pay $5/$10 or 5 km—10 km.", "Pay five dollars, ten dollars or five kilometers, ten kilometers."),
    ('It is 12" x 8" x 4"; save 40% — today.',
     "It is twelve by eight by four inches; save forty percent, today."),
    ("Ends 5 kg- or more.", "Ends five kilograms- or more."),
    ("– 5 kg –", "– five kilograms –"),
    # Euros written the continental way; an English "€7.50" and "€1,299" stay English.
    ("Pay €7,50, 7,50 €, €1.299,00 or 1.299 €.", "Pay seven euros and fifty cents, seven euros and fifty"
     " cents, one thousand two hundred ninety nine euros or one thousand two hundred ninety nine euros."),
    ("Pay €7.50, €1,299 or 5 €.", "Pay seven euros and fifty cents, one thousand two hundred ninety nine"
     " euros or five euros."),
    ("Pay 50 zł, PLN 20.50, 1 zł, ฿100, ZAR 300 or DKK 75.", "Pay fifty zlotys, twenty zlotys and fifty"
     " groszy, one zloty, one hundred baht, three hundred rand or seventy five kroner."),
    # A year before a country's initials; an associate professor.
    ("In the 2020 U.S. election, an assoc. prof. won.", "In the twenty twenty U.S. election, an associate"
     " professor won."),
    ('She is a.k.a. "The Boss" (cf. Fig. 2).', 'She is also known as "The Boss" (compare Figure two).'),
    # An identifier with letters after a word that introduces one: letters as letters, digits one by one.
    ("Order #A12-3345 ships; tracking 1Z999AA1012; ref AB1234.", "Order number A one two, three three four"
     " five ships; tracking one Z nine nine nine A A one zero one two; ref A B one two three four."),
    # A spaced en dash between numbers is a range, a spaced hyphen subtracts; a spaced dash between
    # words is a pause.
    ("Pages 5 – 10, 5 - 3 = 2, late – very late.", "Pages five to ten, five minus three equals two, late,"
     " very late."),
    ('WASHINGTON (AP) — The vote; he said "no" — then left.', 'WASHINGTON (AP), The vote; he said "no", then'
     ' left.'),
    # A processor's model after its generation; a protocol's version.
    ("The i7-13700K, i9-9900K, i3-1215U, i3-8109U.", "The i seven thirteen seven hundred K, i nine ninety"
     " nine hundred K, i three twelve fifteen U, i three eighty one oh nine U."),
    ("The i7-12650H and i7-7700HQ.", "The i seven twelve six fifty H and i seven seventy seven hundred H Q."),
    ("Use HTTP/2, HTTP/1.1 or X/Y.", "Use HTTP two, HTTP one point one or X slash Y."),
    # Contractions whose apostrophe would leave another word: "'d" is "had" before a participle.
    ("I'd've gone if you'd asked; she'd gone, I'd need it, we'd proceeded.", "I would have gone if you had"
     " asked; she had gone, I would need it, we had proceeded."),
    ("I don't have 2 and I'd.", "I don't have two and I would."),  # no pronoun; "'d" ending the sentence
    # An ellipsis is three dots, which upstream keeps as a pause (it drops the one mark).
    ("It was 3–2… incredible.", "It was three to two... incredible."),
    # A range of months; a paragraph's mark.
    ("The Jan.–Mar. quarter, Apr–Jun 2024, Mar-15 and the march-may thing.", "The January to March quarter,"
     " April to June twenty twenty four, March fifteenth and the march may thing."),
    ("Chapter 3, ¶ 4 and ¶¶ 5-6.", "Chapter three, paragraph four and paragraphs five to six."),
    # Social text: a tag, a handle, the languages C# and F#; a period written short after a word.
    ("Loving it #SundayFunday @sarah_j in C# and F#; see #5 and ABC#x.", "Loving it hash Sunday Funday at"
     " sarah underscore j in C sharp and F sharp; see number five and ABC hash x."),
    ("Up 2x vs last yr., every wk and this mo; wait a mo.", "Up two x versus last year, every week and this"
     " month; wait a mo."),
    ("TL;DR: it works; tl;dr.", "T L D R: it works; T L D R."),
    # Seven digits before a counted noun are a quantity (an id otherwise); a dotted ISO date; no
    # year before a decimal point.
    ("It has 1001111 people; call 5551234567.", "It has one million one thousand one hundred eleven people;"
     " call five five five one two three four five six seven."),
    ("On 2012.01.05, v. 2024.13.40 came.", "On January fifth, twenty twelve, v. two thousand twenty four"
     " point thirteen point forty came."),
    # Counterparts: seconds, a decade, a name without a plural.
    ("Wait 30s, then 747 s.", "Wait thirty seconds, then seven hundred forty seven seconds."),
    ("The RTX 4090 and ISO 9001.", "The RTX forty ninety and ISO ninety oh one."),
]
MEASURES = [
    # A share of one measure, said as of one; a range of shares; the plural written.
    ("Mix 3/4 cup, 1/2 hour, 1/8 inch.", "Mix three quarters of a cup, half an hour, an eighth of an inch."),
    ("Add 1/4-1/2 teaspoon and 2/3 cups.", "Add a quarter to half a teaspoon and two thirds of a cup."),
    ("Add 1/2–3/4 cup.", "Add half to three quarters of a cup."),
    ("Add 4/4 cup and 1/4-3/3 cup.", "Add four four cup and one quarter to three three cup."),  # no share
    ("About 1 1/2 hours, 2 1/4 cups.", "About one and a half hours, two and a quarter cups."),
    ("Eat 1/2 now, 5/4 cup.", "Eat one half now, five quarters cup."),
    ("Buy two 12-oz. cans.", "Buy two twelve ounce cans."),
    # A mixed number with a hyphen ("1-1/4"), lumber counted many, a torque's unit.
    ('A #8 x 1-1/4" screw; 1-1/2 cups; 2x4s; 25 ft-lbs.', "A number eight by one and a quarter inch screw;"
     " one and a half cups; two by fours; twenty five foot pounds."),
    # Two measures either side of a spaced slash: both read, with a pause.
    ("It was 72°F / 22°C.", "It was seventy two degrees Fahrenheit, twenty two degrees Celsius."),
    ("It weighs 2 kg / 4.4 lb.", "It weighs two kilograms, four point four pounds."),
    ("Borrow $12@12% now.", "Borrow twelve dollars at twelve percent now."),
]
COUNTS = [
    # Weekdays joined by slashes; "Wed", "Sat", "Sun" alone are words.
    ("Open Mon/Wed/Fri and Sat./Sun.", "Open Monday, Wednesday and Friday and Saturday and Sunday."),
    ("Tue / Thu only; Tues/Thurs too.", "Tuesday and Thursday only; Tuesday and Thursday too."),
    # A lowercase "march" or "may" before a number is the verb unless a word dates it.
    ("They march 2000 soldiers; they may 2000 times; in march 2020.", "They march two thousand soldiers;"
     " they may two thousand times; in March twenty twenty."),
    ("We wed Sat and sun.", "We wed Sat and sun."),
    # A multiple before a comparison is "times"; elsewhere the "x" stays.
    ("It is 10x faster, 4x less, 1.5x the price, 3X more.",
     "It is ten times faster, four times less, one point five times the price, three times more."),
    ("A 4x zoom and 2x points.", "A four x zoom and two x points."),
    ("Costs rose 2.5x. Speed: 2x", "Costs rose two point five x. Speed: two x"),  # as NeMo reads them
    # A power of ten in superscript; a scale named without a number.
    ("It is 3×10⁸ m/s and 1.6 × 10⁻¹⁹ C.", "It is three times ten to the power of eight meters per second and"
     " one point six times ten to the power of minus nineteen C."),
    ("It is -40° in both °C and °F.", "It is minus forty degrees in both degrees Celsius and degrees"
     " Fahrenheit."),
    # A mixing ratio is no clock time.
    ("A 1:10 ratio, odds of 5:2, a ratio of 16:9.", "A one to ten ratio, odds of five to two, a ratio of"
     " sixteen to nine."),
    ("A 2:30 meeting.", "A two thirty meeting."),
    ("A 1:50,000 scale map.", "A one to fifty thousand scale map."),
    ("Room 4B is on the 4th fl. The 2nd fl. lobby.",
     "Room four B is on the fourth floor. The second floor lobby."),
    # A table's cells, paused; a heart between "I" and a name.
    ("| Pro | $25/mo | 5 |", "| Pro, twenty five dollars per month, five,"),
    ("I ❤️ NY and I ♥ you.", "I love NY and I love you."),
    # Sports: a year before a league's initials and its event, the betting line.
    ("The 2026 FIFA World Cup, the 2024 NBA season, the 2000 GB drive; the over/under.",
     "The twenty twenty six FIFA World Cup, the twenty twenty four NBA season, the two thousand gigabyte"
     " drive; the over under."),
    # A decade after a word that places it in the decade.
    ("In the high 90s, upper 80s, low 70s, lower 60s.",
     "In the high nineties, upper eighties, low seventies, lower sixties."),
    ("Do 20 reps of 30s.", "Do twenty reps of thirty seconds."),
    ("Set the timeout to 30s; the 60s to 70s.",
     "Set the timeout to thirty seconds; the sixties to seventies."),
    ("Let x = y / 0 and A / B.", "Let x equals y divided by zero and A slash B."),
    # An estimate's year; "est." after a count is an estimate, after a name "established".
    ("Pop. 1,204,000 (2023 est.)", "Population one million two hundred four thousand (twenty twenty three"
     " estimate)"),
    ("About 3,000 (est. 2019), Harvard (est. 1636).",
     "About three thousand (estimated twenty nineteen), Harvard (established sixteen thirty six)."),
    ("Lyon (pop. 522,000) is big.", "Lyon (population five hundred twenty two thousand) is big."),
]


@pytest.mark.parametrize("written,spoken", NAMES + MEASURES + COUNTS)
def test_reading(written, spoken):
    assert normalize(written, "en") == spoken


def test_a_joint_is_read_only_between_two_readings():
    spans = run("x 5 kg – 9 kg – y", [rule("unit", r"\d kg", lambda m: "K")], {"–": "to"})
    assert [(s.original, s.spoken) for s in spans] == [
        ("x ", "x "), ("5 kg", "K"), (" – ", "to"), ("9 kg", "K"), (" – y", " – y")]
    assert "到" in normalize("温度20℃-25℃，2019年~2021年。", "zh")


@pytest.mark.parametrize("sentence", ["Open Sat./Sun.", "Wed/Sat only.", "Lyon, pop. 5 now.",
                                      "| Plan | Price |", "I ❤ NY.", "Take it q.d.", "α rays.",
                                      "Late – very late.", "The Jan.–Mar. quarter.", "Every wk.",
                                      "TL;DR: yes."])
def test_precheck_sends_them_to_the_rules(sentence):
    assert needs_rules(sentence)


@pytest.mark.parametrize("text,expected", [
    ("Sen. Warren (D-Mass.) voted no.", ["Sen. Warren (D-Mass.) voted no."]),
    ("It grew (see Fig. 3.) and fell.", ["It grew (see Fig. 3.) and fell."]),
    ("He said (it was late.) Then he left.", ["He said (it was late.)", "Then he left."]),
    ("Apple Inc. (NASDAQ: AAPL) fell.", ["Apple Inc. (NASDAQ: AAPL) fell."]),
    ('She is a.k.a. "The Boss" (cf. Fig. 2). Yes.', ['She is a.k.a. "The Boss" (cf. Fig. 2).', "Yes."]),
    ("He had 10 reb. and 9 ast. in 41 min. Then he sat.",
     ["He had 10 reb. and 9 ast. in 41 min.", "Then he sat."]),
    ("At 8:15 p.m. ET/5:15 p.m. PT. Go.", ["At 8:15 p.m. ET/5:15 p.m. PT.", "Go."]),
])
def test_an_aside_or_a_zone_ends_no_sentence(text, expected):
    assert split_sentences(text) == expected


def test_population_and_associate_end_no_sentence():
    assert split_sentences("Lyon (pop. 522,000) is big. I like K-pop. It is fun.") == [
        "Lyon (pop. 522,000) is big.", "I like K-pop.", "It is fun."]
    assert split_sentences("She is an assoc. prof. at Yale. Yes.") == [
        "She is an assoc. prof. at Yale.", "Yes."]
