"""English readings on the edges their rules decide (realtime/speech/en/dates.py, context.py):
each case sits on a boundary (the last hour of the morning, the first of the afternoon,
the shortest international number, the last second of a pace), so moving the boundary by
one reads one of them differently. Written against a mutation run's survivors."""

from __future__ import annotations

import pytest

from realtime.speech.normalize import normalize

CASES = [
    # The clock: "am"/"pm" only with hours 1-12; afternoon hours say "p m" themselves.
    ("At 1:15 am.", "At one fifteen a m."),
    ("At 12:30 pm.", "At twelve thirty p m."),
    ("At 12:45.", "At twelve forty five."),
    ("At 13:00.", "At one p m."),
    ("At 13:30 pm.", "At one thirty p m."),
    ("At 23:59.", "At eleven fifty nine p m."),
    ("At 0:30.", "At twelve thirty a m."),
    ("At 10:09 or 10:10.", "At ten oh nine or ten ten."),
    ("At 6am or 11 A.M.", "At six a m or eleven a m."),
    ("At 10:30:15 am.", "At ten thirty and fifteen seconds a m."),
    ("At 10:30:01 pm.", "At ten thirty and one second p m."),
    ("At 10:00:15 pm.", "At ten o'clock and fifteen seconds p m."),
    ("At 14:30:15.", "At fourteen hours, thirty minutes, fifteen seconds."),
    # With seconds and no half of the day: a duration, its zero parts unsaid.
    ("It took 1:00:00.", "It took one hour."),
    ("It took 0:00:05.", "It took five seconds."),
    ("It took 0:00:00.", "It took zero seconds."),
    ("It took 10:30:15.", "It took ten hours, thirty minutes, fifteen seconds."),
    # Ranges of clock times.
    ("At 9:00-17:00.", "At nine o'clock to five p m."),
    ("At 13:00-14:00 PM.", "At one p m to two p m."),
    # Past the clock's hours: minutes and seconds, only with seconds under 60.
    ("It took 24:30.", "It took twenty four minutes, thirty seconds."),
    ("It took 30:60 or 23:61.", "It took thirty to sixty or twenty three to sixty one."),
    # Paces: a leading zero or 12-59 is seconds; 60 is no second.
    ("A 1'05\" pace.", "A one minute, five seconds pace."),
    ("A 4'12\" pace.", "A four minutes, twelve seconds pace."),
    ("A 4'59\" pace.", "A four minutes, fifty nine seconds pace."),
    ("A 4'60\" pace.", "A four foot sixty pace."),
    # International numbers: eight digits at least.
    ("Call +44 12 3456.", "Call plus four four, one two, three four five six."),
    ("Call +44 12 345.", "Call plus forty four twelve three hundred forty five."),
    # "10k" is a distance after an article or before "run", each alone.
    ("The 10k in May.", "The ten k in May."),
    ("A 10k is far.", "A ten k is far."),
    ("Our 10k runs are fun.", "Our ten k runs are fun."),
    ("Our 10k fans.", "Our ten thousand fans."),
    # A lone V or X after a monarch's name, whatever follows; a lone I only before a pause.
    ("Henry V went home.", "Henry the fifth went home."),
    ("Elizabeth I went home.", "Elizabeth I went home."),
    ("Elizabeth I went home at 5.", "Elizabeth I went home at five."),  # the rules run here
    # What no rule can read is left to the plain readings, never an exception.
    ("At 0:30 pm.", "At zero to thirty pm."),
    ("From 11:00-0:30 pm.", "From eleven o'clock to zero to thirty pm."),
    ("From 9:00-10:30.", "From nine o'clock to ten thirty."),
    ("On 2024-13-45.", "On twenty twenty four to thirteen to forty five."),
    # Dates: two-digit years, day ranges with and without a year.
    ("On 12/25/23.", "On December twenty fifth, twenty three."),
    ("Jan 5-7 only.", "January fifth to seventh only."),
    ("Jan 5-40.", "January fifth minus forty."),
    ("Open Mon–Thurs.", "Open Monday to Thursday."),
    # Titles before a name (capitalised, with their dot); a lowercase word stays.
    ("Lt. Col. Rhodes met Sen. Warren.", "Lieutenant Colonel Rhodes met Senator Warren."),
    ("Ask Gov. Newsom or Rep. Lee.", "Ask Governor Newsom or Representative Lee."),
    ("The Rev. King spoke.", "The Reverend King spoke."),
    ("Gen. Z and Capt. Kirk.", "General Z and Captain Kirk."),
    ("Do one more rep. now.", "Do one more rep. now."),
    # A building's unit and a road before their number.
    ("Apt. 4B is up.", "Apartment four B is up."),
    ("Go to Ste 200.", "Go to Suite two hundred."),
    ("My apt #12 is on Fl. 3, Rm 301.", "My Apartment twelve is on Floor three, Room three hundred one."),
    ("Take Hwy. 101 or Rte 66.", "Take Highway one zero one or Route sixty six."),
    ("The apt was nice.", "The apt was nice."),
    # "est." estimates, "Est." before a year founded.
    ("The est. cost was $30.", "The estimated cost was thirty dollars."),
    ("Est. 1885.", "Established eighteen eighty five."),
    ("It was est. 1885.", "It was established eighteen eighty five."),
    # Counted shorthand after a number; cents; feet then inches.
    ("Up 0.5pp and 23 pct.", "Up zero point five percentage points and twenty three percent."),
    ("He had 12 pts.", "He had twelve points."),
    ("It costs 50¢ or 1 ¢.", "It costs fifty cents or one cent."),
    ("He is 5 ft 10 in tall.", "He is five feet ten inches tall."),
    ("It is 1 ft 1 in.", "It is one foot one inch."),
    # A score runs down and is read "to"; any other run down is two numbers.
    ("The Lakers won 105-98.", "The Lakers won one hundred five to ninety eight."),
    ("A 3-2 win.", "A three to two win."),
    ("They lost 4-1 at home.", "They lost four to one at home."),
    ("The final score: 2-1.", "The final score: two to one."),
    ("Part 864-2 is here.", "Part eight hundred sixty four, two is here."),
    # Arrows, underscores, "w/", year over year.
    ("16GB -> 48GB.", "sixteen gigabytes to forty eight gigabytes."),
    ("A → B.", "A to B."),
    ("Set MAX_SIZE to 5.", "Set MAX underscore SIZE to five."),
    ("Coffee w/ milk, tea w/o sugar.", "Coffee with milk, tea without sugar."),
    ("Sales rose 12% YoY and 3% QoQ.",
     "Sales rose twelve percent year over year and three percent quarter over quarter."),
    # "#" and "No:" before an identifier are said; "the" is not said twice.
    ("Item #4567 costs 5.", "Item number four five six seven costs five."),
    ("Ticket#8888 is open.", "Ticket number eight eight eight eight is open."),
    ("Order No: 12345.", "Order number: one two three four five."),
    ("In the Q2 report.", "In the second quarter report."),
    ("In Q2 we grew.", "In the second quarter we grew."),
    ("The Q4 '23 and Q1’24 results.",
     "The fourth quarter of twenty three and the first quarter of twenty four results."),
    ("Drink (~2 L) daily.", "Drink (about two liters) daily."),
    ("The 2020 Tokyo Olympics and the 1500 meters.",
     "The twenty twenty Tokyo Olympics and the one thousand five hundred meters."),
    ("A 60-min podcast, a 5-km run, 10-15 min.",
     "A sixty minute podcast, a five kilometer run, ten to fifteen minutes."),
    ("At 1600 Pennsylvania Ave. NW, today.", "At sixteen hundred Pennsylvania Avenue Northwest, today."),
    # Powers after a letter, a spaced plus, counted time shorthand, subreddits.
    ("E = mc^2 and a^2 + b^2 = c^2.", "E equals mc squared and a squared plus b squared equals c squared."),
    ("Then x^3 and x^10.", "Then x cubed and x to the power of ten."),
    ("Press Ctrl + C.", "Press Ctrl plus C."),
    ("A 3 yrs, 1 yr, 2 mos, 4 wks, 15 mins, 30 secs wait.",
     "A three years, one year, two months, four weeks, fifteen minutes, thirty seconds wait."),
    ("See r/python or u/spez.", "See r slash python or u slash spez."),
    # A slash of a month and a day no fraction has; scores out of a large total; teams.
    ("As of 12/31, fine.", "As of December thirty first, fine."),
    ("Paid by 1/15.", "Paid by January fifteenth."),
    ("Use 3/16 and 1/20 of it.", "Use three sixteenths and one twentieth of it."),
    ("Her SAT was 1520/1600.",
     "Her SAT was one thousand five hundred twenty out of one thousand six hundred."),
    # A spaced dash between dates; a year cut to two digits; a version after "v".
    ("From Jan 1 - Dec 31, 2025.", "From January first to December thirty first, twenty twenty five."),
    ("In the '08 crash and '99.", "In the oh eight crash and ninety nine."),
    ("The '80s and '90s.", "The eighties and nineties."),
    ("Node v20.11.0 or v2.", "Node version twenty point eleven point zero or version two."),
    # Tax sections, a range before a unit per another, phone keys, a slash between words.
    ("A 501(c)(3) under § 170(b).", "A five oh one c three under section one seventy b."),
    ("Sleep 7–9 hrs/night.", "Sleep seven to nine hours per night."),
    ("Take 1-2 tsp/day.", "Take one to two teaspoons per day."),
    ("Press * then #.", "Press star then pound."),
    ("Use # and * as marks.", "Use hash and star as marks."),
    ("Tap * now.", "Tap star now."),
    ("# Title", "# Title"),  # a heading's mark, dropped by upstream: no "hash"
    ("At 72 bpm, 2% p.a.", "At seventy two beats per minute, two percent per year."),
    ("It has 16 cores/32 threads.", "It has sixteen cores slash thirty two threads."),
    # Units of engines, diets, sound and cameras; inch marks; a resolution's frame rate.
    ("It makes 300 hp and 280 lb-ft at 35 psi.",
     "It makes three hundred horsepower and two hundred eighty pound feet at thirty five P S I."),
    ("Eat 50 mcg and 2,000 kcal; 85 dB; 420 ppm; a 48MP camera.",
     "Eat fifty micrograms and two thousand kilocalories; eighty five decibels; four hundred twenty parts"
     " per million; a forty eight megapixel camera."),
    ('A 6.1" display, 65" wide, 10" by 12".',
     "A six point one inch display, sixty five inches wide, ten inches by twelve inches."),
    ('Trim 4", then 2" more; the 27" monitor.',
     "Trim four inches, then two inches more; the twenty seven inch monitor."),
    ('He said "I have 5" and left.', 'He said "I have five" and left.'),
    ("Stream H.264 at 1080p60 or 720p.", "Stream H two sixty four at ten eighty p sixty or seven twenty p."),
    # Hours of a clock run down and are a range; a larger number running down is no range.
    ("Open 8-6, Sat 9-1.", "Open eight to six, Saturday nine to one."),
    ("Part 13-2 is here.", "Part thirteen, two is here."),
    # The edges of a slash's date: a month (12, not 13) and a day (13-31, not 16).
    ("By 12/13, 13/14, 1/31, 1/32 and 1/13.",
     "By December thirteenth, thirteen fourteenths, January thirty first, one thirty second and January"
     " thirteenth."),
    ("Use 1/16 and 3/1 of it.", "Use one sixteenth and three over one of it."),
    ("In '09 and '10.", "In oh nine and ten."),
    ("It was a 105-98 win.", "It was a one hundred five to ninety eight win."),
    ('"Hi" he said; 6" long; trim 1", done.', '"Hi" he said; six inches long; trim one inch, done.'),
    ("A fee of 2% p.a. applies, or 3% p.a.",
     "A fee of two percent per year applies, or three percent per year."),
    ("Add 2 ½ and ¾ of it.", "Add two and a half and three quarters of it."),
    ("Budget ~$2.5k–$3k a month, or $1M-$2M.",
     "Budget about two point five thousand dollars to three thousand dollars a month, or one million"
     " dollars to two million dollars."),
    # "to" kept between an hour and a clock time; a range stays one before a far "="; votes.
    ("Open noon–2pm and 12–1:30pm.", "Open noon to two p m and twelve to one thirty p m."),
    ("Aged 18–65 (n = 1,024).", "Aged eighteen to sixty five (n equals one thousand twenty four)."),
    ("So 12 - 3 - 4 = 5.", "So twelve minus three minus four equals five."),
    ("The vote was 52–48.", "The vote was fifty two to forty eight."),
    # A lone foot mark; the minus sign of maths between letters.
    ("The door is 7' tall, 1' deep.", "The door is seven feet tall, one foot deep."),
    ("So a − b and −b.", "So a minus b and minus b."),
    # A dotted "Sat" or "Sun" before a date is the day; "per lb"; mpg.
    ("On Sat., Nov. 9 and Sun. Dec. 1.", "On Saturday, November ninth and Sunday December first."),
    ("Use 2 tbsp per lb, $3 per oz, 32 mpg.",
     "Use two tablespoons per pound, three dollars per ounce, thirty two miles per gallon."),
    # A weekday before a slashed date; a code after "ID".
    ("Arrives Thu. 12/12 or Fri 3/7.", "Arrives Thursday, December twelfth or Friday, March seventh."),
    ("The box (ID: 7X9-42B) came.", "The box (ID seven X nine forty two B) came."),
    ("From $500k–$1.2M.", "From five hundred thousand dollars to one point two million dollars."),
    ("Rated 4.8★ by 1.2k, 1★ by few.",
     "Rated four point eight stars by one point two thousand, one star by few."),
    ("Visit 742 Evergreen Terrace today.", "Visit seven forty two Evergreen Terrace today."),
    ("We walked 1 1/2 then 2 3/5.", "We walked one and a half then two and three fifths."),
    ("Add 1/2 oz and 1 1/2 tsp and 3/4 hr.",
     "Add half an ounce and one and a half teaspoons and three quarters of an hour."),
    ("Score 0/5 and 5/0.", "Score zero out of five and five divided by zero."),
    ("A 5/128 drill bit.", "A five one hundred twenty eighths drill bit."),
    ("After 9/11 it changed.", "After nine eleven it changed."),
    ("The 49ers beat the Chiefs 31-20.", "The forty niners beat the Chiefs thirty one to twenty."),
    ("Open 7 days/wk, 365 days/yr.", "Open seven days per week, three hundred sixty five days per year."),
    # Comparisons before a number or a variable: "is" after a variable, not after a word.
    ("If p < 0.05 or x>=3, was < 5 ms; Is y < 2?",
     "If p is less than zero point zero five or x is at least three, was less than five milliseconds;"
     " Is y less than two?"),
    ("Ages > 65 and ≥ 90% of us; I <3 NY; pip>=23.",
     "Ages more than sixty five and at least ninety percent of us; I love NY; pip at least twenty three."),
    ("Bold <b>x</b> and a -> b.", "Bold <b>x</b> and a to b."),
    # Determiners take no "the"; a number sign before a year-like number.
    ("Our Q3 and their 4 July; in Q3; fixed bug #1234.",
     "Our third quarter and their fourth of July; in the third quarter; fixed bug number one thousand"
     " two hundred thirty four."),
    # Units with a dot mid-sentence, rupees, sides with their units.
    ("Expect 1-2 in. of rain; 3 Tbsp. oil; it is 6 in.",
     "Expect one to two inches of rain; three tablespoons oil; it is six inches."),
    ("Rs. 1,499 or Rs 250; the Rs were.", "one thousand four hundred ninety nine rupees or two hundred fifty"
     " rupees; the Rs were."),
    ("It is 12 ft × 14 ft, 2 m x 50 cm, 10 cm x 20 cm x 5 cm.",
     "It is twelve by fourteen feet, two meters by fifty centimeters, ten by twenty by five centimeters."),
    # A size after an article is singular, a count after "every" is not.
    ("a 2 TB SSD, the 10 km race, ate the 200 g in, every 5 min.",
     "a two terabyte SSD, the ten kilometer race, ate the two hundred grams in, every five minutes."),
    # A race time; "30s" as seconds unless a decade or an age.
    ("Ran it in 22:41; left at 22:41; wait 30s; in their 30s; the mid-80s.",
     "Ran it in twenty two minutes, forty one seconds; left at ten forty one p m; wait thirty seconds;"
     " in their thirties; the mid eighties."),
    ("On Mon, 3/4 or Friday 5/9; eat 1/2.", "On Monday, March fourth or Friday, May ninth; eat one half."),
    ("It passed 218-214 in a 6-3 ruling; pages 864-2.",
     "It passed two hundred eighteen to two hundred fourteen in a six to three ruling; pages eight hundred"
     " sixty four, two."),
    ("The apt. faces the dept. store, incl. tax. The name is apt.",
     "The apartment faces the department store, including tax. The name is apt."),
    ("The RTX 4090, ISO 9001, RTX 4000 and 1500 W.",
     "The RTX forty ninety, ISO ninety oh one, RTX four thousand and one thousand five hundred watts."),
    # Formulas are no "to"; an address at a sentence's end.
    ("The H2O, B2B and O2O; my IP is 192.168.1.254.",
     "The H two O, B to B and O to O; my IP is one nine two dot one six eight dot one dot two five four."),
    ("Roe v. Wade, c. 1200 BCE, ca. 1850, plan c. 5.",
     "Roe versus Wade, circa twelve hundred B C E, circa eighteen fifty, plan c. five."),
    ("It fell in Nov. and rose since Sept., the Nov. report.",
     "It fell in November and rose since September, the Nov. report."),
    ("Up 25 bps, 1 bp, 60 fps, 11 reb, 9 ast; 5.25%-5.50%.",
     "Up twenty five basis points, one basis point, sixty frames per second, eleven rebounds, nine"
     " assists; five point two five to five point five zero percent."),
    ("A cap of $3T, a $20 T-shirt, a $5 bill, an $80 fee, a $8 fee, a $5.99 fee.",
     "A cap of three trillion dollars, a twenty dollar T shirt, a five dollar bill, an eighty dollar fee,"
     " an eight dollar fee, a five dollars and ninety nine cents fee."),
    ("Simmer 1–1½ hours with ½–¾ cup.",
     "Simmer one to one and a half hours with one half to three quarters of a cup."),
    ("It is GMT+1, UTC+05:30, UTC−5; press Ctrl+Alt+Del or Alt+F4.",
     "It is GMT plus one, UTC plus five thirty, UTC minus five; press Ctrl plus Alt plus Del or Alt plus F"
     " four."),
    ("Code 0x80070005, mask 0xFF, a 4x6 print, open M–F 9–5.",
     "Code hex eight zero zero seven zero zero zero five, mask hex F F, a four by six print, open Monday"
     " to Friday nine to five."),
    ("Under § 1983 and §§ 1001-1003.", "Under section nineteen eighty three and sections one thousand one to"
     " one thousand three."),
    ("Glucose 5.6 mmol/L, 1 mmol/L, 2 g/L.",
     "Glucose five point six millimoles per liter, one millimole per liter, two grams per liter."),
    ("LDL 130 mg/dL, 2 GiB, 1,000 IU.",
     "LDL one hundred thirty milligrams per deciliter, two gibibytes, one thousand international units."),
    # Money: a sign or scale with the code after it; cents beyond two places; "A"/"a" before a vowel.
    ("A $8 fee and a $11 fee.", "An eight dollar fee and an eleven dollar fee."),
    ("It is -5 EUR, +5 EUR, 5 million USD, 1 EUR, -€5.",
     "It is minus five euros, plus five euros, five million dollars, one euro, minus five euros."),
    ("It is $30.500, $4.000, $1.05, $1.250, $2.125, $0.01, $.50, $1.5 million.",
     "It is thirty dollars and fifty cents, four dollars, one dollar and five cents, one dollar and twenty"
     " five cents, two point one two five dollars, one cent, fifty cents, one point five million dollars."),
    # A fraction before an inch mark is a size: before its noun "inch", else "of an inch";
    # not inside a quotation.
    ('Use a 1/4" bit, 3/8" bolts, a 1 1/2" pipe; it is 3/4" thick; cut 1/2".',
     "Use a quarter inch bit, three eighths inch bolts, a one and a half inch pipe; it is three quarters"
     " of an inch thick; cut half an inch."),
    ('She said "1/4" of them.', 'She said "one quarter" of them.'),
    ('A 1/4" thick board is 1/4" thick, 5/4" wide.',
     "A quarter inch thick board is a quarter of an inch thick, five quarters of an inch wide."),
    # "+" after an amount with thousands separators; a fiscal year's digits.
    ("From 2,300+ reviews in FY2024, FY24 and FY 2024-25.",
     "From two thousand three hundred plus reviews in fiscal year twenty twenty four, fiscal year twenty"
     " four and fiscal year twenty twenty four to twenty five."),
    # A dotted clock before a time of day; "BP" before a pressure; an oven's bare "F".
    ("Not 7.30 tonight but 10.45 this morning; 7.30 kg.",
     "Not seven thirty tonight but ten forty five this morning; seven point three zero kilograms."),
    ("The patient's BP was 120/80; BP: 130/85.",
     "The patient's BP was one hundred twenty over eighty; BP: one hundred thirty over eighty five."),
    ("Bake at 425 F, preheat oven to 180 C; Vitamin 350 F.",
     "Bake at four hundred twenty five degrees Fahrenheit, preheat oven to one hundred eighty degrees"
     " Celsius; Vitamin three hundred fifty F."),
    # "+" before a degree sign or a percent keeps them; a rating after "rated"; a rule's
    # subdivisions (not a function's argument, not a plan: "401(k)").
    ("It hit 40+ °C, 35+ ℃, 90+ ℉, 20+% and 18+; rated 4/5, scored 9/10.",
     "It hit forty plus degrees Celsius, thirty five plus degrees Celsius, ninety plus degrees Fahrenheit,"
     " twenty plus percent and eighteen plus; rated four out of five, scored nine out of ten."),
    ("Under Rule 12(b)(6), 3(a)(ii) and 2(c), a 401(k); f(x) = 2(a)(xx).",
     "Under Rule twelve b six, three a two and two c, a four oh one k; f of x equals two(a)(xx)."),
    # A chain of single digits is said digit by digit; a highway's compass letter; ages.
    ("The 3-2-1 rule, 5-4-3-2-1, 3-5 days; take I-80 W, not 80 W.",
     "The three two one rule, five four three two one, three to five days; take I eighty West, not eighty"
     " watts."),
    ("He is 35 y/o. A 6yo boy, 1 y/o now, 10+ hrs, 5+ yrs.",
     "He is thirty five years old. A six year old boy, one year old now, ten plus hours, five plus years."),
    ("The baby is 1 y/o, the twins 2 y/o.", "The baby is one year old, the twins two years old."),
    # Money before 1971: shillings need pounds before them or pence after them.
    ("It cost £3 4s 6d, then 4s 6d, then £2 10s, then £1 1s 1d.",
     "It cost three pounds, four shillings and six pence, then four shillings and six pence, then two"
     " pounds and ten shillings, then one pound, one shilling and one penny."),
    ("It took 10s; the 1960s; £5 each.", "It took ten seconds; the nineteen sixties; five pounds each."),
    # A spaced "*" and "/" between one-letter operands; a "#" after a word that numbers.
    ("If a * b / c then go.", "If a times b divided by c then go."),
    ("If X * Y = 2, use a * as a wildcard.", "If X times Y equals two, use a star as a wildcard."),
    ("At 1 bpm, 1 fps, +1 bp.", "At one beat per minute, one frame per second, plus one basis point."),
    ("Run A / B tests; use # and * as marks.", "Run A slash B tests; use hash and star as marks."),
    ("Order #A1B2C3, issue #42a, tag #tbt.", "Order number A one B two C three, issue number forty two a, tag"
     " hash tbt."),
    ("He scored in 90' and at 45'; the door is 7' tall.",
     "He scored in the ninetieth minute and at the forty fifth minute; the door is seven feet tall."),
    ("HDR10+ and 6E+; $5 per mo. or $50 per yr. now.",
     "HDR ten plus and six E plus; five dollars per month or fifty dollars per year now."),
    ("A 1,800 sq. ft. home, 900 sq.ft. in all.",
     "A one thousand eight hundred square feet home, nine hundred square feet in all."),
    ("The F-150, I-280, F-105, F-100 and I-95.",
     "The F one fifty, I two eighty, F one oh five, F one hundred and I ninety five."),
    ("Text STOP to 12345 after WWII and WWI.",
     "Text STOP to one two three four five after World War Two and World War One."),
    # Rates over time, how often, references, dashes that would glue words.
    ("Up 3.1% y/y, 0.2% m/m; y/q; 10k req/s, 50 tok/s, 3 it/s, 5 cc/h.",
     "Up three point one percent year over year, zero point two percent month over month; y slash q;"
     " ten thousand requests per second, fifty tokens per second, three iterations per second, five cc"
     " per hour."),
    ("Take 1 pill 2x daily, 3x a day, 1x weekly; 2x faster.",
     "Take one pill twice daily, three times a day, once weekly; two times faster."),
    ("Prop. 47, Art. 5 and para. 3; I love art. 5 stars.",
     "Proposition forty seven, Article five and paragraph three; I love art. five stars."),
    ("Americans—roughly 1 in 8—live here.", "Americans, roughly one in eight, live here."),
    ("Btw, IDK if it works, TBH; brb, thx, tmrw, bday.",
     "By the way, I don't know if it works, to be honest; be right back, thanks, tomorrow, birthday."),
    # A capital chat word keeps its capital after a sentence's end; one in capitals only at the start.
    ("Due 9/30. Thx! Good, BTW it works.", "Due September thirtieth. Thanks! Good, by the way it works."),
    # Chat with digits in its words; "u" and "ur" beside a verb or before a word.
    ("ok c u l8r, gr8 job; see u b4 2day ends; we need 3 ppl, ngl.",
     "ok see you later, great job; see you before today ends; we need three people, not gonna lie."),
    ("Can u send it by EOD? u free? is ur phone on? I'm busy rn, pls.",
     "Can you send it by end of day? you free? is your phone on? I am busy right now, please."),
    # A variable or a name stays.
    ("Let u = 5; vector u and v; Ur of the Chaldees; the rn value.",
     "Let u equals five; vector u and v; Ur of the Chaldees; the rn value."),
    ("At 42.36° N, 71.06° W.",
     "At forty two point three six degrees north, seventy one point zero six degrees west."),
    # A fraction hyphened to its word, a unit's dot before a number, model years, airliners.
    ("Cut a 3/8-inch hole with 1 lb. 4 oz. of beef.",
     "Cut a three eighths inch hole with one pound four ounces of beef."),
    ("He drives a 2019 Honda Civic; a 1500 Watt heater.",
     "He drives a twenty nineteen Honda Civic; a one thousand five hundred Watt heater."),
    ("Boeing's 787 Dreamliner, the 737 MAX, 737 apples.",
     "Boeing's seven eighty seven Dreamliner, the seven thirty seven MAX, seven hundred thirty seven"
     " apples."),
    ("It is $999+; pay $5 + tax; 2.5 qts, 8 fl oz, 25 yds; an A- and a B+.",
     "It is nine hundred ninety nine dollars plus; pay five dollars plus tax; two point five quarts, eight"
     " fluid ounces, twenty five yards; an A minus and a B plus."),
    ("So 3! = 6 and 8 fl. oz. of milk; I won 3!", "So three factorial equals six and eight fluid ounces of"
     " milk; I won three!"),
    # Narration: ordinals among words, a dotted month before a year, volumes, named years.
    ("The mid-19th-century reforms; Part A-1-B; dated 14th Feb. 1852; on 5 May.",
     "The mid nineteenth century reforms; Part A one B; dated the fourteenth of February, eighteen fifty"
     " two; on the fifth of May."),
    ("In Vol. III and Ch. XII, 3 mi. to the sea.",
     "In Volume three and Chapter twelve, three miles to the sea."),
    ("The War of 1812 was long; the summer of 1969, a total of 1500 people.",
     "The War of eighteen twelve was long; the summer of nineteen sixty nine, a total of one thousand five"
     " hundred people."),
    ("ISBN 978-0-13-468599-1 or 0-306-40615-X; call 1-800-555-0199.",
     "ISBN nine seven eight, zero, one three, four six eight five nine nine, one or zero, three zero six,"
     " four zero six one five, X; call one, eight zero zero, five five five, zero one nine nine."),
    # A developer's notes: paths, variables, builds, memory and pre-releases.
    ("Edit ~/.bashrc: PATH=$HOME/bin, then /etc/nginx/nginx.conf and C:\\Users\\Sam\\a.txt.",
     "Edit tilde slash dot bashrc: PATH equals dollar HOME slash bin, then slash etc slash nginx slash nginx"
     " dot conf and C colon backslash Users backslash Sam backslash a dot txt."),
    ("It took 2m 34s; a TTL of 3600s; 8/16 cores; on 3/15 we met; the 1990s.",
     "It took two minutes thirty four seconds; a TTL of three thousand six hundred seconds; eight out of"
     " sixteen cores; on March fifteenth we met; the nineteen nineties."),
    ("On 3/4 of them, on 8/16 cores.", "On three quarters of them, on eight out of sixteen cores."),
    ("DDR5-6000, LPDDR5X-8533, an M.2 drive, Node 20.x, 1.0.0-beta.2, 2.1-rc1, 1920 px.",
     "DDR five six thousand, LPDDR five X eight thousand five hundred thirty three, an M dot two drive, Node"
     " twenty dot x, one point zero point zero beta two, two point one R C one, one thousand nine hundred"
     " twenty pixels."),
    ("SKU: 884-221-09, Model no. XR-2000B, valid 12/1–12/31, 1/2–3/4 cup.",
     "SKU: eight eight four, two two one, zero nine, Model number XR two thousand B, valid December first"
     " to December thirty first, half to three quarters of a cup."),
    ('Expect 3"–5" of snow; use a 9x13-inch pan and 2 c. flour.',
     "Expect three to five inches of snow; use a nine by thirteen inch pan and two cups flour."),
    ("A 401k, a 50-50 chance, the 80/20 rule, 2 tix for Sat., pages 50-60.",
     "A four oh one k, a fifty fifty chance, the eighty twenty rule, two tickets for Saturday, pages fifty"
     " to sixty."),
    ("I sat on Sat.", "I sat on Saturday."),
    ("He Sat down by Wed Lake.", "He Sat down by Wed Lake."),
    # Addresses: a query, a fragment, a local port; a sentence's own "?" is none.
    ("See example.com/s?q=tts&p=2 or docs.example.com/a#b-c, localhost:3000 or localhost. Is it example.com?",
     "See example dot com slash s question mark q equals tts ampersand p equals two or docs dot example dot"
     " com slash a hash b dash c, localhost colon three thousand or localhost. Is it example dot com?"),
]


@pytest.mark.parametrize("text,spoken", CASES)
def test_reading(text, spoken):
    assert normalize(text) == spoken
