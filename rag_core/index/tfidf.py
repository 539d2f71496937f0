"""TF-IDF's terms without scikit-learn: a stored vocabulary and idf, and the words of a text.

A search needs three things of a fitted TF-IDF vectorizer: its vocabulary, its idf weights and
the way it cuts a text into terms. :class:`TfidfTerms` holds the first two as stored
(:mod:`rag_core.collections.store.lexical_state`) and does the third exactly as
scikit-learn's ``TfidfVectorizer(stop_words="english", ngram_range=(1, 2))`` does: lower case,
``(?u)\\b\\w\\w+\\b`` tokens, scikit-learn's English stop words dropped, then word 1- and 2-grams
of what is left. Importing scikit-learn (and scipy.stats under it) took 1.5 s of a 1.7 s
``rag-core search`` (issue 21); a test holds the terms and the query vectors equal to
scikit-learn's. ``to_vectorizer()`` builds the scikit-learn object when someone asks for it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from rag_core.settings import TFIDF_MAX_FEATURES, TFIDF_NGRAM_RANGE

if TYPE_CHECKING:
    from collections.abc import Callable

    from sklearn.feature_extraction.text import TfidfVectorizer

__all__ = ["ENGLISH_STOP_WORDS", "TfidfTerms", "analyze", "as_terms"]

# scikit-learn's ENGLISH_STOP_WORDS (sklearn/feature_extraction/_stop_words.py), copied so that a
# query can be cut into terms without importing scikit-learn; tests/index/test_tfidf.py holds
# the two equal.
_STOP_WORDS_TEXT = """
a about above across after afterwards again against all almost alone along already also although
always am among amongst amoungst amount an and another any anyhow anyone anything anyway anywhere
are around as at back be became because become becomes becoming been before beforehand behind being
below beside besides between beyond bill both bottom but by call can cannot cant co con could
couldnt cry de describe detail do done down due during each eg eight either eleven else elsewhere
empty enough etc even ever every everyone everything everywhere except few fifteen fifty fill find
fire first five for former formerly forty found four from front full further get give go had has
hasnt have he hence her here hereafter hereby herein hereupon hers herself him himself his how
however hundred i ie if in inc indeed interest into is it its itself keep last latter latterly least
less ltd made many may me meanwhile might mill mine more moreover most mostly move much must my
myself name namely neither never nevertheless next nine no nobody none noone nor not nothing now
nowhere of off often on once one only onto or other others otherwise our ours ourselves out over own
part per perhaps please put rather re same see seem seemed seeming seems serious several she should
show side since sincere six sixty so some somehow someone something sometime sometimes somewhere
still such system take ten than that the their them themselves then thence there thereafter thereby
therefore therein thereupon these they thick thin third this those though three through throughout
thru thus to together too top toward towards twelve twenty two un under until up upon us very via
was we well were what whatever when whence whenever where whereafter whereas whereby wherein
whereupon wherever whether which while whither who whoever whole whom whose why will with within
without would yet you your yours yourself yourselves
"""
ENGLISH_STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())

_TOKENS = re.compile(r"(?u)\b\w\w+\b").findall
_MIN_N, _MAX_N = TFIDF_NGRAM_RANGE


def analyze(text: str) -> list[str]:
    """The terms of ``text`` as scikit-learn's word analyzer gives them for the contract's
    vectorizer: tokens, then the n-grams of the tokens that are not stop words."""
    words = [w for w in _TOKENS(text.lower()) if w not in ENGLISH_STOP_WORDS]
    terms = list(words) if _MIN_N == 1 else []
    for n in range(max(_MIN_N, 2), min(_MAX_N, len(words)) + 1):
        terms.extend(" ".join(words[i:i + n]) for i in range(len(words) - n + 1))
    return terms


class TfidfTerms:
    """A fitted TF-IDF's vocabulary (term -> column) and idf weights, with the analyzer of the
    contract's vectorizer: what a TF-IDF query vector is made of. It answers the attributes a
    search reads of a ``TfidfVectorizer`` (``vocabulary_``, ``idf_``, ``build_analyzer()``,
    ``stop_words``, ``ngram_range``, ``max_features``)."""

    stop_words = "english"
    ngram_range = tuple(TFIDF_NGRAM_RANGE)
    max_features = TFIDF_MAX_FEATURES

    def __init__(self, vocabulary: dict[str, int], idf: np.ndarray, *,
                 analyzer: Callable[[str], list[str]] | None = None):
        if len(vocabulary) != len(idf):
            raise ValueError(f"TF-IDF vocabulary has {len(vocabulary)} terms but {len(idf)} idf weights")
        self.vocabulary_ = vocabulary
        self.idf_ = np.asarray(idf, dtype=np.float64)
        self._analyzer = analyzer or analyze

    def build_analyzer(self) -> Callable[[str], list[str]]:
        return self._analyzer

    def to_vectorizer(self) -> TfidfVectorizer:
        """The same state as a fitted scikit-learn ``TfidfVectorizer`` (imports scikit-learn)."""
        from sklearn.feature_extraction.text import TfidfVectorizer

        vectorizer = TfidfVectorizer(
            stop_words=self.stop_words, ngram_range=self.ngram_range,
            vocabulary={str(k): int(v) for k, v in self.vocabulary_.items()}, dtype=np.float32,
        )
        vectorizer._validate_vocabulary()
        vectorizer.idf_ = np.asarray(self.idf_, dtype=np.float64)
        return vectorizer


def as_terms(model) -> TfidfTerms:
    """``model`` (a :class:`TfidfTerms` or a fitted ``TfidfVectorizer``) as :class:`TfidfTerms`;
    a vectorizer keeps its own analyzer (an old pickled one may have been made otherwise)."""
    if isinstance(model, TfidfTerms):
        return model
    return TfidfTerms(model.vocabulary_, model.idf_, analyzer=model.build_analyzer())
