"""A ranked list drawn as cards, for reading several lists side by side: each card is one row, its
figures on the first line (rank, grade, score, cosine), then the title chip, the passage wrapped at
whole words, and its provenance (where the other lists and stages put it) in small type. A click
(or Enter) on a card opens it.

The cards are one ``st.components.v2`` element per list: its script builds them from the data with
``textContent`` only (document text never becomes HTML), the query's words arriving marked with
:data:`~rag_core.output.passages.MARK_OPEN` / :data:`~rag_core.output.passages.MARK_CLOSE`.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from rag_core.output.passages import MARK_CLOSE, MARK_OPEN

CARD_LINES = 5  # lines of passage a card shows (a click opens it whole)
CARD_CHARS = 380  # a card's passage (five lines of about 60-80 characters)
CARDS_HEIGHT = 700  # px: a list of cards scrolls inside this height
MOVE_MARKERS = {"up": "▲", "down": "▼", "new": "★", "same": "="}

CSS = f"""
.rc-cards {{display: flex; flex-direction: column; gap: 6px; overflow-y: auto; padding: 1px 3px 1px 1px;
  scrollbar-width: thin;}}
.rc-card {{border: 1px solid rgba(49, 51, 63, 0.18); border-radius: 0.5rem; padding: 5px 8px 6px;
  cursor: pointer; background: rgba(127, 127, 127, 0.03);}}
.rc-card:hover {{border-color: rgba(255, 75, 75, 0.6); background: rgba(127, 127, 127, 0.07);}}
.rc-card:focus-visible {{outline: 2px solid rgb(255, 75, 75); outline-offset: 1px;}}
.rc-figs {{display: flex; flex-wrap: wrap; align-items: baseline; gap: 0 12px; font-size: 0.8rem;
  color: rgba(49, 51, 63, 0.7); font-variant-numeric: tabular-nums;}}
.rc-figs b {{color: rgb(49, 51, 63); font-weight: 600;}}
.rc-figs .rc-rank {{font-size: 0.9rem; color: rgb(49, 51, 63); font-weight: 700; min-width: 1.6em;}}
.rc-figs .rc-move {{margin-left: auto; font-weight: 600;}}
.rc-move-up {{color: #1a7f37;}} .rc-move-down {{color: #b42318;}} .rc-move-new {{color: #8a5a00;}}
.rc-move-same {{color: rgba(49, 51, 63, 0.6);}} .rc-move-out {{color: #b42318;}}
.rc-chip {{font-size: 0.8rem; font-weight: 600; color: rgb(49, 51, 63); margin-top: 1px;}}
.rc-text {{font-size: 0.85rem; line-height: 1.42; color: rgb(49, 51, 63); overflow-wrap: break-word;
  display: -webkit-box; -webkit-box-orient: vertical; -webkit-line-clamp: {CARD_LINES}; overflow: hidden;}}
.rc-text mark {{background: #fff1a8; color: inherit; padding: 0 1px; border-radius: 2px;}}
.rc-details {{font-size: 0.75rem; line-height: 1.35; color: rgba(49, 51, 63, 0.68); margin-top: 2px;}}
.rc-cards-empty {{font-size: 0.875rem; color: rgba(49, 51, 63, 0.65);}}
"""

JS = f"""
const OPEN = {MARK_OPEN!r}, CLOSE = {MARK_CLOSE!r};

function add(parent, tag, cls, text) {{
  const el = document.createElement(tag);
  if (cls) el.className = cls;
  if (text !== undefined && text !== null) el.textContent = String(text);
  parent.appendChild(el);
  return el;
}}

function marked(parent, text) {{  // text nodes and <mark>s: never HTML
  let rest = String(text || "");
  while (rest.length) {{
    const a = rest.indexOf(OPEN);
    const b = a < 0 ? -1 : rest.indexOf(CLOSE, a + 1);
    if (a < 0 || b < 0) {{ parent.appendChild(document.createTextNode(rest)); break; }}
    if (a) parent.appendChild(document.createTextNode(rest.slice(0, a)));
    add(parent, "mark", null, rest.slice(a + 1, b));
    rest = rest.slice(b + 1);
  }}
}}

export default function (component) {{
  const {{ data, parentElement, setTriggerValue }} = component;
  let root = parentElement.querySelector(":scope > .rc-cards");
  if (!root) root = add(parentElement, "div", "rc-cards");
  root.replaceChildren();
  root.setAttribute("role", "list");
  root.setAttribute("aria-label", data.label || "");
  root.dataset.list = data.kind || "";
  root.style.maxHeight = data.max_height ? data.max_height + "px" : "";
  if (!data.cards || !data.cards.length) {{
    add(root, "div", "rc-cards-empty", data.empty || "");
    return;
  }}
  data.cards.forEach((card, i) => {{
    const el = add(root, "div", "rc-card");
    el.setAttribute("role", "listitem");
    el.tabIndex = 0;
    el.dataset.rank = card.rank;
    if (card.hint) el.title = card.hint;
    const figs = add(el, "div", "rc-figs");
    add(figs, "span", "rc-rank", "#" + card.rank);
    (card.figures || []).forEach(([name, value, help]) => {{
      const f = add(figs, "span", "rc-fig", name + " ");
      f.dataset.name = name;
      if (help) f.title = help;
      add(f, "b", null, value);
    }});
    if (card.move) {{
      const m = add(figs, "span", "rc-move rc-move-" + (card.move_kind || "same"), card.move);
      if (card.move_help) m.title = card.move_help;
    }}
    add(el, "div", "rc-chip", card.chip);
    marked(add(el, "div", "rc-text"), card.text);
    if (card.details && card.details.length) add(el, "div", "rc-details", card.details.join(" · "));
    if (data.clickable !== false) {{
      const open = () => setTriggerValue("open", i);
      el.addEventListener("click", open);
      el.addEventListener("keydown", (e) => {{
        if (e.key === "Enter" || e.key === " ") {{ e.preventDefault(); open(); }}
      }});
    }}
  }});
}}
"""

_cards = st.components.v2.component("rag_core_cards", css=CSS, js=JS, isolate_styles=False)


def card_list(cards: list[dict], *, kind: str, label: str, key: str, max_height: int | None = None,
              on_open: Callable[[int], None] | None = None, empty: str = "") -> None:
    """Draw ``cards`` (dicts: ``rank``, ``figures`` [(name, value, help)], ``move``, ``move_kind``,
    ``chip``, ``text``, ``details``; all plain text) as one list; ``on_open(i)`` runs when card ``i``
    is clicked (a rerun of the fragment it is in)."""

    def opened() -> None:
        state = st.session_state.get(key)
        i = getattr(state, "open", None) if state is not None else None
        if i is None and isinstance(state, dict):
            i = state.get("open")
        if on_open is not None and isinstance(i, int) and 0 <= i < len(cards):
            on_open(i)

    with st.container(key=f"cards_{key}"):
        _cards(key=key, data={"cards": cards, "kind": kind, "label": label, "max_height": max_height,
                              "empty": empty, "clickable": on_open is not None},
               on_open_change=opened, width="stretch", height="content")
