"""non_claim_reason: page furniture is refused with a cause, real answer sentences pass. Every
example is written for this test (none is taken from a saved page)."""

from __future__ import annotations

import pytest

from mole_dag.mining.furniture import CAUSES, has_verb, non_claim_reason

MAY_BE_CLAIMS = [
    "Nadia Mohamed, 27, won with 58% of the vote.",
    "The resort has 114 rooms.",
    "Laurens van der Maaten and Geoffrey Hinton developed t-SNE.",
    "Coffee raises alertness",
    "The bridge opened on 4 May 1931.",
    "Caffeine blocks adenosine receptors in the brain.",
    "Smith et al. found a 30% lower risk among regular drinkers.",
    "In 2019, 4.2 million people visited the park.",
    "The museum is in St. Louis Park.",
    "Dr. Okafor led the trial, which enrolled 1,200 adults.",
    "Prices rose 3.5 percent in March.",
    "Mount Kenya is 5,199 metres high.",
    "The company employs 40,000 people worldwide.",
    "Heron | 14",
    "You can download the report from the agency's website.",
    "Most subscribers renewed their plans after the price change.",
    "Decaf still contains a few milligrams of caffeine.",
    "The 2018 study (Jones, 2018) included 500 children.",
    "Ada Lovelace wrote the first published algorithm.",
    "Berlin ist die Hauptstadt Deutschlands.",
    "Le musée ouvre à 9 heures.",
    "Python 3.6.0 is now available!",
    "Mercurial dropped support for Python 2.4 and 2.5 in May 2015.",
    "Participants slept 40 minutes less on average.",
    "Share prices fell 12% after the announcement.",
    # verbs the light check does not know: prose marks (commas, pronouns, articles) keep them
    "Tree frogs linger in nearby patches of shade, out of the sun.",
    "That all sounds a little odd today.",
    "We unlock new markets for small farms.",
    "Wer zu spät kommt, zahlt doppelt.",
]


@pytest.mark.parametrize("sentence", MAY_BE_CLAIMS)
def test_real_answer_sentences_pass(sentence: str) -> None:
    assert non_claim_reason(sentence) is None


REFUSED = [
    ("[source]", "markup"),
    ("[edit]", "markup"),
    ("History[edit]", "markup"),
    ("* * *", "markup"),
    (
        "Brown A, Green BC, White D. Coffee and sleep in shift workers. J Sleep Res. 2011;20(3):"
        "412-9.",
        "reference_entry",
    ),
    (
        "Doe, J., Roe, R. (2014). Tea drinking in older adults. Nutrition 30, 11-17.",
        "reference_entry",
    ),
    ("Okafor N, et al. Caffeine metabolism. Proc Natl Acad Sci USA. 2009.", "reference_entry"),
    ("Hypertension in pregnancy. doi:10.1000/xyz123", "reference_entry"),
    ("Retrieved 12 March 2021.", "reference_entry"),
    ("^ Marsh, Ada; Quill, Tom (2016-10-13).", "reference_entry"),
    ('^ "Coffee in the modern kitchen".', "reference_entry"),
    ("Outcomes of late-onset asthma in 42 adults.", "reference_entry"),
    ("Short-term effects", "heading"),
    ("World News In Pictures", "heading"),
    ("FREQUENTLY ASKED QUESTIONS", "heading"),
    ("Species | Pairs", "heading"),
    ("Coffee and the heart", "heading"),
    ("Show all 24 photos of the storm", "navigation"),
    ("Read more »", "navigation"),
    ("Sign up", "navigation"),
    ("Skip to main content", "navigation"),
    ("Share on Facebook Share on Twitter", "navigation"),
    ("Home > News > Health", "navigation"),
    ("Subscribe", "navigation"),
    ("Previous article", "navigation"),
    ("- FREE TOOLKIT DOWNLOAD - Installer Downloads", "download"),
    ("Download the PDF", "download"),
    ("Photo: Jane Roe for the Daily Planet", "caption"),
    ("Crowds gathered outside the station (Getty Images)", "caption"),
    ("Image credit: NASA", "caption"),
    ("We use cookies to improve your experience on our site.", "boilerplate"),
    ("Advertisement", "boilerplate"),
    ("Subscribe to our newsletter for the latest offers.", "boilerplate"),
    ("\u00a9 2021 Daily Planet. All rights reserved.", "boilerplate"),
    ("Is coffee bad for you?", "question"),
    ("Total caffeine per cup by brewing method.", "reference_entry"),
    ("Fresh beans.", "no_verb"),
]


@pytest.mark.parametrize(("sentence", "cause"), REFUSED)
def test_furniture_is_refused_with_its_cause(sentence: str, cause: str | None) -> None:
    assert non_claim_reason(sentence) == cause


def test_short_verbless_fragment_is_no_verb() -> None:
    assert non_claim_reason("Dark roast only.") == "no_verb"


def test_every_returned_cause_is_exported() -> None:
    got = {non_claim_reason(s) for s, _ in REFUSED} - {None}
    assert got <= set(CAUSES)
    assert len(CAUSES) == len(set(CAUSES))


@pytest.mark.parametrize(
    ("sentence", "verb"),
    [
        ("The team counts birds every spring.", True),
        ("Clinical features of drug-induced rashes in 38 patients.", False),
        ("Risk factors for falls in older adults.", False),
        ("She was elected in 2010.", True),
        ("Water boils at 100 degrees.", True),
        ("A history of the bicycle.", False),
    ],
)
def test_light_verb_check(sentence: str, verb: bool) -> None:
    assert has_verb(sentence) is verb
