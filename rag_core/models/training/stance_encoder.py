"""Teaching the bundled bi-encoder to read a claim against its evidence (the stance reader).

The recipe, chosen on the project's dev splits (docs/citations.md):

* **Examples** (:func:`make_examples`): each claim against the sentences a check would hand
  the reader — its gold rationale with up to two distracting sentences of the same document
  (the ones sharing most words with the claim), in document order — labelled as the dataset
  labels the pair; single rationale sentences too (CLIMATE-FEVER labels each); and for
  ``nei`` the document's closest sentences outside the rationale.
* **Counterfactual claims** (:func:`negate_claim`): a supported claim turned around by one
  edit — a direction word swapped for its opposite (increases/decreases, better/worse,
  higher/lower, ...), or a negation put in or taken out after its auxiliary — is contradicted
  by the same evidence (with ``opposite_of_contradicted``, a contradicted claim negated, its
  logical opposite only, is supported: tried, worse on dev); the same edit of a claim the
  evidence does not address stays ``nei``, so a "not" alone never means "contradicts".
* **Low-rank updates** (:class:`LoRALinear`) of every linear layer of the six blocks, a
  classification head over the mean of the token states, classes balanced in the loss,
  batches of similar length, AdamW with a linear warm-up and decay.

Everything here runs on a CPU; :func:`train` writes its progress as it goes.
"""

from __future__ import annotations

import math
import random
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from rag_core.models.stance_encoder import CLASSES, LORA_TARGETS, MAX_LENGTH, mean_pool, stance_input
from rag_core.models.training.claims import ClaimDocument

__all__ = [
    "Example", "LoRALinear", "TrainConfig", "add_lora", "closest_sentences", "export_tensors", "finding_title",
    "make_examples", "negate_claim", "predict_documents", "select_evidence", "title_examples", "train",
]

_WORD = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOP = _words("""a an the of in on at to for from by with and or but is are was were be been being this that these
those it its as into than then there their they we our can could may might will would should has have had do does did
not no more less most least which who whom whose what when where how also such both either each other some any""")


def content_words(text: str) -> set[str]:
    """A text's lower-case content words (stop words left out; crude suffixes folded)."""
    out = set()
    for w in _WORD.findall(text.lower()):
        if w in _STOP or len(w) < 2:
            continue
        for suffix in ("ing", "ed", "es", "s"):
            if len(w) > len(suffix) + 3 and w.endswith(suffix):
                w = w[: -len(suffix)]
                break
        out.add(w)
    return out


def closest_sentences(claim: str, sentences: Sequence[str], *, exclude: Iterable[int] = (), k: int = 2) -> list[int]:
    """The indexes of the ``k`` sentences sharing most content words with ``claim`` (ties: document order)."""
    words = content_words(claim)
    skip = set(exclude)
    scored = [(-len(words & content_words(s)), i) for i, s in enumerate(sentences) if i not in skip]
    return [i for _, i in sorted(scored)[:k]]


def select_evidence(claim: str, sentences: Sequence[str], *, k: int = 3) -> list[int]:
    """The sentences a quick reading would hand the reader: the ``k`` closest by content words,
    in document order (the check itself picks by bi-encoder cosine and key words)."""
    return sorted(closest_sentences(claim, sentences, k=k))


# --------------------------------------------------------------------------- counterfactual claims

_SWAPS = {}
for _a, _b in (
    ("increase", "decrease"), ("increases", "decreases"), ("increased", "decreased"), ("increasing", "decreasing"),
    ("higher", "lower"), ("high", "low"), ("better", "worse"), ("improves", "worsens"), ("improved", "worsened"),
    ("improve", "worsen"), ("reduces", "increases"), ("reduced", "increased"), ("reduce", "increase"),
    ("reduction", "increase"), ("promotes", "inhibits"), ("promote", "inhibit"), ("promoted", "inhibited"),
    ("enhances", "impairs"), ("enhance", "impair"), ("enhanced", "impaired"), ("activates", "inhibits"),
    ("activate", "inhibit"), ("activated", "inhibited"), ("upregulates", "downregulates"),
    ("upregulated", "downregulated"), ("greater", "smaller"), ("protective", "harmful"), ("beneficial", "harmful"),
    ("effective", "ineffective"), ("safe", "unsafe"), ("likely", "unlikely"), ("positive", "negative"),
    ("positively", "negatively"), ("more", "less"), ("larger", "smaller"), ("longer", "shorter"),
    ("faster", "slower"), ("stronger", "weaker"), ("good", "poor"), ("poorer", "better"), ("shorter", "longer"),
    ("prevents", "causes"), ("rises", "falls"), ("elevated", "reduced"), ("lowers", "raises"), ("raises", "lowers"),
    ("decreases", "increases"), ("decreased", "increased"), ("decrease", "increase"), ("lower", "higher"),
    ("low", "high"), ("worse", "better"), ("less", "more"), ("inhibits", "promotes"), ("inhibit", "promote"),
    ("impairs", "enhances"), ("harmful", "protective"), ("unlikely", "likely"), ("negative", "positive"),
    ("smaller", "larger"), ("fewer", "more"), ("weaker", "stronger"), ("slower", "faster"),
    ("downregulates", "upregulates"), ("downregulated", "upregulated"), ("ineffective", "effective"),
    ("unsafe", "safe"), ("poor", "good"), ("benefit", "harm"), ("survival", "mortality"), ("mortality", "survival"),
):
    _SWAPS.setdefault(_a, _b)
_AUX = _words("is are was were can could will would may might should has have had does do did")
_NEGATIONS = _words("not no never none neither nor cannot without nothing nobody")
_SUBORDINATORS = _words("if when whenever although though while because since unless whether once after before")
# Verbs that state a finding, as a title or a claim writes them ("X inhibits Y", "A and B regulate C").
FINDING_VERBS = _words("""block regulate determine confer modulate inhibit promote increase reduce enhance prevent cause
mediate control require drive protect impair suppress activate improve predict limit trigger induce decrease contribute
underlie correlate lower raise restore disrupt facilitate affect attenuate accelerate delay alter maintain target
stimulate repress exacerbate ameliorate associate elevate shorten prolong extend protect reverse rescue""")


def _lemma(word: str) -> str | None:
    """The base form of a finding verb written in the third person ("inhibits" -> "inhibit"), or None."""
    for cut in ("es", "s"):
        if word.endswith(cut) and word[: -len(cut)] in FINDING_VERBS:
            return word[: -len(cut)]
    return None


def _cased(word: str, like: str) -> str:
    return word.capitalize() if like[:1].isupper() else word


def negate_claim(claim: str, rng: random.Random | None = None, *, negation_only: bool = False) -> str | None:
    """The claim turned around by one edit (a direction word swapped for its opposite, or a
    negation put in or taken out after the first auxiliary), or None when no edit applies.
    ``negation_only``: only the negation (its logical opposite, where a swapped word may be a
    third claim: "no effect" contradicts "increases" and "decreases" alike)."""
    rng = rng or random.Random(0)
    tokens = claim.split(" ")
    options = []
    leading_clause = bool(tokens) and tokens[0].lower() in _SUBORDINATORS  # "If ..., then ...": whose verb?
    for i, token in enumerate(tokens):
        core = token.strip(".,;:()\"'").lower()
        if core in _SWAPS and not negation_only \
                and not (core == "more" and i + 1 < len(tokens) and tokens[i + 1].lower() == "than"):
            options.append(("swap", i, core))
        if core in _AUX:
            nxt = tokens[i + 1].lower().strip(".,;:") if i + 1 < len(tokens) else ""
            # the first auxiliary carries the statement, unless a clause ("If ..., ") comes before it
            # or another negation would make a double one ("had no correlation")
            others = [t for j, t in enumerate(tokens)
                      if t.lower().strip(".,;:()") in _NEGATIONS and not (j == i + 1 and nxt == "not")]
            if "," not in " ".join(tokens[:i]) and not token.endswith(",") and not others and not leading_clause:
                options.append(("drop" if nxt == "not" else "insert", i, core))
            break
        if core.endswith("n't"):
            break
        finding_verb = core in FINDING_VERBS or _lemma(core)
        if i > 0 and finding_verb and not leading_clause and "," not in " ".join(tokens[:i]) \
                and not any(t.lower().strip(".,;:()") in _NEGATIONS for t in tokens):
            options.append(("verb", i, core))  # "X inhibits Y" -> "X does not inhibit Y"
            break
    if not options:
        return None
    kind, i, core = rng.choice(options)
    out = list(tokens)
    if kind == "swap":
        token = tokens[i]
        start = token.lower().find(core)
        out[i] = token[:start] + _cased(_SWAPS[core], token[start:]) + token[start + len(core):]
    elif kind == "insert":
        out.insert(i + 1, "not")
    elif kind == "verb":
        lemma = _lemma(core)
        rest = tokens[i][tokens[i].lower().find(core) + len(core):]
        out[i:i + 1] = ["does" if lemma else "do", "not", (lemma or core) + rest]
    else:
        del out[i + 1]
    return " ".join(out)


# --------------------------------------------------------------------------- examples


@dataclass(frozen=True)
class Example:
    """One (claim, evidence) pair and its label; ``origin`` says how it was made."""

    claim: str
    evidence: str
    label: str
    origin: str


def make_examples(docs: Iterable[ClaimDocument], *, seed: int = 0, counterfactual: bool = True,
                  singles: bool = True, opposite_of_contradicted: bool = False) -> list[Example]:
    """Training pairs from labelled claim-document rows (see the module's docstring)."""
    out: list[Example] = []
    for doc in docs:
        rng = random.Random(f"{seed}:{doc.dataset}:{doc.claim_id}:{doc.doc_id}")
        sentences = list(doc.sentences)
        if not sentences:
            continue
        rationale = [i for i in doc.rationale if i < len(sentences)]
        made: list[Example] = []
        if doc.sentence_labels is not None:  # each sentence labelled (CLIMATE-FEVER)
            for i, label in enumerate(doc.sentence_labels):
                if i < len(sentences):
                    made.append(Example(doc.claim, sentences[i], label, "sentence"))
            if doc.label in ("support", "contradict") and rationale:
                made.append(Example(doc.claim, stance_input([sentences[i] for i in rationale]), doc.label, "set"))
        elif doc.label in ("support", "contradict") and rationale:
            distract = closest_sentences(doc.claim, sentences, exclude=rationale, k=rng.randint(0, 2))
            chosen = sorted(set(rationale) | set(distract))
            made.append(Example(doc.claim, stance_input([sentences[i] for i in chosen]), doc.label, "set"))
            if singles and len(rationale) > 1:
                i = rng.choice(rationale)
                made.append(Example(doc.claim, sentences[i], doc.label, "single"))
            others = closest_sentences(doc.claim, sentences, exclude=rationale, k=2)
            if others and doc.dataset in ("scifact", "checkcovid") and rng.random() < 0.5:
                made.append(Example(doc.claim, stance_input([sentences[i] for i in sorted(others)]), "nei", "other"))
        elif doc.label == "nei":
            chosen = select_evidence(doc.claim, sentences, k=rng.randint(1, 3))
            made.append(Example(doc.claim, stance_input([sentences[i] for i in chosen]), "nei", "set"))
        out.extend(made)
        if counterfactual:
            for ex in made:
                if ex.origin not in ("set", "sentence"):
                    continue
                if ex.label == "contradict":  # the logical opposite of a contradicted claim is supported
                    if not opposite_of_contradicted:
                        continue
                    turned = negate_claim(ex.claim, rng, negation_only=True)
                else:
                    turned = negate_claim(ex.claim, rng)
                if turned and turned != ex.claim:
                    label = {"support": "contradict", "contradict": "support", "nei": "nei"}[ex.label]
                    out.append(Example(turned, ex.evidence, label, "counterfactual"))
    return out


# --------------------------------------------------------------------------- claims made from titles


def finding_title(title: str) -> str | None:
    """A paper's title that states a finding ("An IL-13 inhibitor blocks hepatic fibrosis"), as a
    claim (its final full stop dropped), or None (a topic, a question, a title with a subtitle)."""
    title = " ".join(title.split()).rstrip(".")
    words = title.split()
    if len(words) < 5 or title.endswith("?") or ":" in title:
        return None
    for word in words[1:]:
        core = word.strip(",;()").lower()
        if core in _AUX - {"has", "have", "had", "does", "do", "did"} or core in FINDING_VERBS or _lemma(core):
            return title
    return None


def title_examples(abstracts: Sequence[tuple[str, str, Sequence[str]]], *, seed: int = 0, k: int = 3,
                   exclude: Iterable[str] = ()) -> list[Example]:
    """Pairs made from a corpus's own text, no labels needed: each abstract whose title states a
    finding is taken to support that title (its ``k`` sentences sharing most words with it, in
    document order), and to contradict the title negated; another abstract's closest sentences
    (the one sharing most words among 30 drawn) say nothing of it. ``abstracts``: (id, title,
    sentences); ``exclude``: ids left out (abstracts a dev split cites)."""
    skip = set(exclude)
    pool = [a for a in abstracts if a[2] and a[0] not in skip]
    out = []
    for doc_id, title, sentences in pool:
        claim = finding_title(title)
        if claim is None:
            continue
        rng = random.Random(f"{seed}:title:{doc_id}")
        evidence = stance_input([sentences[i] for i in select_evidence(claim, sentences, k=k)])
        out.append(Example(claim, evidence, "support", "title"))
        turned = negate_claim(claim, rng, negation_only=rng.random() < 0.5)
        if turned and turned != claim:
            out.append(Example(turned, evidence, "contradict", "title"))
        words = content_words(claim)
        others = [pool[rng.randrange(len(pool))] for _ in range(30)]
        other = max((o for o in others if o[0] != doc_id),
                    key=lambda o: len(words & content_words(" ".join(o[2]))), default=None)
        if other is not None:
            out.append(Example(claim, stance_input([other[2][i] for i in select_evidence(claim, other[2], k=k)]),
                               "nei", "title"))
    return out


# --------------------------------------------------------------------------- the model


def _lora_class():
    import torch

    class LoRALinear(torch.nn.Module):
        """A frozen linear layer plus a trained low-rank update ``B @ A * alpha / rank``."""

        def __init__(self, base: torch.nn.Linear, rank: int, alpha: float, dropout: float = 0.05):
            super().__init__()
            self.base = base
            for p in self.base.parameters():
                p.requires_grad = False
            self.rank, self.scaling = rank, alpha / rank
            self.lora_A = torch.nn.Parameter(torch.empty(rank, base.in_features))
            self.lora_B = torch.nn.Parameter(torch.zeros(base.out_features, rank))
            torch.nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
            self.dropout = torch.nn.Dropout(dropout)

        def forward(self, x):
            return self.base(x) + (self.dropout(x) @ self.lora_A.T @ self.lora_B.T) * self.scaling

    return LoRALinear


LoRALinear = None  # set on first use (torch imported lazily)


def add_lora(encoder, *, rank: int, alpha: float, dropout: float = 0.05) -> dict:
    """Replace every targeted linear layer of ``encoder`` by a LoRA wrapper; the wrappers by name."""
    global LoRALinear
    LoRALinear = LoRALinear or _lora_class()
    for p in encoder.parameters():
        p.requires_grad = False
    wrapped = {}
    for name, _module in list(encoder.named_modules()):
        for target in LORA_TARGETS:
            if name.endswith(target) and ".layer." in f".{name}":
                parent_name, attr = name.rsplit(".", 1)
                parent = encoder.get_submodule(parent_name)
                if isinstance(getattr(parent, attr), LoRALinear):
                    continue
                layer = LoRALinear(getattr(parent, attr), rank, alpha, dropout)
                setattr(parent, attr, layer)
                wrapped[name] = layer
    return wrapped


def export_tensors(wrapped: dict, head) -> dict:
    """The learned tensors, named as :func:`rag_core.models.stance_encoder.merge_lora` reads them."""
    tensors = {}
    for name, layer in wrapped.items():
        tensors[f"lora.{name}.A"] = layer.lora_A.detach().clone().contiguous()
        tensors[f"lora.{name}.B"] = layer.lora_B.detach().clone().contiguous()
    tensors["head.weight"] = head.weight.detach().clone().contiguous()
    tensors["head.bias"] = head.bias.detach().clone().contiguous()
    return tensors


@dataclass
class TrainConfig:
    """The settings of one training run (they go into the card)."""

    epochs: float = 3.0
    batch_size: int = 16
    learning_rate: float = 5e-4
    head_learning_rate: float = 1e-3
    weight_decay: float = 0.01
    warmup_share: float = 0.06
    lora_rank: int = 16
    lora_alpha: float = 32.0
    lora_dropout: float = 0.05
    dropout: float = 0.1
    max_length: int = MAX_LENGTH
    seed: int = 0
    threads: int | None = None
    balanced: bool = True
    extra: dict = field(default_factory=dict)


def _batches(lengths: Sequence[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Index batches of similar length, in a random order (a pool of 50 batches sorted at a time)."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    pool = batch_size * 50
    batches = []
    for start in range(0, len(order), pool):
        chunk = sorted(order[start:start + pool], key=lambda i: lengths[i])
        batches.extend(chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def train(examples: Sequence[Example], config: TrainConfig, *, location: str | None = None,
          progress: Callable[[str], None] = print, evaluate: Callable[[object], None] | None = None,
          evaluate_every: int = 0):
    """Train a stance reader on ``examples``; returns ``(tokenizer, encoder, head, wrapped, history)``
    with the LoRA layers still unmerged (``export_tensors`` gives what is stored)."""
    import torch

    from rag_core.models.stance_encoder import build_model

    torch.manual_seed(config.seed)
    random.seed(config.seed)
    np.random.seed(config.seed)
    if config.threads:
        torch.set_num_threads(config.threads)
    tokenizer, encoder, head = build_model(location)
    wrapped = add_lora(encoder, rank=config.lora_rank, alpha=config.lora_alpha, dropout=config.lora_dropout)
    labels = np.array([CLASSES.index(e.label) for e in examples])
    counts = np.bincount(labels, minlength=len(CLASSES)).astype(np.float64)
    weights = (counts.sum() / (len(CLASSES) * np.maximum(counts, 1))) if config.balanced else np.ones(len(CLASSES))
    loss_fn = torch.nn.CrossEntropyLoss(weight=torch.tensor(weights, dtype=torch.float32))
    dropout = torch.nn.Dropout(config.dropout)
    lora_params = [p for layer in wrapped.values() for p in (layer.lora_A, layer.lora_B)]
    optimiser = torch.optim.AdamW([
        {"params": lora_params, "lr": config.learning_rate},
        {"params": list(head.parameters()), "lr": config.head_learning_rate},
    ], weight_decay=config.weight_decay)
    rng = random.Random(config.seed)
    lengths = [len(e.claim) + len(e.evidence) for e in examples]
    per_epoch = math.ceil(len(examples) / config.batch_size)
    total = max(1, round(per_epoch * config.epochs))
    warmup = max(1, int(total * config.warmup_share))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min((s + 1) / warmup, max(0.0, (total - s) / max(1, total - warmup))))
    history = []
    step, seen, start, running = 0, 0, time.time(), []
    encoder.train()
    head.train()
    progress(f"training on {len(examples)} pairs ({dict(zip(CLASSES, counts.astype(int).tolist(), strict=True))}), "
             f"{total} steps of {config.batch_size}")
    while step < total:
        for batch in _batches(lengths, config.batch_size, rng):
            if step >= total:
                break
            rows = [examples[i] for i in batch]
            enc = tokenizer([r.claim for r in rows], [r.evidence for r in rows], truncation="only_second",
                            max_length=config.max_length, padding=True, return_tensors="pt")
            hidden = encoder(**enc).last_hidden_state
            logits = head(dropout(mean_pool(hidden, enc["attention_mask"])))
            loss = loss_fn(logits, torch.tensor(labels[batch], dtype=torch.long))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(lora_params + list(head.parameters()), 1.0)
            optimiser.step()
            scheduler.step()
            optimiser.zero_grad(set_to_none=True)
            step += 1
            seen += len(batch)
            running.append(float(loss.detach()))
            if step % 50 == 0 or step == total:
                took = time.time() - start
                left = (total - step) * took / step / 60
                progress(f"step {step}/{total}  epoch {seen / len(examples):.2f}  loss {np.mean(running):.4f}  "
                         f"{seen / took:.1f} pairs/s  {took / 60:.1f} min, about {left:.1f} min left")
                history.append({"step": step, "loss": round(float(np.mean(running)), 4),
                                "minutes": round(took / 60, 2)})
                running = []
            if evaluate is not None and evaluate_every and step % evaluate_every == 0 and step < total:
                encoder.eval()
                head.eval()
                evaluate((tokenizer, encoder, head))
                encoder.train()
                head.train()
    encoder.eval()
    head.eval()
    return tokenizer, encoder, head, wrapped, history


def predict_documents(model, docs: Sequence[ClaimDocument], *, k: int = 3,
                      pick: Callable[[ClaimDocument], list[int]] | None = None) -> np.ndarray:
    """Probabilities (support, contradict, nei) of each claim against its document's chosen
    sentences (``pick``, default :func:`select_evidence`). ``model``: a StanceEncoder."""
    claims, evidence = [], []
    for doc in docs:
        chosen = pick(doc) if pick else select_evidence(doc.claim, doc.sentences, k=k)
        claims.append(doc.claim)
        evidence.append(stance_input([doc.sentences[i] for i in chosen]))
    return model.probabilities(claims, evidence)
