"""Family P: a user's preferences about everyday answers (messages, plans, recipes, trips).

A request reads "<what to do>: <facts>." Facts that a preference decides come as a pair, "A (B)":
"12 km (7.5 miles)". A reply chooses: the reader that keeps a side writes only its half. Every
checker reads only its own signal (units, a date form, a line's opening), so the types of one
reply do not decide each other's checks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .kinds import Preference, exclusive, lines

# a decided fact: a value (a number with its unit, a date, a price) and its other form in brackets
PAIR = re.compile(r"([^\s()]+(?: km| °C)?) \(([^()]+)\)")


@dataclass
class Letter:
    """A reply of family P, as a reader writes it: each known type fills its part."""

    request: str
    greeting: str | None = None  # first line of a message ("Hello,")
    lead: str | None = None  # an opening summary line's prefix ("TL;DR:")
    body: list[str] = field(default_factory=list)
    bullets: bool = False
    closing: str = "Hope this helps."
    signoff: str | None = None  # last line of a message

    @property
    def is_message(self) -> bool:
        return "message to my" in self.request

    def text(self) -> str:
        out = [self.greeting] if self.is_message and self.greeting else []
        if self.lead:
            out.append(f"{self.lead} {self.body[0] if self.body else 'done.'}")
        out += [f"- {b}" for b in self.body] if self.bullets else [" ".join(self.body)] if self.body else []
        out.append(self.closing)
        if self.is_message and self.signoff:
            out.append(self.signoff)
        return "\n".join(out)


def draft(request: str) -> Letter:
    """The neutral reply: the request's facts, with every pair still open."""
    facts = request.split(": ", 1)[1] if ": " in request else request
    sentences = [s.strip() for s in re.split(r"(?<=\.)\s+", facts) if s.strip()]
    letter = Letter(request, body=[s[0].upper() + s[1:] for s in sentences])
    if letter.is_message:
        letter.greeting, letter.signoff = "Hello,", "Best wishes"
    return letter


def choose(pattern: str):
    """render for a pair type: keep the pair's half on `side` (0: before the brackets)."""
    rx = re.compile(pattern)

    def render(side: int, letter: Letter) -> None:
        def pick(m: re.Match) -> str:
            return m.group(1 + side) if rx.search(m.group(0)) else m.group(0)

        letter.body = [PAIR.sub(pick, b) for b in letter.body]

    return render


def setter(attr: str, values: tuple[str, str]):
    def render(side: int, letter: Letter) -> None:
        setattr(letter, attr, values[side])

    return render


def _tone(side: int, letter: Letter) -> None:
    letter.closing = "Hope this helps." if side == 0 else "Hope this helps!"


def _layout(side: int, letter: Letter) -> None:
    letter.bullets = side == 0


def _first_line(values: tuple[str, str]):
    """The reply opens by addressing the reader as the side says ("Dear Dr. Lindqvist," too)."""

    def check(side: int, reply: str) -> bool:
        ls = lines(reply)
        if not ls:
            return False
        opening = re.sub(r"^(dear|hi|hello)\s+", "", ls[0].strip("*_ "), flags=re.IGNORECASE)
        return opening == values[side] + ","

    return check


def _last_line(values: tuple[str, str]):
    def check(side: int, reply: str) -> bool:
        ls = lines(reply)
        return bool(ls) and ls[-1] == values[side]

    return check


def _leading(prefixes: tuple[str, str]):
    def check(side: int, reply: str) -> bool:
        ls = [re.sub(r"^[*_#> ]+|\*\*|__", "", l) for l in lines(reply)]  # **TL;DR:** counts too
        return any(l.startswith(prefixes[side]) for l in ls) and not any(l.startswith(prefixes[1 - side]) for l in ls)

    return check


def _tone_check(side: int, reply: str) -> bool:
    # a reply with no sentence keeps neither tone: "calm" is not the absence of text
    sentence = any(re.search(r"[A-Za-z]{2}", l) and re.search(r"[.!]", l) for l in lines(reply))
    return sentence and (("!" in reply) == (side == 1))


LIST_ITEM = re.compile(r"^([-*•]|\d{1,2}[.)])\s")  # a bullet, or a numbered item


def _layout_check(side: int, reply: str) -> bool:
    ls = lines(reply)
    n = sum(1 for l in ls if LIST_ITEM.match(l))
    return n >= 1 if side == 0 else n == 0 and any(len(l.split()) >= 4 for l in ls)


TRIPS = ("the coastal walk", "the hike to the lake", "the drive to the airport", "the ride to the old mill")
DISTANCES = ("12 km (7.5 miles)", "5 km (3.1 miles)", "42 km (26.1 miles)", "80 km (49.7 miles)")
DATES = ("2026-03-14 (03/14/2026)", "2026-11-02 (11/02/2026)", "2027-01-09 (01/09/2027)", "2026-07-21 (07/21/2026)")
EVENTS = ("the dentist appointment", "my sister's visit", "the car service", "the school concert")
DISHES = ("the lemon cake", "the roast vegetables", "the bread", "the lasagne")
TEMPS = ("180 °C (356 °F)", "200 °C (392 °F)", "220 °C (428 °F)", "160 °C (320 °F)")
TIMES = ("18:30 (6:30 pm)", "07:45 (7:45 am)", "13:15 (1:15 pm)", "21:00 (9:00 pm)")
PRICES = ("€40 ($43)", "€12 ($13)", "€250 ($270)", "€75 ($81)")
ITEMS = ("the train tickets", "the new kettle", "the museum pass", "the concert seats")
TOPICS = ("the parcel arrives on Tuesday", "the meeting moved to the blue room", "the boiler was repaired",
          "the keys are with the neighbour", "the report is ready for review", "the guests arrive after lunch")
OTHERS = ("sister", "neighbour", "plumber", "cousin", "dentist")
GENERIC = ("Remind me of this: {topic}.", "Draft a note for the fridge: {topic}.", "Summarise this for me: {topic}.")

TYPES = (
    Preference(
        "distance", "prefs", ("km", "miles"), ("give distances in km, not miles", "give distances in miles, not km"),
        ("Tell my friend how far {trip} is: it is {d} long.", "Plan {trip} for me: the route is {d}."),
        exclusive(r"\d\s?(km|kilomet(er|re)s?)\b", r"\d\s?(miles?|mi)\b"), choose(r"km \("),
        (("It is 12 km long.", "Route: 5 km.", "- 42 km in total\n- easy"),
         ("It is 7.5 miles long.", "Route: 3.1 miles.", "- 26.1 miles in total\n- easy")),
        ("", "It is 12 km (7.5 miles) long.", "It is a long way."),
        {"trip": TRIPS, "d": DISTANCES}),
    Preference(
        "dates", "prefs", ("iso", "us"), ("write dates as 2026-12-31, not 12/31/2026", "write dates as 12/31/2026, not 2026-12-31"),
        ("Put {event} in my calendar note: it is on {date}.", "Remind me about {event}: it is on {date}."),
        exclusive(r"\b\d{4}-\d{2}-\d{2}\b", r"\b(0?[1-9]|1[0-2])/(0?[1-9]|[12]\d|3[01])/\d{4}\b"), choose(r"\d{4}-\d{2}-\d{2} \("),
        (("It is on 2026-03-14.", "Date: 2027-01-09", "See you 2026-07-21."),
         ("It is on 03/14/2026.", "Date: 01/09/2027", "See you 07/21/2026.")),
        ("", "On 2026-03-14 (03/14/2026).", "Next Tuesday."),
        {"event": EVENTS, "date": DATES}),
    Preference(
        "temperature", "prefs", ("celsius", "fahrenheit"),
        ("give temperatures in °C, not °F", "give temperatures in °F, not °C"),
        ("Write the oven step for {dish}: bake it at {t}.", "Tell me how hot to bake {dish}: use {t}."),
        exclusive(r"°\s?C\b", r"°\s?F\b"), choose(r"°C \("),
        (("Bake at 180 °C.", "Oven: 200 °C", "- 220 °C\n- 30 minutes"),
         ("Bake at 356 °F.", "Oven: 392 °F", "- 428 °F\n- 30 minutes")),
        ("", "Bake at 180 °C (356 °F).", "Bake until golden."),
        {"dish": DISHES, "t": TEMPS}),
    Preference(
        "clock", "prefs", ("24h", "12h"), ("use 24-hour times like 18:30, not 6:30 pm", "use 12-hour times like 6:30 pm, not 18:30"),
        ("Tell me when {event} starts: it starts at {time}.", "Note the time of {event}: {time}."),
        exclusive(r"\b([01]\d|2[0-3]):[0-5]\d\b(?!\s?[ap]\.?m\b)", r"\b\d{1,2}:[0-5]\d\s?[ap]\.?m\b"), choose(r":\d\d \("),
        (("It starts at 18:30.", "Time: 07:45", "At 21:00 sharp."),
         ("It starts at 6:30 pm.", "Time: 7:45 am", "At 9:00 pm sharp.")),
        ("", "At 18:30 (6:30 pm).", "In the evening."),
        {"event": EVENTS, "time": TIMES}),
    Preference(
        "currency", "prefs", ("euro", "dollar"), ("quote prices in euros (€), not dollars", "quote prices in dollars ($), not euros"),
        ("Tell me what {item} cost: they cost {price}.", "Add {item} to the budget: {price}."),
        exclusive(r"€|\bEUR\b|\beuros?\b", r"\$|\bUSD\b|\bdollars?\b"), choose(r"€\d+ \("),
        (("They cost €40.", "Budget: €12", "- €250\n- paid"), ("They cost $43.", "Budget: $13", "- $270\n- paid")),
        ("", "They cost €40 ($43).", "They were cheap."),
        {"item": ITEMS, "price": PRICES}),
    Preference(
        "lead", "prefs", ("tldr", "in_short"),
        ("open every answer with a line that starts 'TL;DR:'", "open every answer with a line that starts 'In short:'"),
        GENERIC, _leading(("TL;DR:", "In short:")), setter("lead", ("TL;DR:", "In short:")),
        (("TL;DR: it is done.", "TL;DR: yes.\nMore below.", "Hello,\nTL;DR: fixed."),
         ("In short: it is done.", "In short: yes.\nMore below.", "Hello,\nIn short: fixed.")),
        ("", "It is done.", "TL;DR: yes.\nIn short: yes."),
        {"topic": TOPICS}),
    Preference(
        "tone", "prefs", ("calm", "upbeat"),
        ("never use exclamation marks", "sound upbeat and end with an exclamation mark"),
        GENERIC, _tone_check, _tone,
        (("It is done.", "Noted. The boiler works.", "Hope this helps."),
         ("It is done!", "Great news! The boiler works.", "Hope this helps!")),
        ("", "   ", "((((("),
        {"topic": TOPICS}),
    Preference(
        "layout", "prefs", ("bullets", "prose"),
        ("answer as a bulleted list", "answer in plain prose without bullets"),
        GENERIC, _layout_check, _layout,
        (("- one\n- two", "Here:\n- the parcel arrives on Tuesday", "* a\n* b\n* c"),
         ("The parcel arrives on Tuesday.", "It is done, and the keys are with the neighbour.",
          "Hello,\nThe report is ready for review.")),
        ("", "ok", "Yes, fine."),
        {"topic": TOPICS}),
    Preference(
        "signoff", "prefs", ("initial", "flat"), ("sign as 'R. Okafor'", "sign as 'Rita, flat 3B'"),
        ("Write a short message to my landlord: {topic}.",),
        _last_line(("R. Okafor", "Rita, flat 3B")), setter("signoff", ("R. Okafor", "Rita, flat 3B")),
        (("Hello,\nIt is fixed.\nR. Okafor", "Hi\nR. Okafor", "Dear Sir,\nThanks.\nR. Okafor\n"),
         ("Hello,\nIt is fixed.\nRita, flat 3B", "Hi\nRita, flat 3B", "Dear Sir,\nThanks.\nRita, flat 3B\n")),
        ("", "Hello,\nBest wishes", "R. Okafor\nRita, flat 3B\nThanks."),
        {"topic": TOPICS}, scope="when you write to my landlord",
        outside=tuple(f"Write a short message to my {o}: {{topic}}." for o in OTHERS)),
    Preference(
        "address", "prefs", ("title", "first_name"),
        ("address her as 'Dr. Lindqvist'", "address her as 'Maria'"),
        ("Write a short message to my boss: {topic}.",),
        _first_line(("Dr. Lindqvist", "Maria")), setter("greeting", ("Dr. Lindqvist,", "Maria,")),
        (("Dr. Lindqvist,\nThe report is ready.", "Dr. Lindqvist,\nDone.", "\nDr. Lindqvist,\nYes."),
         ("Maria,\nThe report is ready.", "Maria,\nDone.", "\nMaria,\nYes.")),
        ("", "Hello,\nDone.", "Dr. Lindqvist and Maria,\nDone."),
        {"topic": TOPICS}, scope="when you write to my boss",
        outside=tuple(f"Write a short message to my {o}: {{topic}}." for o in OTHERS)),
)


def write(request: str, sides: dict[str, int], kinds=TYPES) -> str:
    """The reply a reader writes to `request` keeping `sides` ({type name: side}) of `kinds`; a
    type not named is left neutral (a pair no type chose stays as the request gave it)."""
    letter = draft(request)
    for kind in kinds:
        if kind.name in sides:
            kind.render(sides[kind.name], letter)
    return letter.text()
