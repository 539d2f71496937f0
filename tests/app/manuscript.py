"""A manuscript of 34 checkable statements built from the real text of the two small shared PDFs
(BERT, Devlin et al.; DPR, Karpukhin et al.), with the verdict each must get.

Quotes as a reader types them (compounds hyphenated where the PDF breaks them across lines or
joins them at extraction, a straight apostrophe for a curly one, a sentence that crosses a page),
misquotes with one or two words changed, paraphrases, fabricated claims, and quotes attributed to
the other paper. References [1] and [2] resolve to the two PDFs.
"""

from __future__ import annotations

BERT = "ml_bert_devlin2018_arxiv1810.04805.pdf"
DPR = "ml_dpr_karpukhin2020_arxiv2004.04906.pdf"

# (sentence as written in the manuscript, expected verdict, document, physical page, misattributed)
STATEMENTS: list[tuple[str, str, str | None, int | None, bool]] = [
    # real quotes, correctly cited or not cited: verbatim
    ('Devlin et al. (2019) introduce BERT, which "is designed to pre-train deep bidirectional representations '
     'from unlabeled text by jointly conditioning on both left and right context in all layers".',
     "verbatim", BERT, 1, False),
    ('As they put it, "the pre-trained BERT model can be fine-tuned with just one additional output layer to '
     'create state-of-the-art models for a wide range of tasks" [1].', "verbatim", BERT, 1, False),
    ('BERT "obtains new state-of-the-art results on eleven natural language processing tasks" [1].',
     "verbatim", BERT, 1, False),
    ('The fine-tuning approach "is trained on the downstream tasks by simply fine-tuning all pre-trained '
     'parameters" (Devlin et al., 2019).', "verbatim", BERT, 1, False),
    ('"Unlike left-to-right language model pre-training, the MLM objective enables the representation to fuse '
     'the left and the right context, which allows us to pre-train a deep bidirectional Transformer."',
     "verbatim", BERT, 2, False),
    ('The authors "demonstrate the importance of bidirectional pre-training for language representations" [1].',
     "verbatim", BERT, 2, False),
    ('BERT "uses masked language models to enable pre-trained deep bidirectional representations" [1].',
     "verbatim", BERT, 2, False),
    ('"Pre-trained word embeddings are an integral part of modern NLP systems, offering significant '
     'improvements over embeddings learned from scratch" (Devlin et al., 2019).', "verbatim", BERT, 2, False),
    ("\"BERT's model architecture is a multi-layer bidirectional Transformer encoder\" [1].",
     "verbatim", BERT, 3, False),
    ('BERT is conceptually simple and empirically powerful [1].', "verbatim", BERT, 1, False),
    ('Karpukhin et al. (2020) report that "our dense retriever outperforms a strong Lucene-BM25 system greatly by '
     '9%-19% absolute in terms of top-20 passage retrieval accuracy".', "verbatim", DPR, 1, False),
    ('They show that "retrieval can be practically implemented using dense representations alone, where '
     'embeddings are learned from a small number of questions and passages by a simple dual-encoder '
     'framework" [2].', "verbatim", DPR, 1, False),
    ('"Open-domain question answering relies on efficient passage retrieval to select candidate contexts" [2].',
     "verbatim", DPR, 1, False),
    ('DPR "not only outperforms BM25 by a large margin (65.2% vs. 42.9% in Top-5 accuracy)" [2].',
     "verbatim", DPR, 2, False),
    ('"FAISS is an extremely efficient, open-source library for similarity search and clustering of dense '
     'vectors" (Karpukhin et al., 2020).', "verbatim", DPR, 3, False),
    ('In-batch negatives are cheap: "This creates B training instances in each batch, where there are B-1 '
     'negative passages for each question."', "verbatim", DPR, 3, False),
    ('"However, building the FAISS index on 21-million vectors on a single server takes 8.5 hours." [2]',
     "verbatim", DPR, 7, False),
    # misquotes: near_verbatim
    ('Karpukhin et al. (2020) say their retriever beats "a strong Lucene-BM25 system greatly by 9%-19% absolute '
     'in terms of top-100 passage retrieval accuracy".', "near_verbatim", DPR, 1, False),
    ('"However, building the FAISS index on 21-million vectors on a single server takes 2.5 hours." [2]',
     "near_verbatim", DPR, 7, False),
    ('It works "for a wide range of tasks, such as question answering and language inference, without '
     'substantial task-specific architecture changes" [1].', "near_verbatim", BERT, 1, False),
    ('"Unlike right-to-left language model pre-training, the MLM objective enables the representation to fuse '
     'the left and the right context."', "near_verbatim", BERT, 2, False),
    ('"FAISS is an extremely efficient, closed-source library for similarity search and clustering of dense '
     'vectors" [2].', "near_verbatim", DPR, 3, False),
    ('BERT "obtains new state-of-the-art results on twelve natural language processing tasks" [1].',
     "near_verbatim", BERT, 1, False),
    ('"Pre-trained word embeddings are an integral part of modern NLP systems, offering modest improvements over '
     'embeddings learned from scratch" [1].', "near_verbatim", BERT, 2, False),
    # paraphrases: related
    ('BERT can be adapted to many tasks such as question answering and inference by adding only one output '
     'layer, with no large task-specific changes to the architecture [1].', "related", BERT, None, False),
    ('Indexing twenty-one million passage vectors with FAISS took about eight and a half hours on one '
     'server [2].', "related", DPR, None, False),
    ('Masking some input words and predicting them lets a Transformer use context from both sides [1].',
     "related", BERT, None, False),
    # fabricated: not_found
    ('Photosynthesis in desert plants doubles when they are exposed to jazz music [2].',
     "not_found", None, None, False),
    ('Marathon runners who drink coffee before a race finish twelve minutes faster on average '
     '(Devlin et al., 2019).', "not_found", None, None, False),
    ('Critics wrote that "the stock market crash of 1929 was caused by excessive speculation in railway '
     'bonds".', "not_found", None, None, False),
    ('Quantum gravity was solved by a committee of cats in 1850 [1].', "not_found", None, None, False),
    # real quotes attributed to the other paper: verbatim, misattributed
    ('Devlin et al. (2019) argue that "the dense, latent semantic encoding is complementary to sparse '
     'representations by design".', "verbatim", DPR, 1, True),
    ('"Language model pre-training has been shown to be effective for improving many natural language '
     'processing tasks" (Karpukhin et al., 2020).', "verbatim", BERT, 1, True),
    ('In their words, "Retrieval in open-domain QA is usually implemented using TF-IDF or BM25" [1].',
     "verbatim", DPR, 1, True),
]

REFERENCES = """References

[1] J. Devlin, M.-W. Chang, K. Lee, and K. Toutanova. 2019. BERT: Pre-training of deep bidirectional
transformers for language understanding. In NAACL.
[2] V. Karpukhin, B. Oguz, S. Min, P. Lewis, L. Wu, S. Edunov, D. Chen, and W. Yih. 2020. Dense passage
retrieval for open-domain question answering. In EMNLP.
"""


def manuscript_text() -> str:
    """The manuscript: paragraphs of four statements, then the reference list."""
    sentences = [s for s, *_ in STATEMENTS]
    paragraphs = [" ".join(sentences[i:i + 4]) for i in range(0, len(sentences), 4)]
    return "Related work\n\n" + "\n\n".join(paragraphs) + "\n\n" + REFERENCES


def expected_verdicts() -> list[str]:
    return [verdict for _, verdict, *_ in STATEMENTS]
