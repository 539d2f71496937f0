"""Every tunable and every ``RAG_CORE_*`` environment variable, each with what chose it.

Figures are from ``docs/benchmarks.md`` (SciFact train for choices, test to confirm).
Modules import their defaults from here; change a default here, not in the module.

"Settings" here means the package's tunables. Three other things users set have names of
their own: the app's *preferences* (:mod:`rag_core.collections.preferences`, a person's
choices kept in the data folder), a collection's *settings* (its chunking and embedding model,
fixed when it is made, and its saved search defaults: ``CollectionStore.read_settings``), and
one hybrid search's choices (reranker, fusion, weights, pool: a
:class:`~rag_core.retrieval.search_spec.SearchSpec`).
"""

from __future__ import annotations

import os
from pathlib import Path

# ---------------------------------------------------------------- the public contract
# Fixed by ../shared/spec/API.md (the tools this project replaces): kept, not tuned.
CHUNK_SIZE_CHARS = 1200
CHUNK_OVERLAP_CHARS = 200
DEFAULT_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_CROSS_ENCODER_MODEL = "cross-encoder/ms-marco-MiniLM-L-6-v2"
# The learned query head (rag_core/models/query_head.py) used by default; None: plain query vectors.
DEFAULT_QUERY_HEAD: str | None = None
TFIDF_MAX_FEATURES = 20_000  # the contract: at most 20,000 features
TFIDF_NGRAM_RANGE = (1, 2)  # the contract: word 1- and 2-grams
# Maximal marginal relevance's lambda: the contract's DiversityReranker default, kept as is (not
# tuned); hybrid search's MMR reranker starts from it (SearchSpec.mmr_lambda, the app's MMR λ).
MMR_LAMBDA = 0.7

# ------------------------------------------------------------------- hybrid search
# Candidates taken from each first-stage list (TF-IDF, BM25, dense) before re-reading.
# 30, chosen on SciFact train: fused nDCG@10 within 0.0003 of the best pool (50), the union
# still holds 93% of relevant documents (BM25's top 100: 91%), and a cross-encoder reads at
# most 90 chunks a query instead of 150 at pool 50.
DEFAULT_POOL = 30
# BM25's top `pool` joins the contract's TF-IDF and dense pools: best fusion on SciFact train
# needs it (min-max BM25+dense 0.734 nDCG@10 vs 0.702 for the old TF-IDF/dense RRF).
DEFAULT_WITH_BM25 = True
# Score fusion beat rank fusion by 0.02-0.03 nDCG@10 on SciFact train (min-max 0.734, z-score
# 0.731, best RRF 0.716): "minmax", "zscore" or "rrf".
DEFAULT_FUSION = "minmax"
# BM25 1 : dense 1 was best for min-max (1:1.5, 1.5:1, 1:2, 2:1 all lower); TF-IDF in the
# fused score (0.25, 0.5) never helped, so it only widens the pool.
DEFAULT_FUSION_WEIGHTS = {"tfidf": 0.0, "bm25": 1.0, "dense": 1.0}
# Reciprocal rank fusion's k: the RRF paper's and the old tool's 60 (only used with "rrf").
DEFAULT_RRF_K = 60

# ------------------------------------------------------------------ lexical, dense
# BM25 k1=1.2, b=0.4 beat 0.9 and 1.5 with b 0.4/0.75/1.0 on SciFact train, under both title modes.
BM25_K1 = 1.2
BM25_B = 0.4
# A chunk longer than the bi-encoder's 256 word pieces: "truncate" (read the opening) beat
# "windows" (mean of overlapping windows) for dense on train (0.668 vs 0.649) and test, and
# embeds ~25% more chunks per second.
DEFAULT_LONG_TEXT = "truncate"

# Passage sizes a collection may use (the app's settings form offers the same range).
MIN_CHUNK_SIZE = 200
MAX_CHUNK_SIZE = 20_000

# ------------------------------------------------------------------ large indexes
# From this many chunks an index (a full segment) gets an HNSW graph (rag_core.index.ann) for the
# dense stage: an exact product over 100k x 384 float32 took 16-27 ms here, the graph 1-5 ms
# (docs/benchmarks.md, bench_million). Smaller indexes keep the exact product (a few ms).
# A full segment ends at a document boundary, so it holds a little under SEGMENT_MAX_CHUNKS.
ANN_MIN_CHUNKS = 90_000
# The segments of a large collection are searched this many at a time, by exact search (RE2
# releases the GIL: two threads took 0.44 s where one took 0.77 s over 800 MB of text here) and
# by the dense stage (usearch releases it: 10 graphs of 100k took 28 ms where one thread took 50 ms).
SEGMENT_THREADS = max(1, min(2, os.cpu_count() or 1))
# A comparison runs its exact search in another thread beside the TF-IDF and hybrid lists (issue
# 21): its own small pool, as exact search itself may wait on the segment threads above.
COMPARE_THREADS = 2
ANN_CONNECTIVITY = 16
ANN_EXPANSION_ADD = 64
# Search breadth and candidates per segment, re-ordered by exact cosines. Measured on the 1M
# benchmark collection (each SciFact vector with ~100 near-duplicate copies, the hard case),
# 30 claims, recall@10 against the exact product over all segments / dense top-10 p50:
# 128 / 64: 0.947, 16 ms; 256 / 128: 0.967, 20 ms; 384 / 128: 0.990, 25 ms; 512 / 256: 1.0, 29 ms.
ANN_EXPANSION_SEARCH = 384
ANN_OVERFETCH = 128
# A collection keeps its chunks in segments of at most this many: an ingest into a larger
# collection adds a segment instead of refitting TF-IDF and BM25 over everything (62 s per 100k
# chunks here), and small neighbouring segments are merged. Up to this size a collection is one
# segment, exactly the contract's single TF-IDF matrix over all chunks.
SEGMENT_MAX_CHUNKS = 100_000

# ------------------------------------------------------------------------ evaluation
# Chunks read from each method's ranking to fill the top 100 documents: a SciFact or ArguAna
# document has at most 10 chunks (most have 1-2), so 1,000 chunks always hold 100 documents.
EVAL_CHUNK_DEPTH = 1000

# ------------------------------------------------------------------ citation checks
# near_verbatim: the best alignment shares at least this word-level similarity with the quote
# (Dice: 2 * words in common, in order / (words in the quote + words in the passage)) and
# differs by at most NEAR_MAX_CHANGED_WORDS words, or by at most NEAR_MAX_CHANGED_SHARE of the
# quote's words when that is more. Chosen on the labelled set (docs/citations.md): misquotes
# with 1-3 words changed score 0.83-0.99; the closest paraphrase 0.38.
NEAR_MIN_SIMILARITY = 0.7
NEAR_MAX_CHANGED_WORDS = 4
NEAR_MAX_CHANGED_SHARE = 0.25
# related: the best sentence of a close passage is at least this close in meaning (cosine of
# all-MiniLM-L6-v2 embeddings), or, in a collection without embeddings, shares at least this
# TF-IDF cosine. Chosen on the labelled set (docs/citations.md).
RELATED_MIN_MEANING = 0.55
RELATED_MIN_LEXICAL = 0.35

# Passages whose best sentence is compared in meaning with the statement (the related verdict).
MEANING_PASSAGES = 5
# Candidate chunks taken from each lexical list (TF-IDF, BM25) for the fuzzy alignment.
CANDIDATES_PER_LIST = 8
# Sentences of a passage whose meaning is compared with the statement: those sharing the most
# key words with it (a sentence sharing none is not its best match), at most this many.
SENTENCES_PER_PASSAGE = 2

# A "sentence" longer than this many words (a table, a list, a run-on line of a PDF) is compared
# in windows of SENTENCE_WINDOW_WORDS words: the model's cost grows with the longest input of a batch.
MAX_SENTENCE_WORDS = 60
SENTENCE_WINDOW_WORDS = 40
# The parts of a quote with an ellipsis lie at most this many characters apart in the document.
MAX_ELIDED_CHARS = 2_000
# The wording alignment (rapidfuzz's partial ratio) of a statement longer than this places its first
# ALIGN_MAX_CHARS characters only, then compares the words of the whole statement with the document
# from there: its cost grew with the square of the length (a 9,500-character statement took 64 s,
# issue 27 row 18); a passage that is nearly the statement starts nearly as the statement does.
ALIGN_MAX_CHARS = 600
# A quoted passage in a manuscript shorter than this many words is a term in quotes ("bad guy"),
# not a quote.
MIN_QUOTE_WORDS = 4
# A cited claim of fewer words than this ("BERT helps (Devlin et al., 2019)") is too short to
# check: it is reported not_checked with that reason, never dropped (issue 27 row 14).
MIN_CLAIM_WORDS = 3

# The meaning layer (rag_core/citations/meaning.py), chosen on the meaning cases of the
# labelled set (docs/citations.md, "Meaning: does the source say what the statement says?"):
# * a paraphrase is compared with the sentence of the closest passages that holds the largest
#   share of its content words and figures; below this share too little aligns and the meaning
#   is "unclear", never "same". Faithful paraphrases align 0.56-1.0 with their sentence,
#   contradicting ones 0.62-1.0; the fabricated claims called related 0.50 (a sentence about
#   something else that shares half the words: with 0.5 they came out "same");
MEANING_MIN_ALIGNED = 0.55
# * the sentences of this many of the closest passages are candidates (the verdict reads five;
#   the aligned sentence of every labelled paraphrase was in the first three);
MEANING_ALIGN_PASSAGES = 5
# The learned stance (rag_core/citations/stance.py) may withhold a "same" and confirm a support
# where the rules cannot tell; flagging "changed" on its own (no rule cue) is off: with it on, 2 of
# the labelled set's 52 harmless edits and faithful paraphrases were flagged through the whole
# check (the limit is 3%); docs/citations.md has both modes' dev figures.
STANCE_MAY_FLAG = False
# * "about 8.5 hours" and "8.8 hours" are one figure: with "about", "roughly", "~" on either
#   side, figures this far apart (relative) agree; without, they must be equal;
MEANING_APPROX_TOLERANCE = 0.1
# * a negation reaches the first content word after it and the content words right after that
#   one, at most this many ("not mutually exclusive", "no single approach");
MEANING_NEGATION_SCOPE_WORDS = 3
# * a clause a negated evidence noun introduces ("no evidence that 5G networks spread the virus")
#   conflicts with the other text's plain assertion when at least this many of its content words
#   (and at least half of them) align with that text, none of them negated there;
MEANING_DENIED_CLAUSE_MIN_WORDS = 2
# * changed words of a near-verbatim quote this close together (words in common between them)
#   are one change, shown together ("improves … substantially").
MEANING_MERGE_GAP_WORDS = 2

# ----------------------------------------------------------------- the relevance lab's paired test
# Below this many queries the lab warns that a paired test is too weak: a two-sided sign-flip
# randomisation test over n queries cannot go below p = 2 / 2**n (0.125 at 4, 0.0039 at 9), and a
# bootstrap over fewer than 10 values gives intervals far too narrow (Efron & Tibshirani 1993, ch. 13).
PAIRED_TEST_MIN_QUERIES = 10

# ----------------------------------------------------------------- passages in a list (display only)
# Chosen by looking at the Compare lists of the 25 sample PDFs at 1280 and 1600 px:
# * a chunk cut out mid-document ("ting. The model…") is shown from its first sentence start when
#   one is this close to its beginning (two lines of a list cell), else from its first word start
#   within a long word's length;
DISPLAY_SENTENCE_LOOKAHEAD = 160
DISPLAY_WORD_LOOKAHEAD = 40
# * a file name in a title chip (no author or year known): the sample files differ in their first
#   22 characters ("ml_bert_devlin2018_arx…");
CHIP_NAME_CHARS = 22
# * the opening of a passage that Compare's dialog sends to Verify: a sentence or two, which Verify
#   finds word for word and marks on the page.
VERIFY_LINK_CHARS = 300
# * a list cell's passage: about four lines of the passage column at 300 px.
LIST_PASSAGE_CHARS = 220

# ----------------------------------------------------------------- limits on input
# Safety limits, not measured: far above any paper in ../shared/data/pdfs (the largest is
# 2.2 MB, the longest 123 pages), small enough that one file cannot exhaust memory.
MAX_PDF_BYTES = 200 * 1024 * 1024
MAX_PDF_PAGES = 2_000
MAX_COLLECTION_NAME_LENGTH = 100  # fits a file name on every file system, with room for suffixes
MAX_QUERY_CHARS = 10_000  # a long pasted paragraph fits; TF-IDF and BM25 read every word
MAX_PATTERN_CHARS = 1_000  # an exact-search pattern
MAX_QUOTE_CHARS = 10_000  # a quote looked up whole in the documents: may be a paragraph
EXACT_COUNT_LIMIT = 10_000  # exact matches a comparison counts before it stops counting
MAX_MANUSCRIPT_BYTES = 50 * 1024 * 1024  # a manuscript to check (text, Markdown, LaTeX, Word, PDF; standard input)
# The text part of a .docx (word/document.xml), inflated: Word's XML holds its text with the runs'
# markup around it, about 2-10 times the text; a part declaring more is refused before it is
# inflated, and none is inflated past its declared size (safety limits, not measured, like those above).
MAX_DOCX_XML_BYTES = 100 * 1024 * 1024
# Checkable statements (quoted passages and sentences that cite) found in one manuscript: a long
# thesis has a few thousand; a check reads each against the collection (a fraction of a second
# to a few seconds each: docs/citations.md), so a file of more is refused with a message rather
# than checked for hours (1 MB of "Smith et al. (2019) agree." holds 30,000).
MAX_MANUSCRIPT_STATEMENTS = 5_000
# A number in brackets or at the start of a reference entry with more digits than this is not a
# reference number (Python refuses int() of over 4,300 digits; no list reaches a million entries).
MAX_REFERENCE_NUMBER_DIGITS = 6

# The relevance lab's imports (CSV, a BEIR folder or zip). Safety limits, not measured, like those
# above: a 1,000,000-row spreadsheet of query, document, quote and grade is 33 MB, under the cap.
MAX_IMPORT_BYTES = 50 * 1024 * 1024  # a CSV, queries.jsonl or qrels file (the same cap for a zip member)
# A BEIR zip: its corpus.jsonl (every passage of the collection) is listed, never inflated, so the
# archive may be large; its central directory is read whole, so its entries are capped (an export
# has 4; a word-processor file a few hundred).
MAX_IMPORT_ZIP_BYTES = 2 * 1024 * 1024 * 1024
MAX_ZIP_ENTRIES = 10_000
MAX_ZIP_DIRECTORY_BYTES = 4 * 1024 * 1024
# Python's csv module's own cell limit, kept: a cell longer than this is a malformed row.
MAX_IMPORT_CELL_CHARS = 131_072
# Rows of an import reported one by one (a file of a million bad rows is counted, not listed).
MAX_IMPORT_PROBLEMS_LISTED = 1_000
# A quote in an imported row is looked up whole in its document (as a quote to verify is).
MAX_IMPORT_QUOTE_CHARS = MAX_QUOTE_CHARS
# Who judged, as an imported row names it ("app", "import", a person's name); longer is cut.
MAX_IMPORT_BY_CHARS = 40

# ------------------------------------------------------------------ bibliographic records (issue 18)
# A records file (BibTeX, CSL-JSON, RIS) to import or to resolve \cite keys through. Safety limits,
# not measured, like those above: a Zotero library of 20,000 items exports to about 15 MB of BibTeX.
MAX_RECORDS_FILE_BYTES = 50 * 1024 * 1024
# Records read from one file or Zotero library (a reference manager's largest libraries hold tens of
# thousands); more is refused with a message.
MAX_RECORDS = 100_000
# A zotero.sqlite is opened read-only and immutable, never written; past this size it is refused.
MAX_ZOTERO_SQLITE_BYTES = 2 * 1024 * 1024 * 1024
# A foreign SQLite database (rag_core.records.foreign_sqlite): one read of it is stopped past this
# many seconds (measured: 100,000 items read in ~N s, see docs/benchmarks.md), and a value larger
# than this is an error, not an allocation (Zotero's longest fields, abstracts, are a few KB).
FOREIGN_SQLITE_SECONDS = 120.0
FOREIGN_SQLITE_MAX_VALUE_BYTES = 16 * 1024 * 1024
# A title matches a document's title when their folded forms are this similar (rapidfuzz ratio, 0-100):
# 95 accepts a changed article or a dropped subtitle mark, and no two titles of the shared PDFs come close.
RECORD_TITLE_MATCH = 95

# ------------------------------------------------------------------ side data (the lab's judgments)
# Every write of a collection's side data (judgments, snapshots) is a generation with its checksum;
# copies of this many generations are kept (not measured: the live one and two before it, so a
# repair has a good copy even when the newest copy was damaged as well).
SIDE_DATA_GENERATIONS = 3

# ------------------------------------------------------------------ text of PDFs
# A page's text layer is junk when too few of its characters are letters or too few of its
# tokens look like words (measured on the shared PDFs: real papers have a letter share of
# 0.85-0.94 and a word-like token share of 0.77-0.92; the scanned ZFN note with OCR'd
# equations 0.63 / 0.48; an unmapped TrueType font 0.0 / 0.0).
PDF_MIN_LETTER_SHARE = 0.5
PDF_MIN_WORDLIKE_SHARE = 0.3
# A page with fewer non-space characters than this is not judged on its own.
PDF_MIN_CHARS_TO_JUDGE_PAGE = 200

# ------------------------------------------------------------------- chunking of PDFs
# Chunk boundaries between words, and the title and section heading carried with each chunk
# for BM25 and the bi-encoder (rag_core.text.passage_context): both lost on the 50 judged PDF
# questions (benchmarks/lab_pdf_quality.py, 2026-11-30, docs/benchmarks.md section 10):
# hybrid nDCG@10 0.641 with fixed strides and no context, 0.591 between words, 0.598 with
# context, 0.573 with both. Kept as options, off by default.
PDF_WORD_BOUNDARIES = False
PDF_CONTEXT = False

# --------------------------------------------------------- environment variables
APP_NAME = "rag_core"
STORE_ENV = "RAG_CORE_STORE"
ENCODER_ENV = "RAG_CORE_ENCODER"
MODEL_CACHE_ENV = "RAG_CORE_MODEL_CACHE"
CACHE_DIR_ENV = "RAG_CORE_CACHE_DIR"
RATES_FILE_ENV = "RAG_CORE_RATES_FILE"
EXTRACT_SECONDS_BASE_ENV = "RAG_CORE_EXTRACT_SECONDS_BASE"
EXTRACT_SECONDS_PER_PAGE_ENV = "RAG_CORE_EXTRACT_SECONDS_PER_PAGE"
EXTRACT_MEMORY_MB_ENV = "RAG_CORE_EXTRACT_MEMORY_MB"
DATA_DIR_ENV = "RAG_CORE_DATA_DIR"
EVAL_CACHE_ENV = "RAG_CORE_EVAL_CACHE"
EVAL_CROSS_ENCODER_ENV = "RAG_CORE_EVAL_CROSS_ENCODER"
DEVICE_ENV = "RAG_CORE_DEVICE"
OFFLINE_ENV = "RAG_CORE_OFFLINE"
SKIP_BROWSER_ENV = "RAG_CORE_SKIP_BROWSER"
SKIP_OCR_ENV = "RAG_CORE_SKIP_OCR"
PG_ANN_MIN_CHUNKS_ENV = "RAG_CORE_PG_ANN_MIN_CHUNKS"
PG_INDEX_MEMORY_ENV = "RAG_CORE_PG_INDEX_MEMORY"
PG_POOL_MAX_ENV = "RAG_CORE_PG_POOL_MAX"
PG_FILE_CACHE_ENV = "RAG_CORE_PG_FILE_CACHE"
TESSERACT_ENV = "RAG_CORE_TESSERACT"
OCR_SECONDS_PER_PAGE_ENV = "RAG_CORE_OCR_SECONDS_PER_PAGE"
CHECK_HOLD_ENV = "RAG_CORE_CHECK_HOLD_FOR_TESTS"
EXTRACT_HOLD_ENV = "RAG_CORE_EXTRACT_HOLD_FOR_TESTS"
CLAIMS_DIR_ENV = "RAG_CORE_CLAIMS_DIR"
QUERY_HEAD_ENV = "RAG_CORE_QUERY_HEAD"

# Every variable rag_core (or its setup script) reads, and what it does; the README lists them.
ENVIRONMENT_VARIABLES = {
    DATA_DIR_ENV: "the data folder holding the collections (default: the user data folder, "
    "~/.local/share/rag_core on Linux); `--data-dir` overrides it for one command",
    EVAL_CACHE_ENV: "where `rag-core eval` caches chunk embeddings (default: ~/.cache/rag_core/eval)",
    EVAL_CROSS_ENCODER_ENV: "the cross-encoder `rag-core eval` uses for method hybrid_ce "
    "(default: --cross-encoder, else cross-encoder/ms-marco-MiniLM-L-6-v2)",
    DEVICE_ENV: "force the torch device for the models (cpu, cuda, mps; default: the best one found)",
    OFFLINE_ENV: "1 to never contact the model hub (as HF_HUB_OFFLINE=1 does)",
    SKIP_BROWSER_ENV: "1 to make scripts/setup.sh skip installing Chromium for the browser test",
    SKIP_OCR_ENV: "1 to make scripts/setup.sh skip installing Tesseract (OCR of scanned PDFs)",
    ENCODER_ENV: "the bi-encoder variant: auto (int8 ONNX Runtime on a CPU, torch on a GPU), torch, onnx-int8 "
    "or onnx-fp32",
    MODEL_CACHE_ENV: "where bi-encoders and the stance reader converted to ONNX are kept, with their checksums "
    "(default: ~/.cache/rag_core/onnx)",
    STORE_ENV: "where collections live: a `postgresql://` URL for a shared store (default: the data folder)",
    CACHE_DIR_ENV: "where rag_core keeps machine-specific caches, such as the ingest rates behind its time "
    "estimates (default: ~/.cache/rag_core)",
    RATES_FILE_ENV: "the file of ingest rates measured on this machine, behind the time estimates "
    "(default: rates.json in the cache folder; the test suite keeps its own)",
    EXTRACT_SECONDS_BASE_ENV: "time budget for reading one PDF, before its pages are counted (default 15 s)",
    EXTRACT_SECONDS_PER_PAGE_ENV: "time budget added per page of a PDF (default 0.5 s; at most 600 s a file)",
    EXTRACT_MEMORY_MB_ENV: "memory limit of the process that reads one PDF (default 2048 MiB)",
    TESSERACT_ENV: "the Tesseract program that reads scanned pages (default: `tesseract` on the PATH)",
    OCR_SECONDS_PER_PAGE_ENV: "time budget added per page read by OCR (default 60 s; at most 3600 s a file)",
    PG_ANN_MIN_CHUNKS_ENV: "PostgreSQL store: collections with at least this many vectors get a pgvector HNSW "
    "index (default 50000)",
    PG_INDEX_MEMORY_ENV: "PostgreSQL store: maintenance_work_mem for building an HNSW index (default 512MB)",
    PG_POOL_MAX_ENV: "PostgreSQL store: connections per process (default 8)",
    PG_FILE_CACHE_ENV: "PostgreSQL store: where copies of original PDFs are kept for page images, and in its "
    "lexical folder disk copies of stored TF-IDF/BM25 files (default: ~/.cache/rag_core/pg-files)",
    CLAIMS_DIR_ENV: "training and benchmarks: the labelled claims folder (default: ../shared/data/claims beside the "
    "checkout)",
    QUERY_HEAD_ENV: "the learned query head dense and hybrid search put query vectors through: a name under "
    "rag_core/models/trained/ or a folder, or none (default: DEFAULT_QUERY_HEAD of rag_core/settings.py)",
    CHECK_HOLD_ENV: "tests only: a file where the app's check worker writes its process id, then waits, "
    "checking nothing, until it is stopped (how the tests see its time budget kept on any machine)",
    EXTRACT_HOLD_ENV: "tests only: a PDF file name the extraction worker waits on, reading nothing, until it is "
    "stopped (how the tests see the ingest's time budget kept on any machine)",
}


def _env_number(name: str, default: float) -> float:
    """A positive number from the environment, or ``default`` when unset or not a positive number."""
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


# -------------------------------------------------------------------- ingest budgets
# Extraction of one PDF runs in a worker process under these budgets (a hostile 257 KB PDF
# whose 50 pages share one 70 MiB content stream took ~11 s a page). Real papers here
# extract at 0.02-0.2 s a page, so 0.5 s a page on top of 15 s is a wide margin.
EXTRACT_WORKERS = max(1, min(2, os.cpu_count() or 1))
EXTRACT_SECONDS_BASE = _env_number(EXTRACT_SECONDS_BASE_ENV, 15.0)
EXTRACT_SECONDS_PER_PAGE = _env_number(EXTRACT_SECONDS_PER_PAGE_ENV, 0.5)
EXTRACT_SECONDS_MAX = 600.0
EXTRACT_MEMORY_MB = int(_env_number(EXTRACT_MEMORY_MB_ENV, 2048))

# ---------------------------------------------------------------------------- OCR
# Scanned pages are read by Tesseract (rag_core.pdf.ocr) inside the same reader process, under
# its memory limit; its time budget grows by OCR_SECONDS_PER_PAGE for each page to read (one
# page took 1-3 s here with one core, 2 cores shared; 60 s leaves room for a dense page on a
# busy machine), at most OCR_SECONDS_MAX a file (a 600-page scanned book on 2 cores).
OCR_SECONDS_PER_PAGE = _env_number(OCR_SECONDS_PER_PAGE_ENV, 60.0)
OCR_SECONDS_MAX = 3600.0
# One Tesseract call may take this long before the page is given up (far beyond any page here).
OCR_PAGE_TIMEOUT_S = 300
# Pages are rendered at this resolution: Tesseract is trained on 300 dpi text, and the brochure
# read at 300 dpi had 1.0% character error (docs/benchmarks.md, benchmarks/bench_ocr.py).
OCR_DPI = 300
# A page image is at most this many pixels (a grayscale byte each; Tesseract needs several times
# that): a larger page is rendered at a lower resolution, down to OCR_MIN_DPI, under which text of
# ordinary size cannot be read and the page is reported too large (a 2,000-inch page, say).
OCR_MAX_PIXELS = 60_000_000
OCR_MIN_DPI = 100
# A rendered page with fewer ink pixels than this (at 300 dpi) has marks too small to read: not
# given to Tesseract. One small letter has ~300.
OCR_BLANK_DARK_PIXELS = 100
# Ink is judged relative to the page (rag_core.pdf.ocr._unreadable: Otsu's split of the page's
# levels): it stands out when paper and ink differ by at least OCR_MIN_CONTRAST levels (of 255) and
# by OCR_CONTRAST_NOISE_RATIO times the paper's own noise. Measured (benchmarks/bench_ocr.py,
# docs/benchmarks.md, 'Records imports and faint scans'): a line of 12-point text is read word for word with its levels
# stretched down to 6 levels of contrast on white; Gaussian paper noise, split by Otsu, shows a
# contrast of 1.6 times its standard deviation and its paper class a third of that (a ratio of
# about 2.7), which Tesseract reads as junk words once stretched.
OCR_MIN_CONTRAST = 5
OCR_CONTRAST_NOISE_RATIO = 4.0
# A page whose paper and ink differ by fewer levels than this is stretched (ink black, paper
# white) before Tesseract reads it: Tesseract alone read 12-point text at 75 levels of contrast
# or more (on white or grey paper) and at 61-66 on grey, but not at 66 on white nor at 51-56 on
# any. The shared scans have 92 (the book page: stretching it lost two of its sentences) and 238
# (the brochure): handed over as they are.
OCR_STRETCH_BELOW = 72
# "auto" also reads a page whose text layer holds fewer than this many non-space characters (a
# stamp, a running head) when images cover at least this share of it: a scanned page. No page of
# the 23 born-digital shared PDFs qualifies (their sparse pages hold no image; slides with a
# picture: 34% covered).
OCR_SCAN_MAX_TEXT_CHARS = 100
OCR_SCAN_IMAGE_COVER = 0.8
# A page whose words Tesseract is on average less sure of than this (0-100) is flagged in the
# ingest report: the shared scans read at 94-97; the brochure rendered at 100 dpi, at 87.5 with
# 4.7% character error (benchmarks/bench_ocr.py, docs/benchmarks.md section 13), so a page under
# 80 reads clearly worse than a poor scan of a clean page.
OCR_LOW_CONFIDENCE = 80
# The OCR rate of an ingest is remembered only from this many seconds of reading: a shorter run
# (a page or two) says little about the next estimate.
OCR_RATE_MIN_SECONDS = 3.0
OCR_LANG = "eng"


def tesseract_command() -> str:
    """The Tesseract program: ``$RAG_CORE_TESSERACT``, else ``tesseract`` (found on the PATH)."""
    return os.environ.get(TESSERACT_ENV) or "tesseract"


def ocr_threads() -> int:
    """Pages read by OCR at once: one Tesseract process per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)

# The app's checks run in a child process (rag_core.check_worker) under these budgets; `rag-core check`
# keeps the same one (--time-budget overrides it), a statement not reached in it reported not_checked.
# Its start (imports, the collection's index, the models) took 3-5 s here on the two small shared
# PDFs; a cold index of 100k chunks on PostgreSQL 6 s (docs/benchmarks.md section 9), so 120 s is a
# wide margin. A statement took 0.05-0.4 s, at most 1.8 s (the first, loading the bi-encoder), on a
# 30 KB manuscript of 196 statements (docs/benchmarks.md section 15): 10 s a statement on top.
CHECK_SECONDS_BASE = 120.0
# The Verify page checks one statement of at most this many characters in the server's process (a
# check of that size is bounded by ALIGN_MAX_CHARS and takes well under a second; the worker's fresh
# process loads the models again and measured 1.47 s against 0.52 s in process, quiet machine, 2026-12-07);
# a longer one in the check worker, where it cannot hold the server (issue 27 row 20).
VERIFY_IN_PROCESS_MAX_CHARS = 1_000
CHECK_SECONDS_PER_STATEMENT = 10.0
# Its data (heap and private mappings: RLIMIT_DATA, which leaves the models' reserved address space
# alone): 600 MB for that check with the bi-encoder loaded; four times that before it is stopped.
CHECK_MEMORY_MB = 4096

# ------------------------------------------------------------------ collection stores
# Old collection versions stay this long after they stop being live, so a reader that opened
# one just before a commit finishes with it (a load takes well under a second at 100k chunks).
VERSION_GRACE_S = 600
# How long a writer waits for a collection's lock before saying it is busy (both backends).
LOCK_TIMEOUT_S = 600
# An embedder that has not reported its progress for this long is gone (killed, machine
# restarted): a running one reports after every batch of passages, seconds apart.
EMBEDDER_SILENT_S = 30
# The folder store: a reader whose version a commit replaced mid-read reads the new one, up to
# this many attempts in all before it calls the collection damaged (not measured: one retry
# covers one commit landing mid-read, three leave room for commits in quick succession).
FOLDER_READ_ATTEMPTS = 3
# The PostgreSQL store. Collections with at least this many vectors get a pgvector HNSW index
# (built after a fold-in); a different threshold from ANN_MIN_CHUNKS (a folder segment's
# in-process graph): below it, the exact scan through SQL took 33 ms at 10k chunks, and dense
# search in the process does not use the index anyway (docs/benchmarks.md section 9).
PG_ANN_MIN_CHUNKS = int(_env_number(PG_ANN_MIN_CHUNKS_ENV, 50_000))
# HNSW candidate list per query: recall@10 against exact search on 100k realistic MiniLM vectors
# 0.943 / 0.972 / 0.985 at 40 / 100 / 200, p50 2.9 / 3.6 / 5.3 ms (benchmarks/bench_postgres.py --recall);
# on 100k vectors around the shared PDFs' real ones, queried with the 50 judged questions
# (benchmarks/bench_pg_hybrid.py, issue 21: hybrid's dense stage goes through it), 0.968 / 0.994
# at 200 / 400, 2.7 / 4.5 ms on a busy machine: 400 for recall >= 0.98.
PG_ANN_EF_SEARCH = 400
# Memory PostgreSQL may use to build an HNSW index (maintenance_work_mem for that statement):
# the graph of 100k x 384 floats (~200 MB) is built much faster when it fits in memory.
PG_INDEX_MEMORY = os.environ.get(PG_INDEX_MEMORY_ENV) or "512MB"
# Connections per process (not measured: an app instance's page runs, its background embedder
# and a copy at once fit, and PostgreSQL's default max_connections of 100 serves a dozen processes).
PG_POOL_MAX = int(_env_number(PG_POOL_MAX_ENV, 8))
# How long to wait for a connection (a new one, or a free one of the pool) before saying so.
PG_CONNECT_TIMEOUT_S = 15
# Collection versions whose TF-IDF/BM25 (and vectors) a process keeps in memory (not measured:
# the app searches one or two collections at a time).
PG_INDEX_CACHE_ENTRIES = 4
# Stored TF-IDF/BM25 files a machine keeps on disk, by content (issue 21: fetching them from the
# database was ~1/3 of a cold load at 100k chunks, 160 MB; a copy is read memory-mapped, as the
# folder store reads its own). Versions kept: as many as a process keeps in memory.
PG_LEXICAL_DISK_ENTRIES = PG_INDEX_CACHE_ENTRIES
# A commit that writes at least this many chunk rows refreshes the planner's statistics at once
# (a cold load_index at 100k chunks took 16-18 s before, 6.2 s after: docs/benchmarks.md section 9).
PG_ANALYZE_MIN_ROWS = 2_000
# Side data larger than this is stored in its jsonb row as one JSON string, not as jsonb items:
# PostgreSQL parsed the 11 million numbers of a million judgments (60 MB) in about 6 s under the
# writer lock, one string of them in well under a second (benchmarks/bench_judgments_import.py).
PG_SIDE_DATA_OPAQUE_BYTES = 64 * 1024
# Stored TF-IDF/BM25 files are split into bytea values of this size (PostgreSQL takes at most
# 1 GB a value; parts are joined in order, so a change keeps old libraries readable).
PG_BLOB_PART_BYTES = 64 << 20


def default_data_dir() -> Path:
    """The data folder: ``$RAG_CORE_DATA_DIR`` or the user's data directory."""
    configured = os.environ.get(DATA_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir(APP_NAME, appauthor=False))


def pg_file_cache_dir() -> Path:
    """Where the PostgreSQL store copies original PDFs for page images: ``$RAG_CORE_PG_FILE_CACHE``
    or ``pg-files`` in the user's cache folder."""
    configured = os.environ.get(PG_FILE_CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir(APP_NAME)) / "pg-files"


def pg_lexical_cache_dir() -> Path:
    """Where the PostgreSQL store keeps disk copies of stored TF-IDF/BM25 files (by content):
    ``lexical`` inside :func:`pg_file_cache_dir`."""
    return pg_file_cache_dir() / "lexical"


def eval_cache_dir() -> Path:
    """Where evaluation caches embeddings: ``$RAG_CORE_EVAL_CACHE`` or ``~/.cache/rag_core/eval``."""
    configured = os.environ.get(EVAL_CACHE_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / APP_NAME / "eval"


def rates_file() -> Path:
    """The ingest rates measured on this machine: ``$RAG_CORE_RATES_FILE``, else ``rates.json`` in
    ``$RAG_CORE_CACHE_DIR`` or the user's cache folder."""
    configured = os.environ.get(RATES_FILE_ENV)
    if configured:
        return Path(configured)
    from platformdirs import user_cache_dir

    return Path(os.environ.get(CACHE_DIR_ENV) or user_cache_dir(APP_NAME, appauthor=False)) / "rates.json"
