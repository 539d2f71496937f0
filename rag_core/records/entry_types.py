"""A record's type as each format names it, from a fixed list: whatever a file or a person gave as
``type`` (BibTeX's ``article``, CSL's ``paper-conference``, Zotero's ``conferencePaper``, RIS's
``CONF``, or anything else) is written as one of BibTeX's entry types or CSL's item types, never raw.
"""

from __future__ import annotations

__all__ = ["BIBTEX_TYPES", "CSL_TYPES", "bibtex_type", "csl_type", "venue_field"]

# BibTeX's standard entry types (btxdoc), the ones every style knows.
BIBTEX_TYPES = ("article", "book", "booklet", "conference", "inbook", "incollection", "inproceedings", "manual",
                "mastersthesis", "misc", "phdthesis", "proceedings", "techreport", "unpublished")
# CSL 1.0.2's item types.
CSL_TYPES = ("article", "article-journal", "article-magazine", "article-newspaper", "bill", "book", "broadcast",
             "chapter", "classic", "collection", "dataset", "document", "entry", "entry-dictionary",
             "entry-encyclopedia", "event", "figure", "graphic", "hearing", "interview", "legal_case",
             "legislation", "manuscript", "map", "motion_picture", "musical_score", "pamphlet", "paper-conference",
             "patent", "performance", "periodical", "personal_communication", "post", "post-weblog", "regulation",
             "report", "review", "review-book", "software", "song", "speech", "standard", "thesis", "treaty",
             "webpage")

# Every name a type goes by (folded: lower case, no "-", "_" or space) -> (BibTeX, CSL).
_TYPES = {
    # BibTeX and BibLaTeX
    "article": ("article", "article-journal"), "book": ("book", "book"), "booklet": ("booklet", "pamphlet"),
    "conference": ("inproceedings", "paper-conference"), "inbook": ("inbook", "chapter"),
    "incollection": ("incollection", "chapter"), "inproceedings": ("inproceedings", "paper-conference"),
    "manual": ("manual", "book"), "mastersthesis": ("mastersthesis", "thesis"), "misc": ("misc", "document"),
    "phdthesis": ("phdthesis", "thesis"), "proceedings": ("proceedings", "book"),
    "techreport": ("techreport", "report"), "unpublished": ("unpublished", "manuscript"),
    "online": ("misc", "webpage"), "electronic": ("misc", "webpage"), "www": ("misc", "webpage"),
    "report": ("techreport", "report"), "thesis": ("phdthesis", "thesis"), "dataset": ("misc", "dataset"),
    "software": ("misc", "software"), "patent": ("misc", "patent"), "collection": ("book", "book"),
    "periodical": ("misc", "periodical"), "preprint": ("misc", "article"),
    # CSL (what is not above already)
    "articlejournal": ("article", "article-journal"), "articlemagazine": ("article", "article-magazine"),
    "articlenewspaper": ("article", "article-newspaper"), "chapter": ("incollection", "chapter"),
    "paperconference": ("inproceedings", "paper-conference"), "manuscript": ("unpublished", "manuscript"),
    "webpage": ("misc", "webpage"), "postweblog": ("misc", "post-weblog"), "pamphlet": ("booklet", "pamphlet"),
    "entryencyclopedia": ("incollection", "entry-encyclopedia"), "entrydictionary": ("incollection",
                                                                                     "entry-dictionary"),
    "speech": ("misc", "speech"), "document": ("misc", "document"),
    # Zotero
    "journalarticle": ("article", "article-journal"), "conferencepaper": ("inproceedings", "paper-conference"),
    "booksection": ("incollection", "chapter"), "magazinearticle": ("article", "article-magazine"),
    "newspaperarticle": ("article", "article-newspaper"), "blogpost": ("misc", "post-weblog"),
    "computerprogram": ("misc", "software"), "encyclopediaarticle": ("incollection", "entry-encyclopedia"),
    "presentation": ("misc", "speech"),
    # RIS
    "jour": ("article", "article-journal"), "ejour": ("article", "article-journal"),
    "conf": ("inproceedings", "paper-conference"), "cpaper": ("inproceedings", "paper-conference"),
    "chap": ("incollection", "chapter"), "thes": ("phdthesis", "thesis"), "rprt": ("techreport", "report"),
    "unpb": ("unpublished", "manuscript"), "elec": ("misc", "webpage"), "gen": ("misc", "document"),
    "data": ("misc", "dataset"), "comp": ("misc", "software"), "mgzn": ("article", "article-magazine"),
    "news": ("article", "article-newspaper"), "pat": ("misc", "patent"), "edbook": ("book", "book"),
}
_DEFAULT = ("article", "article-journal")  # a record without a type: most of what a collection holds
_OTHER = ("misc", "document")  # a type no list knows


def _known(value) -> tuple[str, str]:
    if not value:
        return _DEFAULT
    folded = "".join(c for c in str(value).lower() if c.isalnum())
    return _TYPES.get(folded, _OTHER)


def bibtex_type(value) -> str:
    """One of :data:`BIBTEX_TYPES` for a record's ``type`` (``article`` when it has none, ``misc``
    for one no list knows)."""
    return _known(value)[0]


def csl_type(value) -> str:
    """One of :data:`CSL_TYPES` for a record's ``type``."""
    return _known(value)[1]


# The BibTeX field a venue is written to, by entry type (the reader reads each of them back).
_VENUE_BY_TYPE = {"article": "journal", "inproceedings": "booktitle", "incollection": "booktitle",
                  "inbook": "booktitle", "book": "publisher", "proceedings": "publisher", "manual": "organization",
                  "phdthesis": "school", "mastersthesis": "school", "techreport": "institution"}


def venue_field(entry_type: str) -> str:
    """Where a BibTeX entry of ``entry_type`` (one of :data:`BIBTEX_TYPES`) keeps its venue."""
    return _VENUE_BY_TYPE.get(entry_type, "howpublished")
