"""English readings that belong to one register of writing: a prescription's order, a
lab value, an oil market's barrels, a weather chart's pressure and knots, a match's
minute, a verse of scripture, a note's accidental, a key chord, an address's direction,
a listing's rooms, a baking pan in inches, a recipe's measure of something, a court's
rules and reporters, a lawmaker's party, a flight's number, an IPv6 address, a derivative
(realtime/speech/en/shorthand.py, context.py, references.py, symbols.py, web.py,
address.py, fractions.py, units.py). Each reading has its counterpart that must stay as
it is."""

from __future__ import annotations

import pytest

from realtime.speech.normalize import normalize

MEDICINE = [
    ("Labs: Na 138 mEq/L; give 20 mEq of potassium.",
     "Labs: Na one hundred thirty eight milliequivalents per liter; give twenty milliequivalents of"
     " potassium."),
    # An order's capitals after a dose; a range of hours with an en dash.
    ("Ibuprofen 400–600 mg PO q6–8h PRN.",
     "Ibuprofen four hundred to six hundred milligrams by mouth every six to eight hours as needed."),
    ("Take 1 tab PO BID and 2 tabs QHS.", "Take one tab by mouth twice a day and two tabs at bedtime."),
    # Without a dose before them they are names (a number in the sentence: the rules run).
    ("Sign PO 4471 today; the 5 PRN staff came; a BID for the land at 9.",
     "Sign PO forty four seventy one today; the five PRN staff came; a BID for the land at"
     " nine."),
]

TRADE_AND_WEATHER = [
    ("Brent crude rose to $82.30/bbl; output hit 12.9 million bbl/d, or 500,000 bpd.",
     "Brent crude rose to eighty two dollars and thirty cents per barrel; output hit twelve point nine"
     " million barrels per day, or five hundred thousand barrels per day."),
    ("Pressure fell to 985 mb, or 985 hPa; the tank holds 20 MPa.",
     "Pressure fell to nine hundred eighty five millibars, or nine hundred eighty five hectopascals; the"
     " tank holds twenty megapascals."),
    # Outside the air's pressures "mb" is a size.
    ("It is a 5 mb file.", "It is a five megabyte file."),
    ("Winds at 12 kt; an 18kt gold band; a 14K white gold chain; a 15 kt bomb; 20 kt of TNT.",
     "Winds at twelve knots; an eighteen karat gold band; a fourteen karat white gold chain; a fifteen"
     " kiloton bomb; twenty kilotons of TNT."),
    ("Trending: #ThrowbackThursday, #tbt, #AI.", "Trending: hash Throwback Thursday, hash tbt, hash AI."),
    # A "+" after an inch mark was dropped with the mark's reading.
    ('Snow totals of 6-10" are possible, locally 12"+.',
     "Snow totals of six to ten inches are possible, locally twelve plus inches."),
]

SPORT_AND_SCRIPTURE = [
    ("India 287/4 (50 ov) beat Australia; Kohli 103* off 98; he took 5/32 in 10 overs; 3/4 of them.",
     "India two hundred eighty seven for four (fifty overs) beat Australia; Kohli one hundred three not out"
     " off ninety eight; he took five for thirty two in ten overs; three quarters of them."),
    ("The 5* hotel; a 4* review; see note 5* below.",
     "The five star hotel; a four star review; see note five* below."),
    ("In 90' he equalised.", "In the ninetieth minute he equalised."),
    ("He scored in the 89' to win it, at the 45'+2 and in the 90+3'.",
     "He scored in the eighty ninth minute to win it, at the forty fifth minute plus two and in the"
     " ninetieth minute plus three."),
    # Feet: before a noun one foot's size, after a verb the count.
    ("In the 12' boat we sat; a 6' fence; the door is 7' tall.",
     "In the twelve foot boat we sat; a six foot fence; the door is seven feet tall."),
    ("Read John 3:16 and Psalm 23:1-6.",
     "Read John three sixteen and Psalm twenty three, verses one to six."),
    ("See 1 Cor. 13:4–7, Matt 5:9 and Gen 1:1.",
     "See First Corinthians thirteen, verses four to seven, Matthew five nine and Genesis one one."),
    # A name before a clock, a ratio: no verse.
    ("Meet Mark at 4:30 pm; the ratio was 23:1.", "Meet Mark at four thirty p m; the ratio was twenty three"
     " to one."),
]

MUSIC_AND_KEYS = [
    ("Play it in F# major, then drop to B♭; a G# minor chord, Eb major and a Bb clarinet.",
     "Play it in F sharp major, then drop to B flat; a G sharp minor chord, E flat major and a B flat"
     " clarinet."),
    ("Set it in E♮ then C♯; Bb alone; the C# compiler.",
     "Set it in E natural then C sharp; Bb alone; the C sharp compiler."),
    ("Hit Cmd+Shift+4 or Ctrl+1.", "Hit Cmd plus Shift plus four or Ctrl plus one."),
    # A product of a letter and a number; an order's own reader inside "O(...)"; emphasis stays.
    ("It holds i*2, 2*n and a*b; Use O(n*m) time; *bold* text.",
     "It holds i times two, two times n and a times b; Use O of n times m time; *bold* text."),
]

HOMES_AND_KITCHENS = [
    ("Apt. 4B, 221 W. 57th St.; 12 E. Main St. now.",
     "Apartment four B, two twenty one West fifty seventh Street; twelve East Main Street now."),
    # A size before a number is an adjective too (the number's span ends in a space).
    ("A 15-yr 6.125% loan; it was 15-yr.",
     "A fifteen year six point one two five percent loan; it was fifteen yr."),
    # Rooms counted, or describing the home after them.
    ("The house has 3 bd, 2.5 ba, 1,850 sq ft; a 1 bd, 1 ba unit; It has 2 BR and 1 BA; a BA in art.",
     "The house has three bedrooms, two and a half baths, one thousand eight hundred fifty square feet; a"
     " one bedroom, one bath unit; It has two bedrooms and one bath; a BA in art."),
    ("It has 1 BR and 2 BA.", "It has one bedroom and two baths."),
    # Inches after the last side: "inch" before a noun, else "inches".
    ('Buy two 4x6" prints; the box is 12x8x4"; it is 9x13" deep.',
     "Buy two four by six inch prints; the box is twelve by eight by four inches; it is nine by thirteen"
     " inches deep."),
    # A shop's goods: a piece of furniture's sides by letter, sides marked each, a pack's count.
    ('The couch is 84"W x 38"D x 34"H; a 20"W shelf; a 60" x 80" queen mattress; it is 60" x 80".',
     "The couch is eighty four inches wide by thirty eight inches deep by thirty four inches high; a twenty"
     " inch wide shelf; a sixty by eighty inch queen mattress; it is sixty by eighty inches."),
    ('The rim is 1"W and 2"D.', "The rim is one inch wide and two inches deep."),
    # a measuring word after the sides is no noun they describe
    ('The pad is 60" x 80" wide.', "The pad is sixty by eighty inches wide."),
    ("Each pack has 6 × 330 ml cans; 11.97 x 8.46 x 0.24 in; put 3 x 4 in the box.",
     "Each pack has six cans of three hundred thirty milliliters; eleven point nine seven by eight point four"
     " six by zero point two four inches; put three times four in the box."),
    ('Use a 9x13" pan; the print is 8 x 10"; He said "use 9x13" loudly.',
     'Use a nine by thirteen inch pan; the print is eight by ten inches; He said "use nine by thirteen"'
     ' loudly.'),
    ("Add 1½ cups and ½ tsp. salt, ¾ cup sugar, 2¼ lbs beef; a 2½-hour drive; ½ of them.",
     "Add one and a half cups and half a teaspoon of salt, three quarters of a cup of sugar, two and a"
     " quarter pounds beef; a two and a half hour drive; one half of them."),
    ("Mix 1/2 cup butter with 3/4 cup sugar; add 1/4 cup, melted; 1/2 cup of milk; walk 1/2 mile home.",
     "Mix half a cup of butter with three quarters of a cup of sugar; add a quarter of a cup, melted; half"
     " a cup of milk; walk half a mile home."),
]


ASSISTANT = [
    # A voice assistant's answers: an order's long groups, a code in two groups, a clock with
    # its half written onto it, a currency code after an amount of the same money.
    ("Your package (order #112-4455667-8899001) arrives; your code is 483 921; I have 483 921 things.",
     "Your package (order number one one two, four four five five six six seven, eight eight nine nine zero"
     " zero one) arrives; your code is four eight three nine two one; I have four hundred eighty three nine"
     " hundred twenty one things."),
    ("New departure 7:05p; back at 10:30a; 5:00 a day.",
     "New departure seven oh five p m; back at ten thirty a m; five o'clock a day."),
    ("$100 USD is about €92.30 EUR; $5 CAD; €5 USD.",
     "one hundred dollars is about ninety two euros and thirty cents; five Canadian dollars; five euros"
     " USD."),
]

LAW_AND_NEWS = [
    # A pilot's numbers digit by digit (a runway's side, not liters); a speed stays a count.
    ("Cleared to land runway 27L; wind 270 at 15 knots; squawk 7700; Runway 9 is closed; 27 L of fuel.",
     "Cleared to land runway two seven left; wind two seven zero at fifteen knots; squawk seven seven zero"
     " zero; Runway nine is closed; twenty seven liters of fuel."),
    # An en dash between words joins them as a hyphen does (upstream drops it: "ParisLondon").
    ("The Paris–London route, the Dunning–Kruger effect; pages 5–10.",
     "The Paris London route, the Dunning Kruger effect; pages five to ten."),
    # Typesetters' hyphens and spaces; dollars of more countries; an em dash before a reading.
    ("Call 1‑800‑FLOWERS; a well‑known fact; 5\u00a0°C; 1\u202f000\u202f000 people.",
     "Call one, eight hundred, FLOWERS; a well known fact; five degrees Celsius; one million people."),
    ("Price: US$1,299 / CA$1,749 / A$1,999; NT$300.",
     "Price: one thousand two hundred ninety nine US dollars, one thousand seven hundred forty nine Canadian"
     " dollars, one thousand nine hundred ninety nine Australian dollars; three hundred New Taiwan dollars."),
    ("70 g fat — ~2,350 kcal/day — $5 each; 3 – ~4.",
     "seventy grams fat, about two thousand three hundred fifty kilocalories per day, five dollars each;"
     " three to about four."),
    ("See pp. 10-12, n. 4 and nn. 5-7.", "See pages ten to twelve, note four and notes five to seven."),
    ("See Fed. R. Civ. P. 12(b)(6) and Fed. R. Evid. 403.",
     "See Federal Rule of Civil Procedure twelve b six and Federal Rule of Evidence four hundred three."),
    # A reporter's volume and page in pairs; "U.S." before a count is the country.
    ("See 347 U.S. 483 (1954); 139 S. Ct. 2162; 410 F.3d 113; 12 F. Supp. 45.",
     "See three forty seven U.S. four eighty three (nineteen fifty four); one thirty nine Supreme Court"
     " twenty one sixty two; four ten F third one thirteen; twelve F Supp forty five."),
    ("The U.S. 500 index; in the U.S. 3 times.", "The U.S. five hundred index; in the U.S. three times."),
    # A lawmaker's party and state between commas, as in brackets; a grade stays a grade.
    ("Sen. Padilla, D-Calif., and Rep. Jordan, R-Ohio, spoke; grades A, D-, F.",
     "Senator Padilla, Democrat of California, and Representative Jordan, Republican of Ohio, spoke; grades"
     " A, D minus, F."),
    ("The 2s10s spread; wait 2s then 10s.", "The twos tens spread; wait two seconds then ten seconds."),
    ("Take flight UA 837 or flight DL 0412.",
     "Take flight UA eight thirty seven or flight DL zero four one two."),
]

CODE_AND_MATHS = [
    ("The 12GB+256GB model and 8 GB + 128 GB.",
     "The twelve gigabytes plus two hundred fifty six gigabytes model and eight gigabytes plus one hundred"
     " twenty eight gigabytes."),
    # A developer answer's paths, modes, dotfiles, versions and ids.
    ("Run `chmod +x script.sh && ./script.sh`, cd ../lib, use chmod u-w; python -m venv .venv.",
     "Run `chmod plus x script dot sh and dot slash script dot sh`, cd dot dot slash lib, use chmod u minus"
     " w; python dash m venv dot venv."),
    ("Call `GET /api/v2/users/{id}`; open .github and .vscode.",
     "Call `GET slash api slash v two slash users slash id`; open dot github and dot vscode."),
    ("The UUID is 550e8400-e29b-41d4-a716-446655440000.",
     "The UUID is five five zero e eight four zero zero, e two nine b, four one d four, a seven one six, four"
     " four six six five five four four zero zero zero zero."),
    ("Install Python 3.12+; it is faster than v1.x and v2.0.1; we have 3.5+ stars.",
     "Install Python three point twelve plus; it is faster than version one dot x and version two point zero"
     " point one; we have three point five plus stars."),
    # "≈" before an amount is "about", after an operand "is about".
    ("It takes ≈2 min (≈5 s); x ≈ 3; f(x) ≈ 4.",
     "It takes about two minutes (about five seconds); x is about three; f of x is about four."),
    ("A 128K-token window costs $3/1M input tokens, or $0.50/1K.",
     "A one hundred twenty eight thousand token window costs three dollars per million input tokens, or fifty"
     " cents per thousand."),
    # An IPv6 address has a "::" or three colons; a clock has two, a C++ name no hex before its "::".
    ("Ping ::1, fe80::1 and 2001:db8::ff00:42:8329; use std::vector at 10:30.",
     "Ping colon colon one, f e eight zero colon colon one and two zero zero one colon d b eight colon colon"
     " f f zero zero colon four two colon eight three two nine; use std::vector at ten thirty."),
    ("Compute dy/dx and dv/dt; and/or.", "Compute d y by d x and d v by d t; and or."),
    # Greek letters of statistics, dropped before.
    ("Significant, χ²(2) = 8.41; η = 0.3, a κ statistic, ψ, Φ and Γ.",
     "Significant, chi squared(two) equals eight point four one; eta equals zero point three, a kappa"
     " statistic, psi, phi and gamma."),
    # A size before a reading is an adjective too.
    ("A 2.5L 4-cyl engine; a 2 TB drive.",
     "A two point five liter four cylinder engine; a two terabyte drive."),
]


@pytest.mark.parametrize("written,spoken", MEDICINE + TRADE_AND_WEATHER + SPORT_AND_SCRIPTURE + MUSIC_AND_KEYS
                         + HOMES_AND_KITCHENS + ASSISTANT + LAW_AND_NEWS + CODE_AND_MATHS)
def test_reading(written, spoken):
    assert normalize(written, "en") == spoken


@pytest.mark.parametrize("sentence", ["Drop to B♭.", "Then a*b is c.", "Find dv/dt now."])
def test_a_sentence_of_only_these_marks_is_read(sentence):
    # The fast pre-check lets these sentences reach the rules.
    assert normalize(sentence, "en") != sentence
