"""What the Study page's tabs share: the learner, the progress store, answering one item.

The page reads and writes progress through :class:`lookup.study.progress.ProgressStore`
in the data directory; the learner is a name kept in the URL (``?learner=…``) so a
reload keeps it. Answering a number (an estimate or a prediction) and showing the
feedback — verdict, the computed or measured figure, the formula chain, the source
section, where to see it live — is the same in a session and in a mock interview.
"""

from __future__ import annotations

from typing import Any

# Imported here, whole, before any chart or table: plotly and st.dataframe import pandas
# lazily, and two script threads doing that at once can see it half-initialised.
import pandas  # noqa: F401
import plotly.graph_objects  # noqa: F401
import streamlit as st
from common import data_dir
from navigation import PAGES

from lookup.capacity.units import format_quantity
from lookup.study.answers import AnswerError
from lookup.study.bank import SYSTEMS, Item
from lookup.study.progress import ProgressStore, Review, check_learner, progress_in

#: The key of the learner's name box; also the URL query parameter that remembers it.
LEARNER_KEY = "learner"

VERDICT_BADGE = {
    "exact": ":green-badge[:material/check_circle: Exact]",
    "close": ":orange-badge[:material/change_history: Close]",
    "off": ":red-badge[:material/cancel: Off]",
}
GRADES = ("again", "hard", "good", "easy")


@st.cache_resource(show_spinner=False)
def _store_at(path: str) -> ProgressStore:
    return progress_in(path)


def store() -> ProgressStore:
    """The progress store of the dashboard's data directory (one per process)."""
    return _store_at(str(data_dir()))


def learner() -> str | None:
    """The learner's name from the box (and URL), or None when there is none or it is bad."""
    raw = st.session_state.get(LEARNER_KEY) or ""
    try:
        return check_learner(raw)
    except ValueError:
        return None


def learner_problem() -> str | None:
    """What is wrong with the typed name, if anything (None when it is fine)."""
    raw = st.session_state.get(LEARNER_KEY) or ""
    try:
        check_learner(raw)
    except ValueError as exc:
        return str(exc)
    return None


def md_escape(text: str) -> str:
    """``text`` safe for st.markdown: no LaTeX from ``$``, no stray emphasis or tags."""
    for ch in ("\\", "$", "*", "_", "`", "<", "[", "]", "~"):
        text = text.replace(ch, "\\" + ch)
    return text


def item_badges(item: Item, variant: int, reason: str | None = None) -> str:
    """One line naming the item's system, kind, level (and why it was chosen)."""
    parts = [
        f":blue-badge[{SYSTEMS.get(item.system, item.system)}]",
        f":violet-badge[{item.kind}]",
        f":gray-badge[{item.level}]",
    ]
    if reason == "due":
        parts.append(":orange-badge[:material/schedule: due]")
    return " ".join(parts)


def item_caption(item: Item, variant: int) -> str:
    """The item's id and variant, as the CLI names them (``lookup study show ID``)."""
    return f"Item `{item.id}` · variant {variant} · topic {item.topic}"


def show_source(item: Item) -> None:
    """Where the facts come from, and where to see them live (a page or a notebook)."""
    st.caption(
        f":material/menu_book: From the design notes (text {item.source.file}), section "
        f"“{md_escape(item.source.section)}”."
    )
    pages = {spec.url_path: spec for spec in PAGES}
    for link in item.see:
        target, _, fragment = link.partition("#")
        kind, _, name = target.partition(":")
        where = f" (section “{md_escape(fragment)}”)" if fragment else ""
        if kind == "page" and name in pages:
            spec = pages[name]
            st.page_link(
                spec.script,
                label=f"See it live on the {spec.title} page{where}",
                icon=spec.icon,
            )
        elif kind == "page":
            st.markdown(f":material/open_in_new: [See it live on /{name}](/{name}){where}")
        else:
            st.markdown(
                f":material/book_2: Work through it in the notebook `notebooks/{name}.ipynb`{where}"
            )


def number_feedback(item: Item, result: dict[str, Any]) -> None:
    """The verdict on a number: exact/close/off, the real figure and the chain behind it."""
    figure = "The planner computes" if item.kind == "estimate" else "The experiment measured"
    if item.checker and item.checker.function:
        figure = "The formula gives"
    said = format_quantity(float(result["answer"]), str(result["unit"]))
    ratio = result.get("ratio")
    apart = (
        (f" — {ratio:.2f}× apart" if ratio < 10 else f" — {format_quantity(ratio, 'count')}× apart")
        if isinstance(ratio, (int, float)) and ratio > 1.0
        else ""
    )
    with st.container(key="study-verdict", border=True):
        st.markdown(
            f"{VERDICT_BADGE[result['verdict']]} You said **{md_escape(said)}**. "
            f"{figure} **{md_escape(str(result['expectedText']))}**{apart}."
        )
        st.caption(
            "Exact is within 1.25× of the real figure, close within 3×; an estimate is "
            "judged by ratio, not by its last digit."
        )
        chain = result.get("chain") or []
        if chain:
            st.markdown("**How it is worked out**")
            st.markdown("\n".join(f"1. {md_escape(line)}" for line in chain))
        details = result.get("details") or {}
        if details:
            rows = [{"figure": str(k), "value": _plain(v)} for k, v in details.items()]
            st.dataframe(rows, hide_index=True)
        show_source(item)


def _plain(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}"
    return str(value)


def measured_for(item: Item, variant: int) -> Any:
    """A predict item's measurement, run once per item and variant in this session."""
    from lookup.study.checking import compute

    key = f"study-measured-{item.id}-{variant}"
    if key not in st.session_state:
        with st.spinner(f"Running the real experiment for {item.id}…", show_time=True):
            st.session_state[key] = compute(item, variant)
    return st.session_state[key]


def judge_number(item: Item, text: str, variant: int) -> tuple[dict[str, Any] | None, str | None]:
    """Judge a number typed for an estimate or predict item: (result, None) or (None, message).

    A predict item's experiment runs (with a spinner) only once the answer is not empty.
    """
    from lookup.study.judge import answer_item

    try:
        if not str(text or "").strip():
            raise AnswerError("the answer is empty; type a number such as 3500, 3.5k or 12 GB")
        measured = measured_for(item, variant) if item.kind == "predict" else None
        return answer_item(item, text, variant, measured=measured), None
    except AnswerError as exc:
        return None, str(exc)


def record(
    item: Item,
    variant: int,
    grade: str,
    *,
    verdict: str | None = None,
    answer: str | None = None,
    expected: str | None = None,
) -> None:
    """Record one answered item for the learner (a review and its FSRS card)."""
    name = learner()
    if name is None:
        return
    store().record(
        name,
        Review(
            item.id,
            item.kind,
            item.system,
            item.topic,
            item.level,
            grade,
            verdict=verdict,
            variant=variant,
            answer=answer,
            expected=expected,
        ),
    )


def number_question(item: Item, variant: int, key: str) -> dict[str, Any] | None:
    """A number box with a Check button; the judged result once an answer passes.

    The result is kept in session state under ``key`` (so it survives reruns) and recorded
    as a review the first time; a bad answer shows the parser's message instead.
    """
    done_key = f"{key}-result"
    result = st.session_state.get(done_key)
    if result is None:
        slot = st.empty()
        with slot.container(), st.form(key=f"{key}-form", border=False):
            text = st.text_input(
                "Your answer (units welcome: 3.5k/s, 12 GB, 1e9, 40 ms)",
                key=f"{key}-text",
                placeholder="a number, with a unit if it has one",
            )
            checked = st.form_submit_button(
                "Check" if item.kind == "estimate" else "Check against the real run",
                key=f"{key}-check",
                type="primary",
                icon=":material/fact_check:",
            )
        if checked:
            result, problem = judge_number(item, text, variant)
            if problem:
                st.error(problem, icon=":material/error:")
            elif result is not None:
                st.session_state[done_key] = result
                record(
                    item,
                    variant,
                    result["grade"],
                    verdict=result["verdict"],
                    answer=text,
                    expected=str(result["expectedText"]),
                )
                slot.empty()  # the answered question keeps no form
    if result is not None:
        number_feedback(item, result)
    return result


def check_name_box() -> None:
    """The learner's name box, bound to the URL so a reload keeps it."""
    st.text_input(
        "Your name (no account; progress is kept per name)",
        key=LEARNER_KEY,
        bind="query-params",
        max_chars=40,
        placeholder="e.g. Ada",
    )
    problem = learner_problem()
    if problem and st.session_state.get(LEARNER_KEY):
        st.error(problem, icon=":material/error:")
