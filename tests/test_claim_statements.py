"""Issue 31, item 1: claims are statements. What a paper, a manual or a console prints that is no
statement (bibliography and software citations, console lines and program output, code, keyword
and path lists, table and definition rows, FAQ questions without their question mark, tables of
contents, glued footnote markers, fragments cut before a display) is refused by its shape, on
the extractive miner's path and on a model's quote alike; statements of the same look pass.
Examples are written for this test, in the shapes the issue reports."""

from __future__ import annotations

import pytest

from mole_dag.mining.extractive import mine_sentences
from mole_dag.mining.furniture import CAUSES, non_claim_reason
from mole_dag.mining.mine import quotes_furniture
from mole_dag.skills.protocol import MineRequest

NOT_STATEMENTS = [
    ("R package version 2.4-1, URL http://CRAN.R-project.org/package=pumpkin.", "reference_entry"),
    ("Version 0.3. URL: https://example.org/widgets/", "reference_entry"),
    ("(21 observations deleted due to missingness)", "console"),
    ('File "<stdin>", line 7, in <module>', "console"),
    ("Traceback (most recent call last):", "console"),
    ("Error in loadNamespace(x) : there is no package called 'pumpkin'", "console"),
    ("ValueError: could not convert string to float: 'abc'", "console"),
    ("> summary(fit, digits = 3)", "console"),
    ("R> plot(density(x), main = 'Kernel estimate')", "console"),
    ("> # convert the series before plotting it", "console"),
    ("$ make install PREFIX=/opt/tools", "console"),
    ("fit <- glm(count ~ dose, family = poisson)", "code"),
    ("IntegerVector counts(12); // all zero at first", "code"),
    ("alpha beta delta gamma kappa lambda sigma theta", "keywords"),
    ("!break case continue default do else for goto if return switch while", "keywords"),
    ("/opt/lib/site/include /usr/share/lib/site/include /home/ana/lib/site-4.1", "path"),
    (
        "glmx::hetglm() Heteroscedastic binary response models fitted by maximum likelihood.",
        "table",
    ),
    ("weights The optional weights used in fitting, one per observation.", "table"),
    ("How do I cite the package in my thesis.", "question"),
    ("Why is there a limit on the number of arguments", "question"),
    ("Can I use the library from Python", "question"),
    ("4 2.3 Where are the examples kept 5 2.4 What does the warning mean", "heading"),
    ("3Note, that the option must be set before loading.", "footnote"),
    ("or the Wald test, which also rejects at the 1% level.", "fragment"),
    (": returns the largest absolute residual of the fitted model.", "fragment"),
    ("In the bivariate case, the statistic takes the form T(x, y) =", "fragment"),
    ("The estimator then replaces (2b) with u = λ", "fragment"),
    ("To fit the model to the grouped data we can use", "fragment"),
    ("(changing the folder name as needed) will create a fresh environment there.", "fragment"),
    ("2 +y1y2, with weakly related regressors.", "fragment"),
    ("1 n Yn j=1 zjz j −→ R (4) for some positive definite matrix R.", "equation"),
    ("Senior Vice President and Head of Research at the Example Foundation.", "heading"),
    ("Ortiz and Lund Pumpkin Vignette | May 2, 2021 | 7 2.4.1.", "table"),
]

STATEMENTS = [
    "The fitted model explains 62% of the variance in weekly sales.",
    "(But this was not the whole story, since the survey missed rural areas).",
    "Effect() is the generic function of the package; plot() draws its result.",
    "x = 3 was the value chosen for every replicate in the second run.",
    "How the estimator behaves in small samples is studied in Section 4.",
    "What is more, the test keeps its size under heteroskedasticity.",
    "That’s where the volunteer training group comes in.",
    "3D printing has cut the cost of prototypes by half.",
    "Utilizing the package, the hypothesis can be passed as a formula to independence_test()",
    "The default is to take from = 0.15 and to = 0.85.",
    "Prices rose 3.5 percent in March, the agency said.",
    "Python 3.6.0 is now available!",
    "The library is installed under /usr/lib by default.",
    "If d + D ≤ 1, these models are fitted with c ≠ 0. Otherwise, we set c = 0.",
    "(19) They were chosen because they are tangential to the boundaries in t = 0.5.",
    "Apples, bananas, cherries, dates, figs and grapes were sold at the market that day.",
    "Heron | 14",
    "Growth | Yield | Both rose by 4 percent in the wet year.",
]


@pytest.mark.parametrize(("sentence", "cause"), NOT_STATEMENTS)
def test_what_is_no_statement_is_refused_by_its_shape(sentence: str, cause: str) -> None:
    assert non_claim_reason(sentence) == cause


@pytest.mark.parametrize("sentence", STATEMENTS)
def test_statements_of_the_same_look_pass(sentence: str) -> None:
    assert non_claim_reason(sentence) is None


def test_the_new_causes_are_exported() -> None:
    for cause in ("console", "keywords", "path", "fragment", "footnote"):
        assert cause in CAUSES


def test_the_extractive_miner_mines_none_of_them() -> None:
    # A manual's page: prose around a console session, a keyword list and a reference list.
    chunk = (
        "The pumpkin package fits growth curves to field counts.\n\n"
        "> summary(fit, digits = 3)\n\n"
        "(21 observations deleted due to missingness)\n\n"
        "alpha beta delta gamma kappa lambda sigma theta\n\n"
        "The growth curves of pumpkin fields flatten after the tenth week.\n\n"
        "R package version 2.4-1, URL http://CRAN.R-project.org/package=pumpkin.\n\n"
        "How do I fit pumpkin growth curves to my field counts.\n"
    )
    req = MineRequest("How do pumpkin growth curves behave?", "", chunk, "pumpkin manual")
    mined = [d.quote for d in mine_sentences(req)]
    assert "The growth curves of pumpkin fields flatten after the tenth week." in mined
    for quote in mined:
        assert non_claim_reason(quote) is None, quote
        assert "package version" not in quote and "deleted" not in quote
        assert not quote.startswith((">", "alpha", "How do I"))


@pytest.mark.parametrize(
    "line",
    [
        "(21 observations deleted due to missingness)",
        "R package version 2.4-1, URL http://CRAN.R-project.org/package=pumpkin.",
        "!break case continue default do else for goto if return switch while",
    ],
)
def test_a_models_quote_of_them_is_refused(line: str) -> None:
    data = f"Some prose before it.\n{line}\nSome prose after it.\n".encode()
    start = data.index(line.encode())
    assert quotes_furniture(data, start, start + len(line.encode()))
