"""English numbers whose reading the word beside them decides: a year before a thing of
its year ("the 2020 census"), a fiscal year and its quarter, a score out of its total, a
clock's zero seconds, a countdown, a zone in dotted lower case, rooms of a listing, a
link's width, a flight level, a state after its city, a chip's model after its name, an
algorithm's order ("O(n log n)"), a batting average, a caliber, a contract's years and
money, a sum before the thing it sizes, a slash before a span of time
(realtime/speech/en/names.py, dates.py, context.py, address.py, money.py, rules.py,
shorthand.py). Each reading has its counterpart that must stay as it is."""

from __future__ import annotations

import pytest

from realtime.speech.normalize import normalize

YEARS = [
    # A year before a thing of its year, after an article, a possessive or "its".
    ("As of the 2020 census, a 2019 study and its 2023 annual report.",
     "As of the twenty twenty census, a twenty nineteen study and its twenty twenty three annual report."),
    ("The 1999 season; Apple's 2024 lineup; the 2018 general election.",
     "The nineteen ninety nine season; Apple's twenty twenty four lineup; the twenty eighteen general"
     " election."),
    # Counts stay counts: a plural noun, a unit, a word that is no thing of a year.
    ("The 2000 people ran the 1500 meters in a 1500 word essay.",
     "The two thousand people ran the one thousand five hundred meters in a one thousand five hundred"
     " word essay."),
    ("Their 1200 reports and the 1450 votes.",
     "Their one thousand two hundred reports and the one thousand four hundred fifty votes."),
]

FISCAL = [
    # A fiscal year by name, its quarter and half "of" it; a possessive takes no "the".
    ("Apple's Q3 FY2025 revenue beat FY24.",
     "Apple's third quarter of fiscal year twenty twenty five revenue beat fiscal year twenty four."),
    ("In Q1 FY '25, H1 FY24 and CY2023.",
     "In the first quarter of fiscal year twenty five, the first half of fiscal year twenty four and calendar"
     " year twenty twenty three."),
    # A quarter or half hyphened to its year.
    ("It fell in Q4-2024 and H1-2025.",
     "It fell in the fourth quarter of twenty twenty four and the first half of twenty twenty five."),
    # A decade hyphened to a word, a word to a decade: no pause.
    ("In the mid-'80s, a 1990s-era law; wait 30s-ish.",
     "In the mid eighties, a nineteen nineties era law; wait thirty seconds ish."),
    # A two-digit year keeps its written digits.
    ("Q1 '05 and 1H05.", "the first quarter of zero five and the first half of zero five."),
    ("The firms' Q2 and our Q4 beat Q3 2024.",
     "The firms' second quarter and our fourth quarter beat the third quarter of twenty twenty four."),
]

SCORES = [
    # After a word that scores, a slash is "out of".
    ("The score was 10/11 on the quiz.", "The score was ten out of eleven on the quiz."),
    ("Final score: 7/8; a grade of 45/50; she scored 18/20.",
     "Final score: seven out of eight; a grade of forty five out of fifty; she scored eighteen out of"
     " twenty."),
    # Ordinals joined by slashes, each read (no code of letters and digits).
    ("She finished 1st/2nd/3rd; the 1st/2nd floor.",
     "She finished first, second, third; the first, second floor."),
    # A full score on a scale of five or ten; "24/7/365".
    ("He's a 10/10 would recommend, 5/5, a 24/7/365 service; 4/4 cup.",
     "He's a ten out of ten would recommend, five out of five, a twenty four seven three sixty five service;"
     " four four cup."),
    # A share of something stays a fraction.
    ("He scores 3/4 of the time.", "He scores three quarters of the time."),
]

CLOCKS = [
    # On the clock zero seconds are not said; with seconds they are.
    ("It's 10:00:00 p.m. now, not 10:30:15 PM.", "It's ten p m now, not ten thirty and fifteen seconds p m."),
    ("A run of 1:02:03.", "A run of one hour, two minutes, three seconds."),
    # A countdown reads minutes and seconds.
    ("T-minus 10:00 and counting; T minus 2:30.",
     "T minus ten minutes and counting; T minus two minutes, thirty seconds."),
    # Opening hours: a day before them, a clock time running to an hour.
    ("Mon–Fri 9–5, Sat 10am-4pm, Sun closed; Sun: 11:30-3; from 9:30-5.",
     "Monday to Friday nine to five, Saturday ten a m to four p m, Sunday closed; Sunday: eleven thirty to"
     " three; from nine thirty to five."),
    ("The Sun 12 times; 11:30-3.5.", "The Sun twelve times; eleven thirty minus three point five."),
    # A zone in dotted lower case, said as its capitals.
    ("At 9 p.m. e.s.t. or 6 p.m. p.d.t.", "At nine p m EST or six p m PDT."),
    ("At 9 p.m. e.s.t.", "At nine p m EST."),
]

LISTINGS = [
    ("The apartment is 3BR/2BA with 1,200 sq ft.",
     "The apartment is three bedrooms, two baths with one thousand two hundred square feet."),
    ("A 3BR condo; 2 bd, 2.5 ba; a 4 bed 3 bath home.",
     "A three bedroom condo; two bedrooms, two and a half baths; a four bedroom, three bath home."),
    # "BR" alone, after no number, is kept.
    ("A BR of 3 and a BA in history.", "A BR of three and a BA in history."),
]

HARDWARE = [
    ("The card needs a PCIe 4.0 x16 slot.", "The card needs a PCIe four point zero by sixteen slot."),
    ("PCIe Gen4 x4 and PCIe x16; two x8 lanes.",
     "PCIe Gen four by four and PCIe by sixteen; two by eight lanes."),
    # Not a link: an article said "an", a product, an unknown width.
    ("An x8 slot; multiply x2 by 3; buy an x16 slot.",
     "An x eight slot; multiply x two by three; buy an x sixteen slot."),
    ("Climb to FL350 and maintain.", "Climb to flight level three five zero and maintain."),
    # Sizes to choose from are no code; a slash before an amount of a measure is "per".
    ("Storage: 256GB/512GB/1TB; 6 L/100km; 250 kcal/100g; 3 kg/2.",
     "Storage: two hundred fifty six gigabytes, five hundred twelve gigabytes, one terabyte; six liters per"
     " one hundred kilometers; two hundred fifty kilocalories per one hundred grams; three kilograms, two."),
    ("Wi-Fi 6E (802.11ax), 802.3bz, 802.1X and IEEE 802.11; it costs 802.11 dollars.",
     "Wi Fi six E (eight oh two dot eleven a x), eight oh two dot three b z, eight oh two dot one X and IEEE"
     " eight oh two dot eleven; it costs eight hundred two point one one dollars."),
]

CHIPS = [
    ("The AMD Ryzen 9 7950X and Ryzen 7 5800X3D.",
     "The AMD Ryzen nine seventy nine fifty X and Ryzen seven fifty eight hundred X three D."),
    ("Core Ultra 7 155H, EPYC 9654 and Threadripper PRO 7995WX.",
     "Core Ultra seven one fifty five H, EPYC ninety six fifty four and Threadripper PRO seventy nine"
     " ninety five W X."),
    ("Ryzen 5 and Ryzen 9.", "Ryzen five and Ryzen nine."),
    ("The 787's range is 7,530 nmi at 450 kts.",
     "The seven eighty seven's range is seven thousand five hundred thirty nautical miles at four hundred"
     " fifty knots."),
]

NAMED_NUMBERS = [
    # Tax forms and plans, a freeway: said in pairs.
    ("File Form 1040, Form 941 and a 1099-NEC; your 1040 is due; 1099 forms.",
     "File Form ten forty, Form nine forty one and a ten ninety nine NEC; your ten forty is due; ten"
     " ninety nine forms."),
    ("A 529 plan on the 405 freeway.", "A five twenty nine plan on the four oh five freeway."),
    ("She scored 1520 on the SAT, a 1350 SAT score; Fahrenheit 451 and Blink-182.",
     "She scored fifteen twenty on the SAT, a thirteen fifty SAT score; Fahrenheit four fifty one and Blink"
     " one eighty two."),
    # Games and shows: a level, a patch's version, an episode.
    ("My K/D is 2.5 at lvl 50 since patch 14.23; S4E7 and Ep. 12 drop Friday.",
     "My K D is two point five at level fifty since patch fourteen point twenty three; Season four, episode"
     " seven and Episode twelve drop Friday."),
    # A class schedule: a course's code in pairs, its days.
    ("I took ECON 210 and CS 101, section 002; office hours Tu/Th 2–4 pm; MATH 2210 meets MWF 10:10.",
     "I took ECON two ten and CS one oh one, section zero zero two; office hours Tuesday and Thursday two to"
     " four p m; MATH twenty two ten meets Monday, Wednesday and Friday ten ten."),
    ("TTh 9:30, MW 3pm; the MW band; I WANT 250 BUCKS.",
     "Tuesday and Thursday nine thirty, Monday and Wednesday three p m; the MW band; I WANT two hundred"
     " fifty BUCKS."),
    # A car's sheet: fuel economy city and highway, cylinders, R P M, a tire's size.
    ("It gets 27/35 mpg city/hwy and 120 MPGe; a 4-cyl, 203 hp @ 6,600 rpm; 225/65R17 tires; a V8, 8 cyl.",
     "It gets twenty seven, thirty five miles per gallon city, highway and one hundred twenty M P G e; a"
     " four cylinder, two hundred three horsepower at six thousand six hundred R P M; two twenty five sixty"
     " five R seventeen tires; a V eight, eight cylinder."),
    # Counts stay counts.
    ("1099 reasons, the 250 plans and 405 cars.", "one thousand ninety nine reasons, the two hundred fifty"
     " plans and four hundred five cars."),
    # The military's clock: a leading zero or a word of time before it.
    ("Report at 0800 hours; the op starts at 1430 hrs, by 0600 or at 0905 hrs.",
     "Report at oh eight hundred hours; the op starts at fourteen thirty hours, by oh six hundred or at"
     " oh nine oh five hours."),
    ("At 1430 hrs; 0600 hours, 0000 hours.", "At fourteen thirty hours; oh six hundred hours, zero hundred"
     " hours."),
    ("File Form 1040-SR.", "File Form ten forty SR."),
    ("1500 hours of service and 1430 hrs of footage.",
     "one thousand five hundred hours of service and one thousand four hundred thirty hours of footage."),
    ("Take the 7 train to Union Sq. Park, 3 sq. ft, or Times Sq.",
     "Take the seven train to Union Square Park, three square feet, or Times Square."),
]

ORDERS = [
    ("It runs in O(n log n) time and O(1) space.", "It runs in O of n log n time and O of one space."),
    ("O(n^2), O(n²), Θ(n*m), O(2^n) and O(n^k).",
     "O of n squared, O of n squared, theta of n times m, O of two to the n and O of n to the k."),
    # Without a digit the sentence still reaches the rules.
    ("Lookups take O(log n); sorting O(n!); search O(sqrt n).",
     "Lookups take O of log n; sorting O of n factorial; search O of square root of n."),
    ("Ω(n log n) is a lower bound.", "omega of n log n is a lower bound."),
    # Not an order: a list, a word, nothing inside.
    ("O(a, b) and Oh(no) and O( ).", "O(a, b) and Oh(no) and O( )."),
]

SPORTS = [
    ("He hit .312 with a .275 average, batting .300; hitting .087; a .250 hitter.",
     "He hit three twelve with a two seventy five average, batting three hundred; hitting oh eighty"
     " seven; a two fifty hitter."),
    ("Hit .300 or better; hitting .100.", "Hit three hundred or better; hitting one hundred."),
    # No average: a decimal elsewhere.
    ("The ratio was .312 overall.", "The ratio was point three one two overall."),
    ("A .45 caliber, a .308 Winchester and .22 LR ammo.",
     "A forty five caliber, a three oh eight Winchester and twenty two LR ammo."),
    ("The Chiefs are favorites, O/U 47.5.", "The Chiefs are favorites, over under forty seven point five."),
    # A record running down is no pause.
    ("Improving to 45-30 on the season; they fell to 20-25 this year.",
     "Improving to forty five to thirty on the season; they fell to twenty to twenty five this year."),
    ("He signed a 4-yr/$120M deal.", "He signed a four year, one hundred twenty million dollar deal."),
    ("A 2-year, $30 million contract; the $1.5 billion question.",
     "A two year, thirty million dollar contract; the one point five billion dollar question."),
    # Money that sizes nothing stays many.
    ("He paid $30 million for it.", "He paid thirty million dollars for it."),
    ("Call me b/w 2 and 4; a b/w photo.", "Call me between two and four; a b slash w photo."),
    ("She is 5' 4\" and he is 5'11\".", "She is five foot four and he is five foot eleven."),
    # After a slash a reading keeps its space (upstream drops the slash: no "Priceten").
    ("Size/10 cm ruler.", "Size/ ten centimeters ruler."),
    ("Max 4 doses/24 hrs, 1 tablet/12 hours.",
     "Max four doses per twenty four hours, one tablet per twelve hours."),
]

HISTORY = [
    # A life's dates in brackets; a lone "I" before them is a monarch's numeral.
    ("Elizabeth I (r. 1558–1603); Shakespeare (b. 1564, d. 1616); Homer (fl. 8th century BC).",
     "Elizabeth the first (reigned fifteen fifty eight to sixteen oh three); Shakespeare (born fifteen sixty"
     " four, died sixteen sixteen); Homer (flourished eighth century B C)."),
    ("Plan b. 5 people; then I (really) tried.", "Plan b. five people; then I (really) tried."),
    # The era before its year; after a century.
    ("Vesuvius erupted in AD 79, in the 2nd millennium BCE; 476 AD.",
     "Vesuvius erupted in A D seventy nine, in the second millennium B C E; four seventy six A D."),
    ("Beethoven's 9th Symphony, Op. 125.", "Beethoven's ninth Symphony, Opus one hundred twenty five."),
]

STATES = [
    # A state that is no word after its city; one that is a word after a place's word.
    ("Stroudsburg, PA is small; she moved to Boston, MA.",
     "Stroudsburg, Pennsylvania is small; she moved to Boston, Massachusetts."),
    ("Born in Tulsa, OK and raised in Portland, OR, then from Oklahoma City, OK.",
     "Born in Tulsa, Oklahoma and raised in Portland, Oregon, then from Oklahoma City, Oklahoma."),
    # The words stay words.
    ("Sure, OK. Yes, ME too. Fine, OR not.", "Sure, OK. Yes, ME too. Fine, OR not."),
]


@pytest.mark.parametrize("written,spoken", YEARS + FISCAL + SCORES + CLOCKS + LISTINGS + HARDWARE + CHIPS
                         + NAMED_NUMBERS + ORDERS + SPORTS + HISTORY + STATES)
def test_reading(written, spoken):
    assert normalize(written, "en") == spoken
