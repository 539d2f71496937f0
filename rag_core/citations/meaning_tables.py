"""The word lists behind the meaning checks of :mod:`rag_core.citations.meaning`.

Words are listed as written; each table is keyed by the Snowball stem of the word's
American spelling (:func:`rag_core.text.words.stem`), so "improves", "improved" and
"improvement" share one entry. Phrases are tuples of such stems. Every list is tested in
``tests/citations/test_meaning.py``; the labelled set (``tests/data/citations_labelled.json``)
measures them together (``docs/citations.md``).
"""

from __future__ import annotations

from rag_core.text.words import american, stem

__all__ = [
    "BAD_NOUNS",
    "CERTAINTY",
    "DEGREE",
    "DIRECTION",
    "DIRECTION_PHRASES",
    "EVIDENCE_LINKS",
    "EVIDENCE_NOUNS",
    "FILLERS",
    "FINDING_LINKS",
    "FINDING_NOUNS",
    "FINDING_PASSIVE",
    "FINDING_VERBS",
    "GOOD_NOUNS",
    "HARMLESS_WORDS",
    "HEDGES",
    "NEGATION_PREFIXES",
    "NEGATORS",
    "NEGATOR_PHRASES",
    "NOT_NEGATIONS",
    "QUANTIFIERS",
    "QUANTIFIER_PHRASES",
    "RELATIONAL",
    "RELATION_ASKED",
    "RELATION_WORDS",
    "SYNONYMS",
    "key",
    "phrase",
]


def key(word: str) -> str:
    """The table key of an open-class word: the stem of its American spelling ("improves",
    "improvement" -> "improv"); an adverb in -ly keeps its ending ("largely" is not "large",
    "likely" is not "like", "hardly" is not "hard")."""
    word = american(word.lower())
    return word if word.endswith("ly") else stem(word)


def phrase(text: str) -> tuple[str, ...]:
    """A phrase of closed-class words, as written (American spelling)."""
    return tuple(american(w) for w in text.split())


def _words(text: str) -> frozenset[str]:
    return frozenset(american(w) for w in text.split())


# --------------------------------------------------------------------------- negation

# Words that turn a statement around; "n't" endings (doesn't, can't) count too.
NEGATORS = _words("not no never neither nor none nothing nobody nowhere without cannot unable lack lacks lacking")
# Phrases that negate what follows ("fails to improve", "no longer holds").
NEGATOR_PHRASES = frozenset({phrase("fail to"), phrase("fails to"), phrase("failed to"), phrase("far from"),
                             phrase("no longer")})
# A negator in these phrases negates nothing: "not only ... but also", "whether or not", "No. 5".
NOT_NEGATIONS = frozenset({phrase("not only"), phrase("not just"), phrase("or not"), phrase("not to mention"),
                           phrase("no doubt"), phrase("nothing but")})
# A negated evidence noun denies the clause it introduces: "no evidence that 5G networks spread
# the virus", "no clear evidence linking ibuprofen to worse outcomes", "no evidence of increased
# risk", "no indication that ...". The words that introduce that clause follow. ("data" and
# "support" are left out: "no data of patients older than 80" denies nothing about them.)
EVIDENCE_NOUNS = _words("evidence proof indication indications sign signs")
EVIDENCE_LINKS = frozenset({phrase("that"), phrase("of"), phrase("for"), phrase("linking"), phrase("suggesting"),
                            phrase("suggesting that"), phrase("showing"), phrase("showing that"),
                            phrase("indicating"), phrase("indicating that"), phrase("supporting"),
                            phrase("to suggest"), phrase("to suggest that"), phrase("to support"),
                            phrase("to show"), phrase("to show that"),
                            phrase("to indicate"), phrase("to indicate that"), phrase("to link"),
                            phrase("to date that"), phrase("so far that")})
# A negated finding noun is a null result about what follows it: "no significant association
# between statin use and dementia", "no effect of aspirin on cancer incidence", "no correlation
# was found between ...". It denies a text that asserts that relation (RELATION_WORDS, or a
# direction word: "statins lower dementia risk", "aspirin reduces incidence").
FINDING_NOUNS = _words("association associations correlation correlations relationship relationships relation "
                       "link effect effects impact influence difference differences change changes benefit "
                       "alteration role associated correlated linked related predictive indicative dependent")
# Verbs of a relation that need no link word: "did not affect mortality", "does not predict".
FINDING_VERBS = _words("affect affects affected alter alters altered change changed influence influences influenced "
                       "predict predicts predicted modify modifies modified impact impacts impacted")
FINDING_LINKS = _words("between on in of with for to upon among")
# Words passed over between the noun and its link: "no correlation was found between".
FINDING_PASSIVE = _words("was were is are been has have be found observed seen detected noted shown "
                         "demonstrated identified evident apparent")
RELATION_WORDS = frozenset(stem(w) for w in _words(
    "associated association correlates correlated correlation linked link related relationship affects affected "
    "influences influenced impacts impacted causes caused predicts predicted prevents prevented protects "
    "protected promotes promoted induces induced inhibits inhibited enhances enhanced suppresses suppressed "
    "differs differed difference changes changed change alters altered modulates modulated regulates regulated "
    "contributes contributed mediates mediated benefits benefited role depends depend dependent indicative "
    "predictive"))
# Words before a relation word that make it a question asked, not a finding: "To determine the
# association between smoking and progression", "we assessed whether ... affects ...".
RELATION_ASKED = _words("determine determined assess assessed investigate investigated examine examined evaluate "
                        "evaluated evaluating explore explored whether test tested compare compared study studied "
                        "measure measured estimate estimated analyse analysed analyze analyzed")
# "unsupervised" against "supervised", "inhomogeneous" against "homogeneous": a negation.
NEGATION_PREFIXES = ("non", "un", "in", "im", "il", "ir", "dis")

# --------------------------------------------------------------------------- direction

# axis -> (words that go up / are better, words that go down / are worse). A word may sit on
# two axes ("exceeds": better and more); a conflict is the same axis, opposite sides.
_AXES = {
    "quality": (
        "better best outperform outperforms outperformed superior surpass surpasses beat beats beaten improve "
        "improves improved improvement improvements enhance enhances enhanced benefit benefits help helps "
        "strengthen succeed succeeds success successful win wins well good stronger strongest exceed exceeds "
        "excel excels advantage advantages gain gains favorable rescue rescues rescued alleviate alleviates "
        "alleviated ameliorate ameliorates ameliorated relieve relieves relieved protect protects protective "
        "beneficial",
        "worse worst underperform underperforms underperformed inferior lag lags lagging trail trails hurt "
        "hurts harm harms degrade degrades degraded degradation worsen worsens deteriorate deteriorates impair "
        "impairs weaken weakens fail fails failure failures lose loses poor poorly bad weaker weakest "
        "disadvantage disadvantages suffer suffers worsened worsening exacerbate exacerbates exacerbated "
        "aggravate aggravates aggravated harmful detrimental",
    ),
    "amount": (
        "more increase increases increased increasing higher high larger large bigger big greater rise rises "
        "grow grows growth raise raises above exceed exceeds maximize maximum longer long boost boosts expand "
        "expands double doubles upper most",
        "less fewer decrease decreases decreased decreasing lower low smaller small reduce reduces reduced "
        "reduction decline declines drop drops fall falls shrink shrinks cut cuts below minimize minimum shorter "
        "short diminish diminishes lessen halve halves least",
    ),
    "speed": ("faster fast quicker quick quickly accelerate accelerates speedup rapid rapidly",
              "slower slow slowly decelerate decelerates slowdown"),
    "cost": ("expensive costly costlier", "cheaper cheap cheapest inexpensive"),
}
_AXIS_PHRASES = {
    "quality": (("lead to gains",), ("fall short", "falls short", "fell short", "lag behind", "lags behind",
                                     "fall well short", "falls well short", "fall far short", "falls far short")),
    "speed": (("speed up", "speeds up"), ("slow down", "slows down")),
}
# Verbs that set one thing against another ("A outperforms B"): their sides can be swapped.
RELATIONAL = frozenset(key(w) for w in _words(
    "outperform outperforms outperformed underperform underperforms underperformed beat beats beaten surpass "
    "surpasses exceed exceeds lag lags trail trails superior inferior"))
# Pairs of opposites that are a change of direction too ("homogeneous" against "heterogeneous").
_OPPOSITES = (
    "homogeneous heterogeneous", "positive negative", "dense sparse", "early late", "earlier later",
    "before after", "first last", "same different", "similar different", "identical different",
    "easy hard", "easy difficult", "easier harder", "simple complex", "simple complicated", "include exclude",
    "robust brittle", "robust fragile", "open closed", "local global", "shallow deep", "narrow broad",
    "narrow wide", "static dynamic", "explicit implicit", "true false", "correct wrong", "support contradict",
    "support refute", "confirm refute", "accept reject", "allow prevent", "enable prevent", "rare common",
    "rare frequent", "old new", "older newer", "internal external", "majority minority", "expand contract",
    "expanding contracting", "agnostic specific", "general specific", "generic specific", "left right",
    "single multiple", "single double", "presence absence", "present absent", "online offline", "hot cold",
    "inner outer", "maximal minimal", "overestimate underestimate", "overfit underfit", "mandatory optional",
    "required optional", "sequential parallel", "serial parallel", "synchronous asynchronous",
    "symmetric asymmetric", "over under", "strength weakness",
)


def _direction_table() -> dict[str, list[tuple[str, int]]]:
    table: dict[str, list[tuple[str, int]]] = {}
    for axis, (up, down) in _AXES.items():
        for words, sign in ((up, 1), (down, -1)):
            for word in words.split():
                senses = table.setdefault(key(word), [])
                if (axis, sign) not in senses:
                    senses.append((axis, sign))
    for pair in _OPPOSITES:
        a, b = pair.split()
        for word, sign in ((a, 1), (b, -1)):
            senses = table.setdefault(key(word), [])
            if (pair, sign) not in senses:
                senses.append((pair, sign))
    return table


DIRECTION = _direction_table()
DIRECTION_PHRASES = {
    tuple(key(w) for w in text.split()): [(axis, sign)]
    for axis, sides in _AXIS_PHRASES.items() for sign, texts in zip((1, -1), sides, strict=True) for text in texts
}

# --------------------------------------------------------------------------- quantifiers

# class -> words. "no"/"none"/"never" are negators, not quantifiers.
_QUANTIFIER_WORDS = {
    "all": "all every each always entire whole any both everyone everything everywhere universally invariably",
    "most": "most mostly majority usually generally typically largely mainly predominantly overwhelmingly",
    "many": "many numerous often frequently commonly lots plenty",
    "some": "some several various sometimes occasionally multiple handful",
    "few": "few rarely seldom hardly scarcely",
    "only": "only solely exclusively merely",
}
QUANTIFIERS = {w: cls for cls, words in _QUANTIFIER_WORDS.items() for w in words.split()}
# Longer phrases first win over their words: "all but a few" is most, "a few" is some.
QUANTIFIER_PHRASES = {
    phrase("all but a few"): "most", phrase("all but one"): "most", phrase("nearly all"): "most",
    phrase("almost all"): "most", phrase("almost always"): "most", phrase("the vast majority"): "most",
    phrase("a few"): "some", phrase("a number of"): "some", phrase("a handful of"): "some",
    phrase("a lot of"): "many", phrase("a large number of"): "many", phrase("very few"): "few",
    phrase("just one"): "only", phrase("just a"): "only",
}

# --------------------------------------------------------------------------- hedges

HEDGES = _words(
    "may might could possibly perhaps likely probably suggest suggests suggested indicate indicates appear "
    "appears seem seems potentially presumably conceivably tend tends hypothesize speculate plausibly arguably"
)
CERTAINTY = _words(
    "show shows showed shown prove proves proved proven demonstrate demonstrates demonstrated establish "
    "establishes established confirm confirms confirmed clearly certainly definitely undoubtedly conclusively "
    "evidently"
)

# --------------------------------------------------------------------------- harmless edits

# Intensifiers: dropped or added they do not turn a statement around; a strong one against
# a weak one ("substantially" against "slightly") is a change the rules do not judge.
DEGREE = {
    **dict.fromkeys(_words(
        "substantially significantly greatly considerably heavily highly strongly much far dramatically vastly "
        "markedly remarkably extremely very drastically sharply"), "strong"),
    **dict.fromkeys(_words("slightly somewhat marginally modestly moderately mildly"), "weak"),
}
# Discourse words, connectives and hedging-free adverbs that can be dropped, added or swapped.
FILLERS = _words(
    "thus therefore hence so consequently accordingly moreover furthermore additionally also however "
    "nevertheless nonetheless indeed simply just actually basically essentially really then finally further "
    "respectively namely specifically particularly especially notably eg ie example instance such like "
    "including etc al et in fact addition particular as well course directly currently already still "
    "relatively fairly quite rather pretty approximately roughly about around nearly almost"
)
# Function words whose change never turns a statement around (articles, auxiliaries, pronouns,
# plain prepositions). Words with a meaning of their own (than, without, before, above, only,
# all, not, ...) are not here.
HARMLESS_WORDS = FILLERS | _words(
    "a an the of in on at to for from by into onto upon that this these those there here which who whom "
    "whose what is are was were be been being am do does did done doing have has had having will would shall "
    "should can it its they them their theirs we us our ours i me my you your he him his she her hers "
    "itself themselves ourselves and or but via per when where while whereas whether"
)
# Words that may stand for one another in a quote without changing what it says.
_SYNONYM_GROUPS = (
    "modification modifications change changes alteration alterations adjustment adjustments",
    "use uses used using utilize utilizes utilized employ employs employed",
    "method methods approach approaches technique techniques",
    "obtain obtains obtained achieve achieves achieved attain attains reach reaches",
    "large big", "small little", "need needs needed require requires required",
    "begin begins start starts", "end ends finish finishes", "help helps aid aids assist assists",
    "paper papers work study studies article articles", "result results finding findings outcome outcomes",
    "show shows shown demonstrate demonstrates demonstrated", "make makes create creates produce produces",
    "substantial considerable significant", "commonly widely",
)
SYNONYMS = {key(w): n for n, group in enumerate(_SYNONYM_GROUPS) for w in group.split()}
# An amount word next to these is a quality word too: "lowers performance" is "hurts", "lowers
# the error" is "improves".
GOOD_NOUNS = frozenset(key(w) for w in _words(
    "performance accuracy quality score scores result results effectiveness robustness precision recall f1 "
    "bleu gain gains efficiency"))
BAD_NOUNS = frozenset(key(w) for w in _words("error errors loss perplexity cost latency overhead"))
