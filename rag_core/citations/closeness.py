"""Passages close in meaning to a statement: the best sentence of each, and how close it is.

:func:`score_sentences` marks the best sentence of each passage a search found for a
statement (``sentence_start``/``sentence_end``/``sentence_score``, its page): the
all-MiniLM-L6-v2 cosine between the statement and the passage's sentences that share the most
key words with it (long sentences read in windows of words), or, in a collection without
embeddings, the IDF-weighted share of the statement's key words a sentence holds. Sentence
embeddings are cached by text (:func:`clear_cache` empties the cache). :func:`owners` maps a
chunk to the document it belongs to.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict

import numpy as np

from rag_core.retrieval.exact import document_texts
from rag_core.settings import MAX_SENTENCE_WORDS, SENTENCE_WINDOW_WORDS, SENTENCES_PER_PASSAGE
from rag_core.text.documents import DocumentText
from rag_core.text.sentences import split_sentences

__all__ = ["clear_cache", "owners", "score_sentences"]


_owner_cache: OrderedDict[int, tuple[list, dict[int, DocumentText]]] = OrderedDict()
_owner_lock = threading.Lock()


def owners(documents: list[DocumentText]) -> dict[int, DocumentText]:
    """chunk index -> its document (cached per document list)."""
    with _owner_lock:
        got = _owner_cache.get(id(documents))
        if got is not None and got[0] is documents:
            return got[1]
        mapping = {i: doc for doc in documents for i in doc.chunk_indices}
        _owner_cache[id(documents)] = (documents, mapping)
        while len(_owner_cache) > 2:
            _owner_cache.popitem(last=False)
        return mapping



_sentence_cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_sentence_lock = threading.Lock()
_SENTENCE_CACHE_SIZE = 20_000


def _sentence_vectors(model, model_name: str, sentences: list[str]) -> np.ndarray:
    """Unit embeddings of ``sentences``, encoded in one batch on one thread; cached by text."""
    from rag_core.models.embedding import encode_passages, single_torch_thread

    out: list[np.ndarray | None] = []
    missing: list[int] = []
    with _sentence_lock:
        for i, sentence in enumerate(sentences):
            got = _sentence_cache.get((model_name, sentence))
            if got is not None:
                _sentence_cache.move_to_end((model_name, sentence))
            else:
                missing.append(i)
            out.append(got)
    if missing:
        with single_torch_thread():  # small batches: each is padded to its own longest sentence
            vectors = encode_passages(model, [sentences[i] for i in missing], batch_size=8)
        with _sentence_lock:
            for i, vector in zip(missing, vectors, strict=False):
                out[i] = vector
                _sentence_cache[(model_name, sentences[i])] = vector
            while len(_sentence_cache) > _SENTENCE_CACHE_SIZE:
                _sentence_cache.popitem(last=False)
    return np.vstack(out) if out else np.zeros((0, 1), dtype=np.float32)


class _KeyWordOverlap:
    """The share of a statement's key words (weighted by their IDF in the collection; a word
    the collection never uses weighs most) that a sentence contains."""

    def __init__(self, vectorizer, statement: str):
        analyzer = vectorizer.build_analyzer()
        vocabulary = vectorizer.vocabulary_
        idf = vectorizer.idf_
        rare = float(idf.max()) if len(idf) else 1.0
        self._analyzer = analyzer
        self.weights = {}
        for term in analyzer(statement):
            if " " in term:
                continue
            k = vocabulary.get(term)
            self.weights[term] = float(idf[k]) if k is not None else rare
        self.total = sum(self.weights.values())

    def score(self, sentence: str) -> float:
        if not self.total:
            return 0.0
        present = {t for t in self._analyzer(sentence) if " " not in t}
        return sum(w for t, w in self.weights.items() if t in present) / self.total




def _short_spans(text: str) -> list[tuple[int, int]]:
    """The sentences of ``text``, long ones cut into windows of words."""
    spans = []
    for a, b in split_sentences(text) or [(0, len(text))]:
        words = [m.span() for m in re.finditer(r"\S+", text[a:b])]
        if len(words) <= MAX_SENTENCE_WORDS:
            spans.append((a, b))
            continue
        for k in range(0, len(words), SENTENCE_WINDOW_WORDS):
            window = words[k:k + SENTENCE_WINDOW_WORDS]
            spans.append((a + window[0][0], a + window[-1][1]))
    return spans


def score_sentences(quote: str, index, rows: list[dict]) -> str:
    """Mark the best sentence of each row (``sentence_start``/``sentence_end``/``sentence_score``);
    returns the kind of score used: "meaning" or "key words"."""
    spans = [_short_spans(row["text"]) for row in rows]
    overlap = _KeyWordOverlap(getattr(index, "tfidf_model", None) or index.vectorizer, quote)
    scores = [np.array([overlap.score(row["text"][a:b]) for a, b in row_spans]) for row, row_spans in
              zip(rows, spans, strict=False)]
    kind = "key words"
    if getattr(index, "embeddings", None) is not None:
        try:
            from rag_core.models.loading import load_bi_encoder

            model = load_bi_encoder(index.embedding_model)
            chosen = [np.argsort(-row_scores, kind="stable")[:SENTENCES_PER_PASSAGE] for row_scores in scores]
            texts = [row["text"][row_spans[k][0]:row_spans[k][1]] for row, row_spans, picks in
                     zip(rows, spans, chosen, strict=False) for k in picks]
            # the statement rides in the same batch as the sentences: one pass through the model
            vectors = _sentence_vectors(model, index.embedding_model, [quote, *texts])
            meaning = vectors[1:] @ vectors[0]
            pos = 0
            for n, picks in enumerate(chosen):
                row_meaning = np.full(len(spans[n]), -np.inf, dtype=np.float32)
                row_meaning[picks] = meaning[pos:pos + len(picks)]
                pos += len(picks)
                scores[n] = row_meaning
            kind = "meaning"
        except (ImportError, OSError, ValueError, RuntimeError):
            pass
    from rag_core.text.chunking import page_at

    by_chunk = owners(document_texts(index.chunks))
    for row, row_spans, row_scores in zip(rows, spans, scores, strict=False):
        best = int(np.argmax(row_scores))
        a, b = row_spans[best]
        chunk = index.chunks[row["chunk_index"]]
        row.update(sentence_start=a, sentence_end=b, sentence=row["text"][a:b],
                   sentence_score=round(float(row_scores[best]), 4), sentence_score_kind=kind,
                   sentence_page=page_at(chunk, a), sentence_page_label=None)
        offset = chunk.get("start")
        doc = by_chunk.get(row["chunk_index"])
        if isinstance(offset, int) and not isinstance(offset, bool) and doc is not None:
            segments = doc.segments(offset + a, offset + b)  # the sentence on its page(s), for marking
            page, label = doc.page_at(offset + a)
            row.update(sentence_doc_start=offset + a, sentence_doc_end=offset + b, sentence_pages=segments,
                       sentence_page=page if page is not None else row["sentence_page"], sentence_page_label=label)
    return kind


def clear_cache() -> None:
    """Forget the cached sentence embeddings (a benchmark's cold start)."""
    with _sentence_lock:
        _sentence_cache.clear()
