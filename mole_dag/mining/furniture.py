"""Page furniture: sentences that cannot be claims.

Extraction keeps more than the article: headings, menus, share bars, captions, cookie notices and,
on papers, the bibliography. Such a "sentence" quoted as a claim is true to the page and says
nothing. `non_claim_reason` names why a sentence is refused, or returns None for one that may be
a claim. Every rule below is a heuristic, and each is a guess, flagged as one: the rules are kept
conservative, because refusing a real answer ("Nadia Mohamed, 27, won with 58% of the vote.")
costs more than letting a heading through (the miner and the relevance grade see it next)."""

from __future__ import annotations

import re

from mole_dag.text import content_terms

CAUSES: tuple[str, ...] = (
    "code",
    "equation",
    "table",
    "markup",
    "boilerplate",
    "caption",
    "navigation",
    "download",
    "reference_entry",
    "question",
    "heading",
    "no_verb",
    # Issue 31: what a paper or a manual prints that is no statement.
    "console",
    "keywords",
    "path",
    "fragment",
    "footnote",
)

_WORD = re.compile(r"[^\W_][\w'’\-.]*", re.UNICODE)
_LIST_MARK = re.compile(r"\A(?:[-*\u2022\u2023\u25aa\u25cf\u2013|>]+\s+|\d{1,3}[.)]\s+)")
_BRACKET_TOKEN = re.compile(r"\[[^\]\n]{0,40}\]")
_TERMINAL = re.compile(r"[.!?\u2026\u3002\uff01\uff1f][\"')\]\u201d\u2019]*\Z")

# Wiki and CMS edit links and bracketed note markers. A guess, flagged as one.
_MARKUP = re.compile(r"\[(?:edit|source|edit source|citation needed|show|hide|top|\d{1,3})\]", re.I)

# Site chrome written as prose: cookie banners, advertising labels, newsletter pitches, legal
# lines, Q&A network headers. Matched anywhere. A guess, flagged as one.
_BOILERPLATE = re.compile(
    r"\b(?:we use cookies|use of cookies|cookie (?:policy|settings|preferences)|accept (?:all )?"
    r"cookies|this (?:site|website) uses|advertisement|sponsored content|paid content|ad choices|"
    r"subscribe to (?:our|the) newsletter|sign up (?:for|to) (?:our|the) (?:newsletter|mailing)|"
    r"newsletter sign[- ]?up|get the latest news|all rights reserved|terms of (?:use|service)|"
    r"privacy policy|stack exchange network|sign up to join this community|anybody can ask a "
    r"question|best answers are voted up|enable javascript|thank you for subscribing|"
    r"your subscription|by clicking|unsubscribe at any time)\b",
    re.I,
)
_COPYRIGHT = re.compile(r"(?:\u00a9|\(c\)|copyright)\s*(?:\d{4}|[A-Z])", re.I)

# Captions and picture credits. A guess, flagged as one.
_CAPTION = re.compile(
    r"\A(?:photo(?:graph)?|image|picture|pic|illustration|credit|photo credit|image credit|"
    r"video|graphic|caption|source)\s*:"
    r"|\((?:getty images|ap photo|reuters|afp|epa|shutterstock|istock|pa)[^)]{0,60}\)"
    r"|\b(?:getty images|shutterstock|istockphoto)\b"
    r"|\A(?:photo|image|picture)s? (?:by|via|courtesy)\b"
    # A paper's figure, table or listing caption (issue 19): "Figure 3: ...", "Table 2. ...".
    r"|\A(?:figure|fig\.|table|listing|algorithm|exhibit)\s*[A-Z]?\d+(?:\.\d+)*\s*[:.](?!\d)",
    re.I,
)

# Navigation: menu labels, "show all", "read more", share bars, breadcrumbs. A guess, flagged as
# one. Strong phrases count anywhere; weak ones only in a short line or at its start.
_NAV_STRONG = re.compile(
    r"\bshow all \d+|\bread more\b\s*(?:[\u00bb\u203a>\u2026.]|\Z)|\bskip to (?:main )?content\b|"
    r"\bback to top\b|\b(?:next|previous) (?:article|post|page|story)\b|\byou may also like\b|"
    r"\brelated (?:articles|posts|stories)\b|\bfollow us on\b|\bclick here\b|\bpage \d+ of \d+\b|"
    r"\bjump to (?:navigation|search)\b|\bmain menu\b|\bshare (?:this|on|via)\b",
    re.I,
)
_NAV_WEAK = re.compile(
    r"\A(?:home|menu|search|sign (?:up|in)|log ?(?:in|out)|register|subscribe|share|tweet|print|"
    r"email|comments?|reply|more|next|previous|back|contact(?: us)?|about(?: us)?|"
    r"see (?:also|more)|view (?:all|more)|load more|top stories|latest|trending)\b",
    re.I,
)
_SOCIAL = re.compile(
    r"\b(?:facebook|twitter|whatsapp|linkedin|pinterest|reddit|instagram|"
    r"telegram|xing|e-?mail)\b",
    re.I,
)
_BREADCRUMB = re.compile(r"\s[\u00bb\u203a>/|]\s")
# A table of contents line: a title and a page number joined by a dot leader ("2 Methods . . . .
# . 7", "Methods ........ 7"). Five dots or more, spaced or not: an ellipsis has three, and a
# sequence written "x1, . . . , xn" three as well. A guess, flagged as one.
_LEADER = re.compile(r"(?:\.\s?){5,}")
# A paper's front matter: its keyword and classification lines. A guess, flagged as one.
_FRONT_MATTER = re.compile(
    r"\A(?:key ?words|index terms|jel classification|(?:ams|msc) (?:subject )?classification)"
    r"\s*:",
    re.I,
)
_DOWNLOAD = re.compile(r"\bdownloads?\b", re.I)

# Bibliography entries. Strong signals suffice alone; weak ones must come in pairs. A guess,
# flagged as one.
_REF_STRONG = (
    re.compile(r"\bdoi\s*:|\bdoi\.org/|\barxiv:\s*\d|\bISBN\b|\bPMID:?\s*\d|\bPMC\d{4,}", re.I),
    # volume(issue):pages, volume:pages-pages
    re.compile(r"\b\d{1,4}\s*\(\s*\d{1,4}(?:[-\u2013]\d{1,4})?\s*\)\s*:\s*[a-zA-Z]?\d+"),
    re.compile(r"\b\d{1,4}\s*:\s*\d{1,6}\s*[-\u2013]\s*\d{1,6}\b"),
    re.compile(r"\b(?:retrieved|accessed|archived from the original)\b.{0,40}\d{4}", re.I),
    # A software citation: "R package version 1.3-17", "URL http://..." (issue 31). Prose
    # names a link without the word URL before it, and a version without "package version".
    re.compile(r"\bURL:?\s*<?https?://|\bpackage version\s+\d", re.I),
    # a wiki back-link caret, "Surname, Given;" author lists, a full date in brackets
    re.compile(r"\A\^\s"),
    re.compile(r"\b[A-Z][a-z'\u2019-]+, [A-Z][a-z]+(?: [A-Z]\.)*;"),
    re.compile(r"\((?:19|20)\d{2}-\d{2}-\d{2}\)"),
    # two author-with-initials entries in a row: "Smith J, Doe AB," / "Smith, J., Doe, A."
    re.compile(
        r"\b[A-Z][a-z'\u2019-]+,?\s+(?:[A-Z]\.?\s?){1,3}[,;.]\s*(?:and\s+|&\s*)?"
        r"[A-Z][a-z'\u2019-]+,?\s+(?:[A-Z]\.?\s?){1,3}[,;.]"
    ),
)
_REF_WEAK = (
    re.compile(r"\bet al\b\.?"),
    re.compile(r"\((?:19|20)\d{2}[a-z]?\)|[.,]\s*(?:19|20)\d{2}[a-z]?\s*[.;]"),
    re.compile(r"\bpp?\.\s*\d"),
    re.compile(r"\b(?:vol|no|ed|eds)\.\s", re.I),
    re.compile(r"\bIn:\s|\(eds?\.\)|\bpress\b|\bjournal of\b|\bproceedings of\b", re.I),
    # journal abbreviations: "J Clin Invest", "Proc. Natl. Acad. Sci.", "N Engl J Med"
    re.compile(
        r"\b(?:J|Proc|Natl|Acad|Sci|Med|Rev|Lett|Phys|Chem|Biol|Engl|Res|Clin|Ann|Trans|"
        r"Soc|Assoc|Dermatol|Immunol|Pharmacol|Epidemiol|Nutr|Psychol|Neurol|Int)\.?\s+"
        r"(?:J|Proc|Natl|Acad|Sci|Med|Rev|Lett|Phys|Chem|Biol|Engl|Res|Clin|Ann|Trans|"
        r"Soc|Assoc|Dermatol|Immunol|Pharmacol|Epidemiol|Nutr|Psychol|Neurol|Int)\b"
    ),
)

# Finite-verb evidence. A light check, a guess flagged as one: auxiliaries, copulas and modals,
# common irregular verbs, -ed forms past the first word, and -s forms that follow a subject.
_AUX = frozenset(
    (
        "is are was were be been being am has have had do does did will would can could shall "
        "should may might must isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't "
        "didn't won't wouldn't can't cannot couldn't shouldn't it's that's there's he's she's "
        "what's who's they're we're you're i'm they've we've i've let's"
    ).split()
)
# Past forms that are verbs wherever they stand.
_PAST = frozenset(
    (
        "said found made took taken gave given went gone got gotten led ran became began begun "
        "rose risen fell fallen grew grown held kept left met paid saw seen sold told thought "
        "brought bought built came drew drawn drove felt fought flew knew known lost meant sent "
        "sat spoke spent stood struck taught won wrote written bore slept wore"
    ).split()
)
# Present forms, many of them nouns too ("falls", "costs", "works"): verbs only after a subject.
_PRESENT = frozenset(
    (
        "say says find finds show shows make makes take takes give gives go goes get gets lead "
        "leads run runs become becomes begin begins rise rises fall falls grow grows hold holds "
        "keep keeps leave leaves meet meets pay pays put puts read reads see sees sell sells tell "
        "tells think thinks bring brings buy buys build builds come comes cost costs cut cuts "
        "draw draws drive drives feel feels fly flies know knows lose loses mean means send sends "
        "set sets sit sits speak speaks spend spends stand stands teach teaches win wins write "
        "writes contain contains include includes remain remains seem seems need needs want wants "
        "use uses help helps live lives work works lie lies hit hits beat beats sleep sleeps "
        "wear wears suggest suggests report reports reduce reduces increase increases cause "
        "causes affect affects"
    ).split()
)
# Words before a plural noun, never before a verb: "the patients", "38 patients", "of effects".
_NOT_SUBJECT = frozenset(
    (
        "the a an of in for with and or on to by from at these those many several some all "
        "few most two three four five six seven eight nine ten new old other such more its "
        "their his her our your my no"
    ).split()
)
# Words after a plural noun, rarely after a verb: "features of", "factors for".
_NOUN_FOLLOWERS = frozenset("of and or in for with from as".split())
_NOT_S_VERB = ("ss", "us", "is", "ous", "ics", "sis")

# English function words: the verb and title-case checks run only on English-looking text,
# since other languages capitalise nouns and conjugate verbs these lists do not know.
_ENGLISH = frozenset(
    "the of and to in is was for on with that by as at from it are be this has have were an a "
    "or which not but their its his her they he she we".split()
)
_FOREIGN = frozenset(
    (
        "der die das und ist nicht ein eine einen einem einer eines zu von mit den dem des im "
        "für auf sich als auch es wird werden wurde wurden sind hat habe haben war ich du wir ihr "
        "sie er wie was wer aber oder noch nur dass daß wenn nach bei aus um kann können muss "
        "sollte diese dieser dieses man mal jetzt schon sehr immer mehr über gibt zum zur vom "
        "beim kein keine doch dann denn weil ob damit sagt "
        "le la les et est un une du en que qui pour dans sont il elle je nous vous ils elles "
        "avec sur pas ce cette ces mais ou être son sa ses leur aux au ne plus comme très aussi "
        "el los las y con por para se es una del al lo su muy pero como más también está este "
        "esta sus het een niet ik zijn voor maar ook wordt di che della sono gli nel non"
    ).split()
)
# Marks of running prose (pronouns, articles inside the line, commas): a verbless line with
# them is a sentence whose verb the light check does not know, not a title.
_PROSE = frozenset(
    "i we you he she it they this that these those there here my our your his her their its "
    "the a an".split()
)
_SMALL = frozenset("a an the of and or in on at to for with by from vs via as nor but".split())


def _tokens(text: str) -> list[str]:
    return [t.strip(".'’-") for t in _WORD.findall(text)]


def _is_english(tokens: list[str]) -> bool:
    low = [t.lower() for t in tokens]
    if any(t in _FOREIGN for t in low):
        return False
    return all(t.isascii() for t in tokens if t.isalpha())


def has_verb(text: str) -> bool:
    """Whether an English sentence shows a finite verb (a light check, see above)."""
    found = [(m.group(0).strip(".'’-"), text[m.end() : m.end() + 1]) for m in _WORD.finditer(text)]
    found = [(t, after) for t, after in found if t]
    tokens = [t for t, _ in found]
    # A typographic apostrophe reads as the plain one: "That’s" is "that's".
    low = [t.lower().replace("\u2019", "'") for t in tokens]
    for i, w in enumerate(low):
        if w == "may" and tokens[i][0].isupper() and low[i + 1 : i + 2] and low[i + 1].isdigit():
            continue  # the month in a date ("May 2, 2021"), not the modal
        if w in _AUX or w in _PAST:
            return True
        if not w.isalpha():
            continue
        after_subject = (
            0 < i < len(low) - 1
            and tokens[i][0].islower()
            and found[i][1] not in ",;:"
            and low[i - 1] not in _NOT_SUBJECT
            and not low[i - 1].isdigit()
            and low[i + 1] not in _NOUN_FOLLOWERS
        )
        if w in _PRESENT and after_subject:
            return True
        if i > 0 and w.endswith("ed") and len(w) > 4 and tokens[i][0].islower():
            return True
        # "Coffee raises alertness": an -s form between a subject and what follows it, with
        # no comma after it (a list of nouns) and not at the end (a heading's plural noun).
        if after_subject and w.endswith("s") and not w.endswith(_NOT_S_VERB) and len(w) > 3:
            return True
    return False


def _title_case_ratio(tokens: list[str]) -> float:
    content = [t for t in tokens if t[:1].isalpha() and t.lower() not in _SMALL]
    if not content:
        return 0.0
    return sum(1 for t in content if t[0].isupper()) / len(content)


# Papers' furniture (issue 19): code listings, display equations and table rows, which PDF text
# carries inline. Each a guess, flagged as one, kept conservative: a sentence of prose that names
# a function or a symbol or two is not refused.
_CODE_MARK = re.compile(r"<-|->|::|==|!=|&&|\|\||[{};=#$\[\]]")
_PROMPT = re.compile(r"\A(?:R>|>>>|\$ |\+ |#include\b|library\(|import )")
_MATH = re.compile(r"[\u0370-\u03ff\u2190-\u22ff\u00b1\u00d7\u00f7=+<>^|\u2032\u0302-\u0305]")
_NUMBER = re.compile(r"\A[-\u2212+(]?\d[\d.,:%)]*\Z")


def _papers_furniture(s: str, tokens: list[str]) -> str | None:
    n = len(tokens)
    low = [t.lower() for t in tokens]
    prose = sum(1 for t in low if t in _ENGLISH or t in _AUX)
    if _PROMPT.match(s) and prose <= max(1, n // 5):
        return "code"
    marks = len(_CODE_MARK.findall(s))
    if marks >= 3 and marks >= 0.2 * max(n, 1) and prose < 0.15 * max(n, 1):
        return "code"
    visible = [ch for ch in s if not ch.isspace()]
    math = len(_MATH.findall(s))
    singles = sum(1 for t in tokens if len(t) == 1 and t.isalpha())
    if visible and (math >= 3 and math > 0.12 * len(visible)) and prose < 0.2 * max(n, 1):
        return "equation"
    if n >= 4 and singles >= 0.5 * n and prose < 0.15 * n:
        return "equation"
    words = s.split()
    if len(words) >= 4 and sum(1 for w in words if _NUMBER.match(w)) >= 0.6 * len(words):
        return "table"
    return None


_PAREN = re.compile(r"\([^()]*\)")
# Words a sentence must have outside its parentheses for its parenthesised citations, "(Kirkwood
# et al., 2006; Page et al., 2006)", to be read as a paper's prose citing, not as a bibliography
# entry (issue 19). A guess, flagged as one.
_CITING_WORDS = 12


def _reference_entry(s: str) -> bool:
    if any(p.search(s) for p in _REF_STRONG):
        return True
    outside = _PAREN.sub(" ", s)
    if len(outside.split()) >= _CITING_WORDS and has_verb(outside):
        s = outside
    return sum(1 for p in _REF_WEAK if p.search(s)) >= 2


# Issue 31: sentences that are not statements, by the shape of what a paper, a manual or a
# console prints. Each rule is a guess, flagged as one, read on its own shape and not on any
# document's words; kept narrow, since a real statement refused costs more than a fragment kept.
# A console prompt before a command: R's ">" and "+", a shell's "$", Python's ">>>".
_CONSOLE_PROMPT = re.compile(
    r"\A(?:R?>|\+|\$|>>>|In \[\d+\]:)\s*(?:[\w.$:]+\s*(?:\(|<-|=)|#)|\A\$ [a-z][\w.-]*\s"
)
# What programs print: a traceback, an error or warning line, R's note on rows it dropped.
_PROGRAM_OUTPUT = re.compile(
    r"\AFile \"[^\"]*\", line \d+|\ATraceback \(most recent call last\)|"
    r"\A(?:Error|Warning)(?: message)?(?: in [^:]{1,60})?\s*:|\A\w*(?:Error|Exception):\s|"
    r"\A\(\d+ observations? deleted due to \w+\)\Z"
)
# A whole line in parentheses with no end mark: an aside a console or a listing prints.
_PAREN_LINE = re.compile(r"\A\([^()]*\)\Z")
# Code: an assignment opening the line ("fit <- lm(y ~ x)", "x := 1"), or the line is one call.
_ASSIGNMENT = re.compile(r"\A[A-Za-z_.][\w.$@]*(?:\[[^\]]*\])?\s*(?:<<?-|:=|\+=|->)\s*\S")
_ONE_CALL = re.compile(r"\A[A-Za-z_.][\w.:$@]*\(.*\)\s*;?\Z")
# A C-family statement's end, "xx(10);", or a line comment after code: prose has neither.
_CODE_END = re.compile(r"[\w)\]]\s*;\s*(?://|\Z)|(?<![:/])//\s")
# A definition list or a function table row: a name, then its description opening with a
# capital ("ivreg() Linear regression models ...", "call The call that created ...").
_CODE_NAME = re.compile(r"\A[A-Za-z_.][\w.]*(?:::[\w.]+|\(\)|\$\w+|@\w+)+\s+[A-Z]")
_TERM_THEN_ARTICLE = re.compile(r"\A[a-z][\w.]*\s+(?:The|A|An|If|Whether|Logical|Numeric)\s")
# A question without its question mark (an FAQ's entry): a wh-word, an auxiliary and a
# pronoun or determiner ("How do I ...", "Why is there ..."), or an auxiliary and a pronoun.
_WH_QUESTION = re.compile(
    r"\A(?:how|what|why|when|where|which|who)\s+(?:do|does|did|can|could|is|are|was|were|"
    r"should|would|will|must|may)\s+(?:I|we|you|it|there|they|he|she|the|a|an|my|our|this|"
    r"these|one)\b",
    re.I,
)
_AUX_QUESTION = re.compile(
    r"\A(?:can|could|do|does|did|is|are|will|would|may|must)\s+(?:I|we|you|it|there|they)\s",
    re.I,
)
# A table of contents run: two numbered section titles ("3.10 What ... 3.11 Why ...").
_SECTION_NUMBER = re.compile(r"(?:\A|\s)\d+(?:\.\d+)+\s+[A-Z][a-z]")
# A footnote or affiliation marker glued to the first word ("2Note, that ...").
_GLUED_MARKER = re.compile(r"\A\d{1,2}[A-Z][a-z]+\b")
# A continuation: a sentence begun by what joins it to the one before (the text between them
# was a display), or by punctuation.
_CONTINUATION = frozenset(
    "or and but nor which whereas where than that of to for with by as".split()
)
# Short tokens that are words; a line opening on three short tokens that are none of them
# ("1 n Xn i=1 ...") opens inside a formula.
_SHORT_WORDS = frozenset(
    "a i an in on at to of by or is it as be we he if no so do up us my me".split()
)
# A line beginning inside an expression ("1 +x2x3, ...").
_EXPRESSION_START = re.compile(r"\A[-\u2212+(]?\d+(?:\.\d+)?\s*[-+*/^=<>\u2212]")
# A line cut off before a display: it ends on an operator ("... of the form f(x) =").
_ENDS_IN_OPERATOR = re.compile(r"[=+*/^<>\u2212\u2264\u2265(]\s*\Z")
# ... or on an equation's first symbol ("... with st = γ"): the rest is in the display.
_ENDS_IN_EQUATION = re.compile(r"=\s*\S{1,3}\Z")
# A sentence opened by a parenthesis and going on in lower case: its subject was before it.
_HEADLESS = re.compile(r"\A\([^()]*\)\s+[a-z]")
# A path: /a/b or C:\a, or a dotted file name with a directory.
_PATH = re.compile(r"\A(?:~?/|[A-Za-z]:\\|\.\.?/)[^\s]*[/\\][^\s]*\Z")
# Modals and "to" that need a verb's object: a line that ends on "we can use" was cut before
# the listing it introduced.
_MODAL = frozenset("can could may might will would should must to".split())


def _ascending(words: list[str]) -> bool:
    """Whether words mostly run in alphabetical order: a keyword or name list from a manual
    ("case coproc do done elif else ..."), which prose never is over six words."""
    low = [w.lower().lstrip("!-") for w in words]
    if len(low) < 6:
        return False
    ups = sum(1 for a, b in zip(low, low[1:], strict=False) if a <= b)
    return ups >= 0.9 * (len(low) - 1)


def _console(raw: str, s: str) -> bool:
    """A console line or a program's output (issue 31). `raw` keeps a leading mark that `s`
    lost (a console's ">" reads as a quote mark there). Checked before the code and equation
    rules, whose marks a console line carries too."""
    if _CONSOLE_PROMPT.match(raw) or _PROGRAM_OUTPUT.search(s):
        return True
    return bool(_PAREN_LINE.match(s)) and not _TERMINAL.search(s)


def _not_a_statement(s: str, tokens: list[str]) -> str | None:
    """Why a line is no statement by its shape (issue 31), or None."""
    terminal = bool(_TERMINAL.search(s))
    if _ASSIGNMENT.match(s) or (_ONE_CALL.match(s) and not terminal) or _CODE_END.search(s):
        return "code"
    words = s.split()
    paths = sum(1 for w in words if _PATH.match(w.strip(",;:")))
    if paths >= 2 and paths >= 0.5 * len(words):
        return "path"
    if not terminal and _ascending([w for w in words if any(c.isalpha() for c in w)]):
        return "keywords"
    if _CODE_NAME.match(s) or _TERM_THEN_ARTICLE.match(s):
        return "table"
    if _WH_QUESTION.match(s) or _AUX_QUESTION.match(s):
        return "question"
    if len(_SECTION_NUMBER.findall(s)) >= 2:
        return "heading"
    if _GLUED_MARKER.match(s):
        return "footnote"
    if len(tokens) >= 3 and all(len(t) <= 2 and t.lower() not in _SHORT_WORDS for t in tokens[:3]):
        return "equation"
    first = words[0] if words else ""
    if first[:1] in ":;,)]}" or first in _CONTINUATION or _EXPRESSION_START.match(s):
        return "fragment"
    if _ENDS_IN_OPERATOR.search(s) or _HEADLESS.match(s):
        return "fragment"
    if not terminal and _ENDS_IN_EQUATION.search(s):
        return "fragment"
    if not terminal and len(words) >= 2 and words[-1].isalpha() and words[-2].lower() in _MODAL:
        return "fragment"
    return None


def non_claim_reason(sentence: str) -> str | None:
    """Why `sentence` cannot be a claim (one of CAUSES), or None when it may be one."""
    s = " ".join(sentence.split())
    s = _LIST_MARK.sub("", s).strip()
    if not any(ch.isalpha() for ch in s):
        return "markup"
    if _MARKUP.search(s) and len(_tokens(_BRACKET_TOKEN.sub(" ", s))) < 6:
        return "markup"
    bare = _BRACKET_TOKEN.sub(" ", s).strip()
    if not any(ch.isalpha() for ch in bare):
        return "markup"
    tokens = [t for t in _tokens(bare) if t]
    n = len(tokens)
    english = _is_english(tokens)
    verb = has_verb(bare) if english else True
    if _BOILERPLATE.search(s) or _COPYRIGHT.search(s) or _FRONT_MATTER.match(s):
        return "boilerplate"
    if _console(" ".join(sentence.split()), s):
        return "console"
    paper = _papers_furniture(s, tokens)
    if paper:
        return paper
    if _CAPTION.search(s):
        return "caption"
    if _NAV_STRONG.search(s) or _LEADER.search(s):
        return "navigation"
    if n <= 8 and _NAV_WEAK.match(s) and not (verb and _TERMINAL.search(s) and n > 3):
        return "navigation"
    if len(_SOCIAL.findall(s)) >= 2 and n <= 12:
        return "navigation"
    if len(_BREADCRUMB.findall(f" {s} ")) >= 2 and not re.search(r"\d", s):
        return "navigation"
    if _DOWNLOAD.search(s) and (not verb or n <= 4 or re.search(r"\bDOWNLOADS?\b", s)):
        return "download"
    if _reference_entry(s):
        return "reference_entry"
    shape = _not_a_statement(s, tokens)
    if shape:
        return shape
    if s.endswith("?"):
        return "question"
    terminal = bool(_TERMINAL.search(s))
    if " | " in s:
        # A row of three cells or more with no verb (issue 31): a running header or footer
        # ("Authors Title | March 10, 2022 | 5") or a table's row, no statement.
        if s.count(" | ") >= 2 and not has_verb(s):
            return "table"
        # A table row: with a number it is data a miner can use; without, a header row.
        return None if re.search(r"\d", s) else "heading"
    low = [t.lower() for t in tokens]
    # Positive evidence of English, and no sign of running prose, before a missing verb counts.
    title_like = (
        (english and any(t in _ENGLISH for t in low) or n <= 3)
        and "," not in bare
        and not any(t in _PROSE for t in low[1:])
        and low[0] not in _PROSE - {"the", "a", "an"}
    )
    if not terminal:
        letters = [ch for ch in bare if ch.isalpha()]
        if len(letters) > 3 and all(ch.isupper() for ch in letters):
            return "heading"
        if english and n >= 2 and _title_case_ratio(tokens) >= 0.75:
            return "heading"
        if english and not verb and (n <= 4 or (title_like and n <= 14)):
            return "heading"
    if english and not verb and n >= 2 and title_like and n <= 25:
        # A verbless line ending in a full stop: on papers, mostly bibliography titles.
        return "reference_entry" if n >= 5 and s.endswith(".") else "no_verb"
    if english and not verb and n >= 4 and _title_case_ratio(tokens) >= 0.75:
        # A verbless line of capitalised words, full stop or not: a byline, a job title or a
        # caption ("Chief Officer of the Company."), not a statement (issue 31).
        return "heading"
    return None


# Issue 30: a heading or an FAQ's entry that restates the question is the page's furniture for
# that question, not its answer ("2. When I try to specify a log axis to plot.zoo a warning is
# issued." for "Why is a warning issued when I specify a log axis to plot.zoo?"). Read by shape
# and by the question's own words, never by any document's words.
# An enumerator opening the line: "2. ", "3.1 ", "(b) ", "a) ". A bare number is not one ("2
# cups a day ..."): it needs its dot or bracket, or a section number's inner dot.
_ENUMERATOR = re.compile(r"\A\(?(?:\d{1,3}(?:\.\d{1,3})+\.?|\d{1,3}[.)]|[A-Za-z][.)])\s+")
# The asker's own voice: an FAQ's entry is written as its reader would ask ("When I try ...").
_ASKER = re.compile(r"\b(?:I|my|me|I'm|I've)\b")
# A question that asks for something: a wh-word anywhere ("Why is ...", "In the FAQ, what ...").
_ASKS_FOR = re.compile(r"\b(?:what|which|who|whom|whose|when|where|why|how)\b", re.I)
# The share of the question's content terms a restatement holds. A guess, flagged as one: all
# but one of five, so one word said another way does not hide a heading.
RESTATE_COVER = 0.8


def restates_question(sentence: str, question: str) -> bool:
    """Whether `sentence` only restates what `question` asks for: it holds (nearly) all the
    question's content terms and adds nothing, or at most one word when it is shaped like a
    heading or an FAQ's entry (numbered, in the asker's voice, or without an end mark). Only a
    question that asks for something (a wh-word) has a missing piece a restatement lacks: a
    statement restating a yes/no question ("Coffee lowers the risk of death.") is its answer.
    A new number is content, never a restatement ("The default priority is 50.")."""
    if not _ASKS_FOR.search(question):
        return False
    asked = set(content_terms(question))
    if len(asked) < 3:
        return False  # too few words to tell a restatement from an answer
    s = " ".join(sentence.split())
    entry = bool(_ENUMERATOR.match(s))
    body = _ENUMERATOR.sub("", s)
    said = set(content_terms(body))
    if len(said & asked) < RESTATE_COVER * len(asked):
        return False
    new = said - asked
    if not new:
        return True
    shaped = entry or bool(_ASKER.search(body)) or not _TERMINAL.search(body)
    return shaped and len(new) == 1 and not any(ch.isdigit() for t in new for ch in t)
