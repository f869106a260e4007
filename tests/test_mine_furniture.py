"""A model miner's quote found verbatim can still be no claim: a heading, a menu line, a caption.
Seen (issue 10 follow-up): a model mined the page's heading as a claim, while the extractive
miner refuses such lines. The quote check now refuses them for every miner, counted as
`not_a_claim`."""

from __future__ import annotations

from pathlib import Path

from mole_dag.budget import Ledger
from mole_dag.context import Run
from mole_dag.core import ClaimDraft, Unit
from mole_dag.driver import run_session
from mole_dag.mining.extractive import mine_sentences
from mole_dag.mining.mine import quotes_furniture
from mole_dag.session import create_session
from mole_dag.skills.protocol import Metered, MineRequest
from mole_dag.skillsets.extractive import ExtractiveSkills
from mole_dag.store import Store

PAGE = (
    "Health Effects of Coffee\n"
    "Coffee drinkers had a lower risk of stroke in a large cohort study.\n"
    "Share on Facebook | Share on Twitter\n"
    "Figure 2: Cups per day by age group\n"
)


def _at(quote: str) -> bool:
    data = PAGE.encode("utf-8")
    start = data.index(quote.encode("utf-8"))
    return quotes_furniture(data, start, start + len(quote.encode("utf-8")))


def test_headings_menus_and_captions_are_furniture() -> None:
    assert _at("Health Effects of Coffee")
    assert _at("Effects of Coffee")  # part of a heading line is still the heading
    assert _at("Share on Facebook | Share on Twitter")
    assert _at("Figure 2: Cups per day by age group")


def test_sentences_and_parts_of_them_are_not() -> None:
    assert not _at("Coffee drinkers had a lower risk of stroke in a large cohort study.")
    assert not _at("a lower risk of stroke")  # a model may quote a clause


class HeadingQuotingSkills(ExtractiveSkills):
    """The extractive miner's claims plus one that quotes the page's first line, as a model
    did."""

    def mine(self, req: MineRequest, unit: Unit) -> Metered[list[ClaimDraft]]:
        drafts = mine_sentences(req)
        first = req.chunk.strip().splitlines()[0]
        drafts.append(ClaimDraft(text=f"The page says {first}.", quote=first))
        return Metered(drafts, model="heading-quoter")


HEADING = "Coffee Consumption and the Risk of Stroke in Older Adults"  # long enough to check


def test_a_miner_quoting_a_heading_is_discarded_as_not_a_claim(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text(
        "---\ntitle: a\nurl: https://www.alpha-news.com/coffee\npublished: 2021-03-01\n---\n"
        f"{HEADING}\n\nCoffee drinkers had a lower risk of stroke in a large cohort study of "
        "older adults. The study followed forty thousand people for ten years.\n",
        "utf-8",
    )
    store = Store(tmp_path / "s.duckdb")
    sid = create_session(
        store, "Does coffee lower the risk of stroke?", Unit.TOKENS, 100_000, corpus=str(corpus)
    ).session_id
    run_session(Run(store, Ledger(store), HeadingQuotingSkills(), sid, progress=lambda m: None))
    quotes = [
        r["quote"] for r in store.rows("SELECT quote FROM claims WHERE session_id = ?", [sid])
    ]
    assert quotes and HEADING not in quotes
    assert (
        store.scalar(
            "SELECT sum(n) FROM discarded_claims WHERE session_id = ? AND cause = 'not_a_claim'",
            [sid],
        )
        >= 1
    )
