"""English readings on the edges their rules decide (realtime/speech/en_time.py, en_context.py):
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
    ("From 11:00-0:30 pm.", "From eleven o'clock- zero to thirty pm."),
    ("From 9:00-10:30.", "From nine o'clock to ten thirty."),
    ("On 2024-13-45.", "On twenty twenty four to thirteen to forty five."),
    # Dates: two-digit years, day ranges with and without a year.
    ("On 12/25/23.", "On December twenty fifth, twenty three."),
    ("Jan 5-7 only.", "January fifth to seventh only."),
    ("Jan 5-40.", "January fifth minus forty."),
    ("Open Mon–Thurs.", "Open Monday to Thursday."),
]


@pytest.mark.parametrize("text,spoken", CASES)
def test_reading(text, spoken):
    assert normalize(text) == spoken
