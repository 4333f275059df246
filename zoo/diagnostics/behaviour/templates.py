"""The behaviour tests: templates filled from `lexicon`, each stating its expected label(s) and why.

Labels follow SNLI's annotation convention: premise and hypothesis describe the same scene (so "The man
is sleeping." contradicts "The man is not sleeping.", and "Three dogs run." contradicts "Five dogs
run.", as in Breaking NLI's cardinals). Where a label is debatable a template accepts the readings that
are defensible and names the one it rules out (argument swap: neutral or contradiction, never
entailment).

A template's `fill(rng)` returns one generated pair; perturbation tests (typos, irrelevant additions)
also return the clean pair the perturbation starts from, so that the report can say how often the
perturbation alone changed the prediction.
"""

from zoo.diagnostics.behaviour import lexicon as lx

E, N, C = "entailment", "neutral", "contradiction"


def pick(rng, items):
    """One item of a sequence (any items, not only numpy-friendly ones)."""
    return items[int(rng.integers(len(items)))]


def article(word):
    """`"a word"` or `"an word"` by the first letter (the lexicon has no "hour"- or "unit"-like words)."""
    return ("an " if word[0] in "aeiou" else "a ") + word


def cap(text):
    return text[0].upper() + text[1:]


class Template:
    """One way of building a pair.

    Args:
        name: short name, unique in its test.
        expected: the labels a correct model may give (a tuple; usually one).
        reason: why, in one sentence (printed beside failing examples).
        fill: `rng -> (premise, hypothesis)`, or `(premise, hypothesis, clean_premise, clean_hypothesis)`
            in a perturbation test, or `(..., expected, reason)` overriding the template's for that pair.
    """

    def __init__(self, name, expected, reason, fill):
        self.name = name
        self.expected = tuple(expected)
        self.reason = reason
        self.fill = fill


class BehaviourTest:
    """A named capability with its templates.

    Args:
        name: the test's name in reports.
        capability: what it checks, in a few words.
        templates: `Template`s, used in turn.
        perturbation: whether the pairs are perturbed copies of clean pairs (typos, additions).
    """

    def __init__(self, name, capability, templates, perturbation=False):
        self.name = name
        self.capability = capability
        self.templates = tuple(templates)
        self.perturbation = perturbation


# Pieces ------------------------------------------------------------------------------------------------
def person(rng):
    return pick(rng, lx.PEOPLE)[0]


def two_different(rng, items):
    first = int(rng.integers(len(items)))
    second = (first + 1 + int(rng.integers(len(items) - 1))) % len(items)
    return items[first], items[second]


# Negation ------------------------------------------------------------------------------------------------
def _negated_hypothesis(rng):
    who, act, place = person(rng), pick(rng, lx.ACTIVITIES), pick(rng, lx.PLACES)
    return f"The {who} is {act} {place}.", f"The {who} is not {act}."


def _negated_premise(rng):
    who, act, place = person(rng), pick(rng, lx.ACTIVITIES), pick(rng, lx.PLACES)
    return f"The {who} is not {act}.", f"The {who} is {act} {place}."


def _unrelated_negation(rng):
    who, place = person(rng), pick(rng, lx.PLACES)
    act, other = two_different(rng, lx.ACTIVITIES)
    return f"The {who} is {act} {place}.", f"The {who} is not {other}."


NEGATION = BehaviourTest("negation", "negation flips the label only when it denies what the premise says", [
    Template("negated hypothesis", (C,), "the hypothesis denies the activity the premise gives the same person",
             _negated_hypothesis),
    Template("negated premise", (C,), "the premise denies the activity the hypothesis asserts",
             _negated_premise),
    Template("unrelated negation", (N, E), "the hypothesis denies another activity than the premise's: nothing "
             "contradicts (a model reading 'not' as contradiction fails)", _unrelated_negation),
])


# Antonyms -------------------------------------------------------------------------------------------------
def _antonym_object(rng):
    pair, nouns, verb, with_article = pick(rng, lx.ANTONYM_OBJECTS)
    adj, ant = pair if rng.random() < 0.5 else pair[::-1]
    noun, who = pick(rng, nouns), person(rng)
    phrase = (lambda a: article(f"{a} {noun}")) if with_article else (lambda a: f"{a} {noun}")
    return f"The {who} is {verb} {phrase(adj)}.", f"The {who} is {verb} {phrase(ant)}."


def _antonym_state(rng):
    pair = pick(rng, lx.ANTONYM_STATES)
    state, opposite = pair if rng.random() < 0.5 else pair[::-1]
    who = person(rng)
    return f"The {who} is {state}.", f"The {who} is {opposite}."


ANTONYMS = BehaviourTest("antonyms", "an antonym in the hypothesis contradicts the premise", [
    Template("object adjective", (C,), "one object cannot be both the adjective and its antonym", _antonym_object),
    Template("person state", (C,), "one person cannot be in a state and its opposite", _antonym_state),
])


# Hypernyms ------------------------------------------------------------------------------------------------
def _object_frame(rng):
    frame, words, hypernym = pick(rng, lx.HYPERNYM_FRAMES)
    subject = cap(article(person(rng)))
    place = pick(rng, lx.PLACES)
    return frame, article(pick(rng, words)), hypernym, subject, place


def _object_up(rng):
    frame, thing, hypernym, subject, place = _object_frame(rng)
    return (frame.format(subject=subject, thing=thing, place=place),
            frame.format(subject=subject, thing=hypernym, place=place), (E,), f"{thing} is {hypernym}")


def _object_down(rng):
    frame, thing, hypernym, subject, place = _object_frame(rng)
    return (frame.format(subject=subject, thing=hypernym, place=place),
            frame.format(subject=subject, thing=thing, place=place), (N,), f"{hypernym} need not be {thing}")


def _subject(rng):
    if rng.random() < 0.5:
        (hyponym, hypernym), act = pick(rng, lx.PERSON_HYPERNYMS), pick(rng, lx.ACTIVITIES)
    else:
        (hyponym, hypernym), act = pick(rng, lx.ANIMAL_HYPERNYMS), pick(rng, lx.ANIMAL_ACTIVITIES)
    return article(hyponym), article(hypernym), act


def _subject_up(rng):
    hyponym, hypernym, act = _subject(rng)
    return f"{cap(hyponym)} is {act}.", f"{cap(hypernym)} is {act}.", (E,), f"{hyponym} is {hypernym}"


def _subject_down(rng):
    hyponym, hypernym, act = _subject(rng)
    return f"{cap(hypernym)} is {act}.", f"{cap(hyponym)} is {act}.", (N,), f"{hypernym} need not be {hyponym}"


HYPERNYMS = BehaviourTest("hypernyms", "a hypernym follows from its hyponym, not the other way", [
    Template("object to hypernym", (E,), "the hyponym is a kind of the hypernym (a guitar is an instrument)",
             _object_up),
    Template("subject to hypernym", (E,), "a girl is a child and a person, a dog an animal", _subject_up),
    Template("object to hyponym", (N,), "the premise's hypernym does not say which kind: the hyponym is new "
             "information", _object_down),
    Template("subject to hyponym", (N,), "'a person' does not say 'a woman'", _subject_down),
])


# Numbers and counting --------------------------------------------------------------------------------------
def _group(rng):
    singular, plural = pick(rng, lx.PEOPLE)
    return plural, pick(rng, lx.GROUP_ACTIVITIES), pick(rng, lx.PLACES)


def _count(rng):
    return 2 + int(rng.integers(len(lx.NUMBER_WORDS) - 1))  # 2 .. 10


def _other_number(rng):
    plural, act, place = _group(rng)
    n, m = two_different(rng, range(2, len(lx.NUMBER_WORDS) + 1))
    word = lambda k: lx.NUMBER_WORDS[k - 1]  # noqa: E731
    return f"{cap(word(n))} {plural} are {act} {place}.", f"{cap(word(m))} {plural} are {act} {place}."


def _digits(rng):
    plural, act, place = _group(rng)
    n = _count(rng)
    return f"{cap(lx.NUMBER_WORDS[n - 1])} {plural} are {act} {place}.", f"{n} {plural} are {act} {place}."


def number(k):
    """A count as a word (up to ten) or digits."""
    return lx.NUMBER_WORDS[k - 1] if k <= len(lx.NUMBER_WORDS) else str(k)


def _more_than(rng):
    plural, act, place = _group(rng)
    n = 3 + int(rng.integers(len(lx.NUMBER_WORDS) - 2))  # 3 .. 10
    premise = f"{cap(number(n))} {plural} are {act} {place}."
    if rng.random() < 0.5:
        m = 2 + int(rng.integers(n - 2))  # 2 .. n - 1
        return premise, f"More than {number(m)} {plural} are {act} {place}.", (E,), \
            f"{number(n)} is more than {number(m)}"
    m = n + int(rng.integers(3))  # n .. n + 2
    return premise, f"More than {number(m)} {plural} are {act} {place}.", (C,), \
        f"{number(n)} is not more than {number(m)}"


NUMBERS = BehaviourTest("numbers", "numbers must match: another number contradicts", [
    Template("another number", (C,), "the same group cannot have two sizes", _other_number),
    Template("digits", (E,), "a number written as digits is the same number", _digits),
    Template("more than", (E, C), "n is more than m when m < n (each pair states its own label)", _more_than),
])


def _conjoined(rng, k):
    people = list(lx.COUNT_PEOPLE)
    chosen = [people.pop(int(rng.integers(len(people)))) for _ in range(k)]
    names = [article(p) for p in chosen]
    return ", ".join(names[:-1]) + " and " + names[-1]


def _count_two(rng):
    act, place, listed = pick(rng, lx.GROUP_ACTIVITIES), pick(rng, lx.PLACES), _conjoined(rng, 2)
    return (f"{cap(listed)} are {act} {place}.", f"Two people are {act} {place}.", (E,),
            f"{listed} are two people")


def _count_three(rng):
    act, place, listed = pick(rng, lx.GROUP_ACTIVITIES), pick(rng, lx.PLACES), _conjoined(rng, 3)
    return (f"{cap(listed)} are {act} {place}.", f"Three people are {act} {place}.", (E,),
            f"{listed} are three people")


def _count_wrong(rng):
    act, place, listed = pick(rng, lx.GROUP_ACTIVITIES), pick(rng, lx.PLACES), _conjoined(rng, 2)
    return (f"{cap(listed)} are {act} {place}.", f"Only one person is {act} {place}.", (C,),
            f"{listed} are two people, not one")


COUNTING = BehaviourTest("counting", "counting the people a premise lists", [
    Template("two listed", (E,), "a man and a woman are two people", _count_two),
    Template("three listed", (E,), "three people are listed", _count_three),
    Template("only one", (C,), "two people are listed, so not only one", _count_wrong),
])


# Word order -----------------------------------------------------------------------------------------------
def _swap(rng):
    pair = pick(rng, lx.SWAP_NOUNS)
    a, b = pair if rng.random() < 0.5 else pair[::-1]
    verb, place = pick(rng, lx.SWAP_VERBS), pick(rng, lx.PLACES)
    return f"The {a} is {verb} the {b} {place}.", f"The {b} is {verb} the {a} {place}."


ARGUMENT_SWAP = BehaviourTest("argument swap", "who does what to whom: swapped roles do not follow", [
    Template("subject and object swapped", (N, C), "the roles are exchanged: the premise does not say the "
             "object does it to the subject (entailment means the model ignores word order)", _swap),
])


def _passive(rng):
    verb, participle, objects = pick(rng, lx.PASSIVE_VERBS)
    who, thing, place = person(rng), pick(rng, objects), pick(rng, lx.PLACES)
    active = f"{cap(article(who))} is {verb} the {thing} {place}."
    passive = f"The {thing} is being {participle} by {article(who)} {place}."
    return (active, passive) if rng.random() < 0.5 else (passive, active)


def _fronted_place(rng):
    who, act, place = person(rng), pick(rng, lx.ACTIVITIES), pick(rng, lx.PLACES)
    return f"{cap(article(who))} is {act} {place}.", f"{cap(place)}, {article(who)} is {act}."


WORD_ORDER = BehaviourTest("word order", "the same meaning in another word order", [
    Template("active and passive", (E,), "the active and the passive describe one event", _passive),
    Template("fronted place", (E,), "moving the place to the front changes no meaning", _fronted_place),
])


# Perturbations ------------------------------------------------------------------------------------------
def base_pair(rng):
    """A clean pair of one of the three labels: `(premise, hypothesis, label, reason)`."""
    who, act, place = person(rng), pick(rng, lx.ACTIVITIES), pick(rng, lx.PLACES)
    kind = int(rng.integers(3))
    if kind == 0:
        return (f"{cap(article(who))} is {act} {place}.", f"{cap(article(who))} is {act}.", E,
                "the hypothesis drops the place")
    if kind == 1:
        return f"The {who} is {act} {place}.", f"The {who} is not {act}.", C, "the hypothesis denies the activity"
    return (f"{cap(article(who))} is {act}.", f"{cap(article(who))} is {act} {place}.", N,
            "the place is new information")


def typo(sentence, rng):
    """The sentence with two different adjacent letters of one word swapped, never a word's first letter
    nor a negation: `(text, word)`; `(sentence, None)` when no word of 4+ letters qualifies."""
    words = sentence.split(" ")
    options = []
    for i, w in enumerate(words):
        word = w.rstrip(".,")
        if len(word) >= 4 and word.isalpha() and word.lower() not in lx.NEGATIONS:
            options += [(i, j) for j in range(1, len(word) - 1) if word[j] != word[j + 1]]
    if not options:
        return sentence, None
    i, j = pick(rng, options)
    word = words[i].rstrip(".,")
    words[i] = word[:j] + word[j + 1] + word[j] + word[j + 2:] + words[i][len(word):]
    return " ".join(words), word


def _typo(rng):
    premise, hypothesis, label, reason = base_pair(rng)
    if rng.random() < 0.5:
        changed, word = typo(hypothesis, rng)
        return premise, changed, premise, hypothesis, (label,), f"{reason}; a typo in '{word}' changes nothing"
    changed, word = typo(premise, rng)
    return changed, hypothesis, premise, hypothesis, (label,), f"{reason}; a typo in '{word}' changes nothing"


def _addition(rng):
    premise, hypothesis, label, reason = base_pair(rng)
    extra = pick(rng, lx.IRRELEVANT)
    return (f"{premise} {extra}", hypothesis, premise, hypothesis, (label,),
            f"{reason}; '{extra}' is about nothing in the hypothesis")


TYPOS = BehaviourTest("typos", "one swapped pair of letters changes no label", [
    Template("typo", (E, N, C), "the clean pair's label (see the pair)", _typo),
], perturbation=True)

IRRELEVANT_ADDITIONS = BehaviourTest("irrelevant additions", "an unrelated sentence added to the premise "
                                     "changes no label", [
    Template("unrelated sentence", (E, N, C), "the clean pair's label (see the pair)", _addition),
], perturbation=True)

TESTS = (NEGATION, ANTONYMS, HYPERNYMS, NUMBERS, COUNTING, ARGUMENT_SWAP, WORD_ORDER, TYPOS, IRRELEVANT_ADDITIONS)
