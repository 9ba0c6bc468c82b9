"""English readings that depend on the word around a number (realtime/speech/en/context.py):
Roman numerals after names, page and figure references, magnitudes written onto numbers,
durations past any clock hour, paces, international phone numbers. Each reading has its
counterpart that must stay as it is ("Then I went", "Room 4B", "16:9", "6'2\"")."""

from __future__ import annotations

import pytest

from realtime.speech.en.context import roman_value
from realtime.speech.lang import needs_rules
from realtime.speech.normalize import normalize
from realtime.speech.sentences import split_sentences

CASES = [
    # Roman numerals: monarchs and popes take "the" and an ordinal, anything else a cardinal.
    ("Louis XIV died in 1715.", "Louis the fourteenth died in seventeen fifteen."),
    ("Queen Elizabeth II met Pope John Paul II.",
     "Queen Elizabeth the second met Pope John Paul the second."),
    ("Henry VIII had six wives.", "Henry the eighth had six wives."),
    ("Ask Henry V.", "Ask Henry the fifth."),
    ("Elizabeth I of England.", "Elizabeth the first of England."),
    ("It passed to James I, then Charles I.", "It passed to James the first, then Charles the first."),
    ("World War II ended.", "World War two ended."),
    ("Final Fantasy VII and Rocky II.", "Final Fantasy seven and Rocky two."),
    ("Type II diabetes and Stage IV cancer.", "Type two diabetes and Stage four cancer."),
    ("Apollo XI landed.", "Apollo eleven landed."),
    ("Chapter XXXIX ends it.", "Chapter thirty nine ends it."),
    ("Henry VIII's wives.", "Henry the eighth's wives."),
    ("Then I went home and I said no.", "Then I went home and I said no."),
    ("Did John I think so", "Did John I think so"),
    ("The IV drip was fine.", "The IV drip was fine."),
    ("Part V of it.", "Part five of it."),  # "Part" numbers what follows
    ("The DC and CD and MIX.", "The DC and CD and MIX."),
    # References, only before a number.
    ("See p. 5 and pp. 10-12.", "See page five and pages ten to twelve."),
    ("As Fig. 3 shows, Vol. 2, Ch. 4.", "As Figure three shows, Volume two, Chapter four."),
    ("Read § 7 and Eq. 2.", "Read section seven and Equation two."),
    ("Wait 30 sec. 5 more.", "Wait thirty seconds. five more."),
    # Magnitudes written onto a number.
    ("We have 3.4M users and 2.1bn views.",
     "We have three point four million users and two point one billion views."),
    ("It got 10K followers and 500k views.",
     "It got ten thousand followers and five hundred thousand views."),
    ("A 2.5B model, 1.2k stars, 3.5tn debt.",
     "A two point five billion model, one point two thousand stars, three point five trillion debt."),
    ("It has 70B parameters.", "It has seventy billion parameters."),  # things counted after it
    ("A 7B model with 3M users.", "A seven B model with three million users."),
    ("Watch 4K video with 3M masks.", "Watch four K video with three M masks."),
    ("Room 12B at 221B Baker St.", "Room twelve B at two twenty one B Baker Street."),
    ("I ran a 10k run, then the 10k.", "I ran a ten k run, then the ten k."),
    ("Run 5km or 10 km.", "Run five kilometers or ten kilometers."),
    # Durations past the clock's hours; paces.
    ("He ran it in 25:03.", "He ran it in twenty five minutes, three seconds."),
    ("It took 45:30 and 100:00.", "It took forty five minutes, thirty seconds and one hundred minutes."),
    ("It ends at 24:00.", "It ends at midnight."),
    ("The mile in 4:05.", "The mile in four oh five."),
    ("The ratio is 16:9, or 25:1.", "The ratio is sixteen to nine, or twenty five to one."),
    ("He ran 5'01\" per mile.", "He ran five minutes, one second per mile."),
    ("It was 4'30\" a lap.", "It was four minutes, thirty seconds a lap."),
    ("He is 6'2\" and 5'11\".", "He is six foot two and five foot eleven."),
    # International phone numbers.
    ("Call +44 20 7946 0958 now.",
     "Call plus four four, two zero, seven nine four six, zero nine five eight now."),
    ("Or +33 1 23 45 67 89.", "Or plus three three, one, two three, four five, six seven, eight nine."),
    ("Or +86 138-1234-5678.",
     "Or plus eight six, one three eight, one two three four, five six seven eight."),
    ("Call +1 555 123 4567.", "Call plus one, five five five, one two three, four five six seven."),
    ("Add +3 4 5.", "Add plus three four five."),  # too short for a phone number
    # Scientific notation, with the unit after it.
    ("Light goes 3×10^8 m/s.", "Light goes three times ten to the power of eight meters per second."),
    ("About 1.5e6 or 2E-3.",
     "About one point five times ten to the power of six or two times ten to the power of minus three."),
    ("It is 10^8.", "It is ten to the power of eight."),
    # ZIP codes and flight numbers, digit by digit.
    ("Springfield, IL 62704.", "Springfield, Illinois six two seven zero four."),
    ("Send it to NY 10001-1234.", "Send it to NY one zero zero zero one, one two three four."),
    ("We have 62704 fans.", "We have sixty two thousand seven hundred four fans."),
    ("Take flight UA 857 or Flight BA2490.",
     "Take flight UA eight fifty seven or Flight BA twenty four ninety."),
    # A month and day after a word that introduces a date; a fraction otherwise.
    ("Meet me on 3/15.", "Meet me on March fifteenth."),
    ("It is due 12/1, starting 1/5.", "It is due December first, starting January fifth."),
    ("Cut it by 1/3 and eat 3/4 of it.", "Cut it by one third and eat three quarters of it."),
    ("On 13/5 nothing.", "On thirteen fifths nothing."),
    # Fractions of a unit.
    ("Add 1/2 tsp salt and 1 1/2 tbsp oil.", "Add half a teaspoon salt and one and a half tablespoons oil."),
    ("Wait 1/4 hr, add 2/3 oz.", "Wait a quarter of an hour, add two thirds of an ounce."),
    # Blood pressure is "over", only with its unit or after the words.
    ("It was 120/80 mmHg.", "It was one hundred twenty over eighty millimeters of mercury."),
    ("Blood pressure was 140/90.", "Blood pressure was one hundred forty over ninety."),
    ("A 90/60mmHg reading.", "A ninety over sixty millimeters of mercury reading."),
    ("He scored 98/100.", "He scored ninety eight out of one hundred."),
    # Clock ranges, weekdays, "~".
    ("Open 10:00–11:30 AM.", "Open ten o'clock to eleven thirty a m."),
    ("From 9:30-17:00 daily.", "From nine thirty to five p m daily."),
    ("Open Mon–Fri and Sat-Sun.", "Open Monday to Friday and Saturday to Sunday."),
    ("Closed Tue.", "Closed Tuesday."),
    ("Thurs is fine, Fri too.", "Thursday is fine, Friday too."),
    ("We sat on Sun deck, wed in May.", "We sat on Sun deck, wed in May."),
    ("It is ~50% faster and ~$20 cheaper.",
     "It is about fifty percent faster and about twenty dollars cheaper."),
    ("It takes 1~3 days or 2 ~ 4 weeks.", "It takes one to three days or two to four weeks."),
    ("It is 3h20min, or 2h 5m, or 1 hr 1 min.",
     "It is three hours twenty minutes, or two hours five minutes, or one hour one minute."),
    # Resolutions, "90+", extensions, dates after "ends"/"expires".
    ("A 1080p or 720p screen, 2160p at most.",
     "A ten eighty p or seven twenty p screen, twenty one sixty p at most."),
    ("Page 1000p and 1234p stay.", "Page one thousand p and one two three four p stay."),
    ("After 90+ minutes and 18+ only.", "After ninety plus minutes and eighteen plus only."),
    ("Call 555-0199 ext. 123 or Ext 45.",
     "Call five five five, zero one nine nine extension one two three or extension four five."),
    ("Offer ends 11/30 and expires 12/5.", "Offer ends November thirtieth and expires December fifth."),
    # Digits inside addresses are read (upstream drops them); a full stop is no path.
    ("Email john2@example.com today.", "Email john two at example dot com today."),
    ("Visit web3.io/page2 now.", "Visit web three dot io slash page two now."),
    ("Visit https://example.com/docs.", "Visit HTTPS colon slash slash example dot com slash docs."),
    # Code at the end of a sentence.
    ("Run pip install numpy==1.26.4.", "Run pip install numpy equals one point twenty six point four."),
]


@pytest.mark.parametrize("text,spoken", CASES)
def test_reading(text, spoken):
    assert normalize(text) == spoken


@pytest.mark.parametrize("numeral,value", [("I", 1), ("II", 2), ("IV", 4), ("V", 5), ("IX", 9),
                                           ("XIV", 14), ("XIX", 19), ("XXIV", 24), ("XXXIX", 39)])
def test_roman_value(numeral, value):
    assert roman_value(numeral) == value


@pytest.mark.parametrize("sentence", ["Louis XIV died.", "Henry V.", "Elizabeth I of England.",
                                      "Read § 7 now.", "World War II ended."])
def test_precheck_sends_numerals_to_the_rules(sentence):
    assert needs_rules(sentence)


def test_precheck_skips_the_pronoun():
    assert not needs_rules("Then I went home and I said no.")


@pytest.mark.parametrize("text,expected", [
    ("See pp. 10-12. Then go.", ["See pp. 10-12.", "Then go."]),
    ("On p. 5 it says so. Fine.", ["On p. 5 it says so.", "Fine."]),
    ("As in Ch. 4 and Eq. 2 here. Yes.", ["As in Ch. 4 and Eq. 2 here.", "Yes."]),
])
def test_references_do_not_end_sentences(text, expected):
    assert split_sentences(text) == expected
