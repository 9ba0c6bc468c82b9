"""Edges of the readings of things typed rather than said: street
addresses and states, identifiers, web addresses and phone numbers
(realtime/speech/en/address.py, ids.py, web.py).
Written from a mutation run's survivors (docs/testing.md): each case sits on
a boundary one of those rules decides."""

from __future__ import annotations

import pytest

from realtime.speech.normalize import normalize

# A state after a city, a ZIP after a state; the period of "St." that ends a sentence;
# house numbers read in pairs, round ones whole, five digits one by one.
ADDRESSES = [
    ('Go to 012 Elm St.', 'Go to zero one two Elm Street.'),
    ('Sure, OK.', 'Sure, OK.'),
    ('Tulsa, OK 74103.', 'Tulsa, Oklahoma seven four one zero three.'),
    ('Salem, OR, 97301.', 'Salem, Oregon, nine seven three zero one.'),
    ('Austin, TX 78701-1234.', 'Austin, Texas seven eight seven zero one, one two three four.'),
    ('Dallas, TX.', 'Dallas, Texas.'),
    ('(M = 34.2, SD = 8.1).', '(M equals thirty four point two, SD equals eight point one).'),  # no city
    ('St. Louis, MO is big.', 'Saint Louis, Missouri is big.'),
    ('Go to Reno, NV, now.', 'Go to Reno, Nevada, now.'),
    ('He lives at 12 Elm St. It is quiet.', 'He lives at twelve Elm Street. It is quiet.'),
    ('He lives at 12 Elm St. 4 doors down.', 'He lives at twelve Elm Street four doors down.'),
    ('He lives at 12 Elm St. then left.', 'He lives at twelve Elm Street then left.'),
    ('Ship to 12 Elm St.', 'Ship to twelve Elm Street.'),
    ('Go to 100 Oak St.', 'Go to one hundred Oak Street.'),
    ('Go to 99 Oak St.', 'Go to ninety nine Oak Street.'),
    ('Go to 101 Oak St.', 'Go to one zero one Oak Street.'),
    ('Go to 110 Oak St.', 'Go to one ten Oak Street.'),
    ('Go to 2000 Oak St.', 'Go to two thousand Oak Street.'),
    ('Go to 2100 Oak St.', 'Go to twenty one hundred Oak Street.'),
    ('Go to 1001 Oak St.', 'Go to ten zero one Oak Street.'),
    ('Go to 12345 Oak St.', 'Go to one two three four five Oak Street.'),
    ('Go to 3000 Oak St.', 'Go to three thousand Oak Street.'),
    ('He lived at No. 221B Baker Street.', 'He lived at number two twenty one B Baker Street.'),
]
# "No." before a number is "number" (before the address and code rules take it),
# except where the word before makes the number an identifier (its digits).
NUMBER_WORDS = [
    ('Go to No. 12A now.', 'Go to number twelve A now.'),
    ('Nos. 3 and 4 sold.', 'numbers three and four sold.'),
    ('Item no. 4411 is gone.', 'Item number four four one one is gone.'),
    ('Item no. 12 is gone.', 'Item number twelve is gone.'),
    ('Model no. XR-2000B.', 'Model number XR two thousand B.'),
    ('See No.5 here.', 'See number five here.'),
    ('No. I said no.', 'No. I said no.'),
]
# Slashed runs, codes of letters and digits (short or round runs are numbers), plans.
IDENTIFIERS = [
    ('Use 12/34567/89 now.', 'Use twelve, three four five six seven, eighty nine now.'),
    ('Use 05/12/7 now.', 'Use zero five, twelve, seven now.'),
    ('Case 45/120033/2020 closed.',
     'Case forty five, one two zero zero three three, two thousand twenty closed.'),
    ('Use 0/12/7 now.', 'Use zero, twelve, seven now.'),
    ('Code ab1000000 works.', 'Code ab one million works.'),
    ('Code ab10000000 works.', 'Code ab one zero zero zero zero zero zero zero works.'),
    ('Use x100 now.', 'Use x one hundred now.'),
    ('Use x1000 now.', 'Use x one thousand now.'),
    ('Use x1001 now.', 'Use x one zero zero one now.'),
    ('A 10-15-minute walk.', 'A ten to fifteen minute walk.'),
    ('Unit 10-15-MX ready.', 'Unit ten fifteen MX ready.'),
    ('A 401(k) plan.', 'A four oh one k plan.'),
    ('A 403(b) plan.', 'A four oh three b plan.'),
    ('A 410(a) plan.', 'A four ten a plan.'),
]
# Digits in a path (round ones whole), "file:", what makes a host.
ADDRESSES_ONLINE = [
    ('See example.com/1000000 now.', 'See example dot com slash one million now.'),
    ('Open file:///tmp/TAX.', 'Open file colon slash slash slash tmp slash TAX.'),
    ('See x.example.com now.', 'See x dot example dot com now.'),
    ('See ab.CD.xyz now.', 'See ab dot CD dot xyz now.'),
    ('See notes.zz now.', 'See notes dot zz now.'),
    ('See ab.cd now.', 'See ab dot cd now.'),
    ('Visit https://SERVER.LOCAL now.', 'Visit HTTPS colon slash slash SERVER dot LOCAL now.'),
    ('See example.com/BOX now.', 'See example dot com slash BOX now.'),
    ('Drink 5 liters/day.', 'Drink five liters per day.'),
    ('Pick rent/buy.', 'Pick rent slash buy.'),
    ('See example.com/p10 now.', 'See example dot com slash p ten now.'),
    ('See example.com/a100 now.', 'See example dot com slash a one hundred now.'),
    ('See example.com/10000000 now.',
     'See example dot com slash one zero zero zero zero zero zero zero now.'),
    ('See example.com/0 now.', 'See example dot com slash zero now.'),
    ('See example.com/007 now.', 'See example dot com slash zero zero seven now.'),
    ('Open file:///tmp/a.txt', 'Open file colon slash slash slash tmp slash a dot txt'),
    ('Open file:///tmp/a.txt.', 'Open file colon slash slash slash tmp slash a dot txt.'),
    ('See www.example now.', 'See WWW dot example now.'),
    ('See notes.abcdef now.', 'See notes dot abcdef now.'),
    ('See notes.abcdefg now.', 'See notes.abcdefg now.'),
    ('See a.bc now.', 'See a.bc now.'),
    ('See ab.c now.', 'See ab.c now.'),
    ('See ab.Cd now.', 'See ab.Cd now.'),
    ('See EXAMPLE.COM now.', 'See EXAMPLE dot COM now.'),
    ('See example.com:8080 now.', 'See example dot com colon eight zero eight zero now.'),
    # A path of one part after a word; an amount's "/month" and a unit's "/h" are "per".
    ('Type cd /tmp and press enter.', 'Type cd slash tmp and press enter.'),
    ('It costs $20 /month.', 'It costs twenty dollars per month.'),
    ('It is 5 km /h.', 'It is five kilometers per hour.'),
    # Command-line options, letter by letter; a suffix after a hyphen is none.
    ('Run ls -la then cd ~ now.', 'Run ls dash l a then cd tilde now.'),
    ('Use the -v flag.', 'Use the dash v flag.'),
    ('Try --dry-run first.', 'Try dash dash dry dash run first.'),
    ('Use the `--help` flag (or -h).', 'Use the ` dash dash help` flag (or dash h).'),  # in a code span
    ('The -ing form.', 'The -ing form.'),
    # A file name in a code span; a dotfile; the shell's "&&" and "||"; the architecture.
    ('Open `config.yaml` and `main.py`.', 'Open ` config dot yaml` and ` main dot py`.'),
    ('Edit the .env file and .gitignore, not the .envy one.',
     'Edit the dot env file and dot gitignore, not the .envy one.'),
    ('Run `npm run build && npm start || exit`.', 'Run `npm run build and npm start or exit`.'),
    ('Run a&&b and a||b; a || b.', 'Run a and b and a or b; a or b.'),
    # A numbered section's subdivisions after a word that numbers it; a decimal elsewhere.
    ('Under Section 4.2(a)(iii), Schedule 3.1(b), Art. III, Sec. 2, cl. 1; 3.14(x).',
     'Under Section four point two a three, Schedule three point one b, Article three, Section two,'
     ' clause one; three point one four(x).'),
    ('Re: your order #A-10293 (2 items).', 'Re: your order number A, one zero two nine three (two items).'),
    ('Squash to HEAD~3, reset HEAD^ or main~12.', 'Squash to HEAD tilde three, reset HEAD caret or main tilde'
     ' twelve.'),
    ('Builds for x86-64, x86_64 and x86.', 'Builds for x eighty six sixty four, x eighty six sixty four and x'
     ' eighty six.'),
]
# Country codes, SSNs, toll-free words, "(0)" inside a country, an unbroken number.
PHONES = [
    ('Call +1 (555) 123-4567 x.', 'Call plus one, five five five, one two three, four five six seven x.'),
    ('SSN 123-45-6789.', 'SSN one two three, four five, six seven eight nine.'),
    ('Call 1-888-GO-FAST.', 'Call one, eight eight eight, GO FAST.'),
    ('Call 1-800-2-CALL.', 'Call one, eight hundred, two CALL.'),
    ('Call 1-855-ABC.', 'Call one, eight five five, ABC.'),
    ('Call 1-899-ABC.', 'Call one eight hundred ninety nine ABC.'),
    ('Dial +44 (0)20 7946 0958.',
     'Dial plus four four, zero, two zero, seven nine four six, zero nine five eight.'),
    ('Reach +4420794609.', 'Reach plus four four two zero seven nine four six zero nine.'),
    # A leading "1." as the dots between the groups; an extension after the number; a number
    # dialled with a leading zero, group by group (short runs stay numbers).
    ('Call 1.800.555.0199 x12.',
     'Call one, eight zero zero, five five five, zero one nine nine extension one two.'),
    ('Call 555-123-4567 ext. 7.', 'Call five five five, one two three, four five six seven extension seven.'),
    ('Dial 0049 30 1234567 or 07700 900123.', 'Dial zero zero four nine, three zero, one two three four five'
     ' six seven or zero seven seven zero zero, nine zero zero one two three.'),
    ('Pick 007 12 now.', 'Pick zero zero seven twelve now.'),
    ('Dial 0123 45678 now.', 'Dial zero one two three, four five six seven eight now.'),  # nine digits
    ('Pick 0123 4567 now.', 'Pick zero one two three four thousand five hundred sixty seven now.'),  # eight
]


@pytest.mark.parametrize("written,spoken", ADDRESSES + NUMBER_WORDS + IDENTIFIERS + ADDRESSES_ONLINE + PHONES)
def test_reading(written, spoken):
    assert normalize(written, "en") == spoken
