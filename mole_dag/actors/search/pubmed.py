"""PubMed through NCBI's E-utilities: esearch (JSON) for PMIDs, then efetch (XML) for titles,
abstracts, dates and ids (DOI, PMCID). The abstract is the source text; an article without one
is fetched from its PubMed page. An article in PubMed Central has an open-access copy: its PDF
(Europe PMC's rendering of the PMC article) is fetched and mined in place of the abstract
(issue 19)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

import lxml.etree

from mole_dag.actors.search.base import Api, Hit, authors_line, clean_doi
from mole_dag.sanitize import one_line

EUTILS = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils"
# Where a PMC article's PDF is rendered, by PMCID.
PMC_PDF = "https://europepmc.org/articles/{pmcid}?pdf=render"
_MONTHS = {
    m: i
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
        start=1,
    )
}


def _text(el: lxml.etree._Element | None) -> str:
    return " ".join("".join(el.itertext()).split()) if el is not None else ""


def _pub_date(article: lxml.etree._Element) -> date | None:
    for path in (".//ArticleDate", ".//PubDate"):
        el = article.find(path)
        if el is None:
            continue
        year = el.findtext("Year") or (el.findtext("MedlineDate") or "")[:4]
        if not (year or "").isdigit():
            continue
        month_raw = (el.findtext("Month") or "1").strip()
        month = int(month_raw) if month_raw.isdigit() else _MONTHS.get(month_raw[:3].lower(), 1)
        day_raw = (el.findtext("Day") or "1").strip()
        try:
            return date(int(year), month, int(day_raw) if day_raw.isdigit() else 1)
        except ValueError:
            continue
    return None


def _abstract(article: lxml.etree._Element) -> str:
    parts = []
    for el in article.iterfind(".//Abstract/AbstractText"):
        body = _text(el)
        if not body:
            continue
        label = el.get("Label")
        parts.append(f"{label.strip().capitalize()}: {body}" if label else body)
    return "\n\n".join(parts)


@dataclass
class PubMed:
    api: Api
    key: str | None = None
    email: str | None = None
    name: str = "pubmed"
    base: str = EUTILS

    def _params(self, **kw: Any) -> dict[str, Any]:
        p: dict[str, Any] = {"db": "pubmed", "tool": "mole-dag", **kw}
        if self.email:
            p["email"] = self.email
        if self.key:
            p["api_key"] = self.key
        return p

    def search(self, query: str, limit: int) -> list[Hit]:
        found = self.api.get_json(
            f"{self.base}/esearch.fcgi",
            params=self._params(
                term=query, retmax=max(1, min(limit, 100)), retmode="json", sort="relevance"
            ),
        )
        result = found.get("esearchresult") if isinstance(found, dict) else None
        ids = [str(i) for i in (result or {}).get("idlist") or [] if str(i).isdigit()][:limit]
        if not ids:
            return []
        root = self.api.get_xml(
            f"{self.base}/efetch.fcgi",
            params=self._params(id=",".join(ids), retmode="xml", rettype="abstract"),
        )
        by_pmid: dict[str, Hit] = {}
        for art in root.iterfind("PubmedArticle"):
            pmid = (art.findtext("MedlineCitation/PMID") or "").strip()
            if not pmid.isdigit():
                continue
            idlist = {
                (e.get("IdType") or "").lower(): (e.text or "").strip()
                for e in art.iterfind("PubmedData/ArticleIdList/ArticleId")
            }
            pmc = idlist.get("pmc") or None
            authors = [
                " ".join(x for x in (a.findtext("ForeName"), a.findtext("LastName")) if x)
                or (a.findtext("CollectiveName") or "")
                for a in art.iterfind(".//AuthorList/Author")
            ]
            abstract = _abstract(art)
            by_pmid[pmid] = Hit(
                url=f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/",
                title=one_line(_text(art.find(".//ArticleTitle"))),
                content=abstract or None,
                published=_pub_date(art),
                author=authors_line(authors),
                publisher_name=one_line(art.findtext(".//Journal/Title") or "") or None,
                doi=clean_doi(idlist.get("doi")),
                pmid=pmid,
                pmcid=pmc.upper() if pmc else None,
                pdf_url=PMC_PDF.format(pmcid=pmc.upper()) if pmc else None,
            )
        # esearch's relevance order, not efetch's
        return [by_pmid[i] for i in ids if i in by_pmid]
