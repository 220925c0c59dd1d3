"""A search box whose suggestions can be chosen: a text input and its dropdown in one element.

Built as a Streamlit Components-v2 element with inline JavaScript (nothing from a CDN),
like ``streamlit-keyup`` — which reports the text as the person types but cannot own a
dropdown: choosing needs the list and the input in the same piece of browser code, so
arrow keys can move a highlight while the caret stays in the box.

What the browser reports is one state object, ``{"text", "submitted", "seq"}``:

- ``text`` — the box's text, debounced, as the person types;
- ``submitted`` / ``seq`` — the last search submitted (a suggestion clicked, or chosen
  with the arrow keys and Enter, or Enter on the typed text) and a counter that grows
  with each submission, so submitting the same query twice counts twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

_HTML = """
<div class="ta-box-root">
  <input id="input" class="ta-box" type="text" role="combobox" aria-expanded="false"
         aria-controls="list" aria-autocomplete="list" autocomplete="off" spellcheck="false" />
  <div id="list" class="ta-list" role="listbox"></div>
</div>
"""

_CSS = """
*, *::before, *::after { box-sizing: border-box; }
.ta-box-root { display: flex; flex-direction: column; width: 100%;
  /* Hindi suggestions: the served Devanagari face (app/fonts.py) after the theme's. */
  font-family: var(--st-font, sans-serif), "Noto Sans Devanagari";
  color: var(--st-text-color, inherit); }
.ta-box { width: 100%; padding: 10px 14px; font: inherit; font-size: 15px;
  color: inherit; background: var(--st-secondary-background-color, #f0f2f6);
  border: 1px solid rgba(127,127,127,.3); border-radius: 6px; outline: none; }
.ta-box:focus { border-color: var(--st-primary-color, #ff4b4b); }
.ta-list { border: 1px solid rgba(49,51,63,.18); border-radius: 10px; overflow: hidden;
  box-shadow: 0 4px 14px rgba(15,23,42,.07); margin: .45rem 0 .2rem 0; }
.ta-list:empty { display: none; }
.ta-item { display: flex; align-items: center; gap: .6rem; padding: .42rem .85rem;
  border-top: 1px solid rgba(49,51,63,.07); font-size: 1rem; cursor: pointer; }
.ta-item:first-child { border-top: none; }
.ta-item:hover { background: rgba(99,102,241,.06); }
.ta-item.ta-active { background: #eef2ff; }
.ta-icon { color: #9ca3af; font-size: .9rem; }
.ta-typed { color: #4b5563; white-space: pre-wrap; }
.ta-rest { font-weight: 650; color: #111827; white-space: pre-wrap; }
.ta-hot { margin-left: auto; font-size: .72rem; padding: .08rem .5rem;
  border-radius: 999px; background: #fff1e6; color: #c2410c; }
.ta-empty { color: #6b7280; padding: .6rem .85rem; font-size: .95rem; }
.ta-keys { color: #9ca3af; font-size: .75rem; padding: .25rem .85rem .35rem;
  border-top: 1px solid rgba(49,51,63,.07); }
"""

_JS = r"""
export default function({ parentElement, data, setStateValue }) {
  const input = parentElement.querySelector("#input");
  const list = parentElement.querySelector("#list");
  const el = parentElement;

  input.placeholder = data.placeholder ?? "";
  input.maxLength = data.max_chars > 0 ? data.max_chars : 524288;
  input.setAttribute("aria-label", data.label ?? "Search");
  el._debounce = data.debounce ?? 0;
  if (el._seq === undefined || (data.seq ?? 0) > el._seq) el._seq = data.seq ?? 0;
  el._submitted = data.submitted ?? "";

  // The text Python shows: once it echoes what we sent, the round trip is over.
  const pyText = data.text ?? "";
  // The box is in the page (and takes keystrokes) before this script first runs: text
  // typed in that gap is the person's, so it is kept and reported below, not overwritten.
  const early = !input._attached && input.value !== "" && input.value !== pyText;
  if (early) input._typing = true;
  if (pyText === input.value) {
    input._typing = false;
  } else if (!input._typing) {
    input.value = pyText;
  }

  const send = (text, submitted) => {
    if (submitted !== undefined) {
      el._seq += 1;
      el._submitted = submitted;
    }
    setStateValue("box", { text: text, submitted: el._submitted, seq: el._seq });
  };

  const items = data.items ?? [];
  const listKey = JSON.stringify([items, data.empty ?? ""]);
  if (list._listKey !== listKey) {
    list._listKey = listKey;
    el._active = -1;
    list.replaceChildren();
    items.forEach((it, i) => {
      const row = document.createElement("div");
      row.className = "ta-item";
      row.id = "ta-item-" + i;
      row.setAttribute("role", "option");
      row.setAttribute("title", it.s);
      row.dataset.index = String(i);
      const icon = document.createElement("span");
      icon.className = "ta-icon";
      icon.textContent = "⌕";
      const text = document.createElement("span");
      // Split typed/rest only between grapheme clusters: a Devanagari vowel sign cut
      // off from its consonant would be drawn on a dotted circle.
      let cut = it.typed ? it.typed.length : 0;
      if (cut > 0 && cut < it.s.length && typeof Intl.Segmenter === "function") {
        for (const g of new Intl.Segmenter().segment(it.s)) {
          if (g.index < cut && g.index + g.segment.length > cut) {
            cut = g.index + g.segment.length;
            break;
          }
        }
      }
      if (cut > 0) {
        const typed = document.createElement("span");
        typed.className = "ta-typed";
        typed.textContent = cut === it.typed.length ? it.typed : it.s.slice(0, cut);
        text.appendChild(typed);
      }
      const rest = document.createElement("span");
      rest.className = "ta-rest";
      rest.textContent = it.s.slice(cut);
      text.appendChild(rest);
      row.append(icon, text);
      if (it.hot || it.tag) {
        const hot = document.createElement("span");
        hot.className = "ta-hot";
        hot.textContent = it.tag || "trending";
        row.appendChild(hot);
      }
      list.appendChild(row);
    });
    if (items.length) {
      const keys = document.createElement("div");
      keys.className = "ta-keys";
      keys.textContent = "↑ ↓ to choose · Enter or a click to search";
      list.appendChild(keys);
    } else if (data.empty) {
      const empty = document.createElement("div");
      empty.className = "ta-empty";
      empty.textContent = data.empty;
      list.appendChild(empty);
    }
    input.setAttribute("aria-expanded", items.length ? "true" : "false");
    input.removeAttribute("aria-activedescendant");
  }
  el._items = items;

  const highlight = (i) => {
    el._active = i;
    list.querySelectorAll(".ta-item").forEach((row, j) => {
      row.classList.toggle("ta-active", j === i);
      row.setAttribute("aria-selected", j === i ? "true" : "false");
    });
    if (i >= 0) input.setAttribute("aria-activedescendant", "ta-item-" + i);
    else input.removeAttribute("aria-activedescendant");
  };

  const pick = (text) => {
    clearTimeout(el._timer);
    input.value = text;
    input._typing = true;
    send(text, text);
  };

  // Debounced: the text is reported once typing pauses for ``el._debounce`` ms.
  const typed = () => {
    input._typing = true;
    clearTimeout(el._timer);
    const go = () => send(input.value);
    if (el._debounce > 0) el._timer = setTimeout(go, el._debounce);
    else go();
  };

  // On the input itself: a box drawn afresh gets its listeners, whatever ran before.
  if (!input._attached) {
    input._attached = true;
    input.addEventListener("input", typed);
    input.addEventListener("keydown", (e) => {
      const n = el._items.length;
      if (e.key === "ArrowDown" && n) {
        e.preventDefault();
        highlight(el._active + 1 >= n ? 0 : el._active + 1);
      } else if (e.key === "ArrowUp" && n) {
        e.preventDefault();
        highlight(el._active <= 0 ? n - 1 : el._active - 1);
      } else if (e.key === "Escape") {
        highlight(-1);
      } else if (e.key === "Enter") {
        e.preventDefault();
        if (el._active >= 0 && el._active < n) pick(el._items[el._active].s);
        else if (input.value.trim()) pick(input.value);
      }
    });
    // mousedown keeps the caret in the box; the click chooses.
    list.addEventListener("mousedown", (e) => e.preventDefault());
    list.addEventListener("click", (e) => {
      const row = e.target.closest(".ta-item");
      if (row) pick(el._items[Number(row.dataset.index)].s);
    });
    if (early) typed();
  }
}
"""

_component = st.components.v2.component(
    "lookup_searchbox", html=_HTML, css=_CSS, js=_JS, isolate_styles=True
)


@dataclass(frozen=True)
class BoxState:
    """What the box reported: its text, and the last search submitted from it."""

    text: str
    submitted: str
    seq: int


def state_key(key: str) -> str:
    """Where the box keeps its state in ``st.session_state`` (tests set it there)."""
    return f"_searchbox_{key}"


def box_state(key: str) -> BoxState:
    """The box's last reported state (empty before the first keystroke)."""
    raw = st.session_state.get(state_key(key), {})
    box = raw.get("box") if isinstance(raw, dict) else None
    if not isinstance(box, dict):
        return BoxState("", "", 0)
    seq = box.get("seq")
    return BoxState(
        str(box.get("text") or ""),
        str(box.get("submitted") or ""),
        seq if isinstance(seq, int) else 0,
    )


def searchbox(
    key: str,
    items: list[dict[str, Any]],
    *,
    empty: str = "",
    placeholder: str = "",
    debounce: int = 0,
    max_chars: int = 0,
    label: str = "Search",
) -> BoxState:
    """Draw the box with ``items`` (``{"s", "typed", "hot", "tag"}``) as its dropdown; return
    its state. ``empty`` is what the list says when ``items`` is empty ("" hides it)."""
    now = box_state(key)
    _component(
        data={
            "text": now.text,
            "submitted": now.submitted,
            "seq": now.seq,
            "items": items,
            "empty": empty,
            "placeholder": placeholder,
            "debounce": debounce,
            "max_chars": max_chars,
            "label": label,
        },
        default={"box": {"text": now.text, "submitted": now.submitted, "seq": now.seq}},
        key=state_key(key),
        on_box_change=lambda: None,
    )
    return box_state(key)
