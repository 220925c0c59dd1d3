"""The Study page's Session tab: plan a session, then one question at a time with feedback.

A session is :func:`lookup.study.session.plan_session`'s list of entries (due cards first,
then new items from the weakest topics, at most one drill). Each question is answered by
its kind: a number for estimates and predictions (checked by the planner or the real
experiment), free text for concepts and flashcards (shown against the key points, then
self-graded), a choice and a reason for drills (then the real drill runs). Every answered
item is recorded in the learner's progress.
"""

from __future__ import annotations

from typing import Any

import streamlit as st
from study_common import (
    GRADES,
    VERDICT_BADGE,
    item_badges,
    item_caption,
    learner,
    md_escape,
    number_question,
    record,
    show_source,
    store,
)

from lookup.study.answers import AnswerError
from lookup.study.bank import LEVELS, SYSTEMS, Item, bank, get_item
from lookup.study.checking import prompt_for

#: Session state: the planned entries, the position, and one row per question answered.
ENTRIES = "study-entries"
POS = "study-pos"
LOG = "study-log"

GRADE_HELP = {
    "again": "I did not know it: show it again soon",
    "hard": "I got part of it, with effort",
    "good": "I knew it",
    "easy": "I knew it at once: push it far out",
}


def _systems_with_items() -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in bank().values():
        counts[item.system] = counts.get(item.system, 0) + 1
    return {s: counts[s] for s in SYSTEMS if counts.get(s)}


def _start(name: str) -> None:
    """Plan a session from the setup widgets and put it in session state."""
    from lookup.study.session import plan_session

    systems = st.session_state.get("study-systems") or None
    levels = st.session_state.get("study-levels") or None
    try:
        entries = plan_session(
            store(),
            name,
            systems=systems,
            levels=levels,
            minutes=float(st.session_state.get("study-minutes", 15)),
            drills=bool(st.session_state.get("study-drill", True)),
        )
    except ValueError as exc:
        st.session_state["study-plan-problem"] = str(exc)
        return
    st.session_state.pop("study-plan-problem", None)
    _clear_answers()
    st.session_state[ENTRIES] = [e.as_json() for e in entries]
    st.session_state[POS] = 0
    st.session_state[LOG] = []


def _clear_answers() -> None:
    for key in list(st.session_state):
        if isinstance(key, str) and key.startswith(("study-q-", "study-measured-")):
            del st.session_state[key]


def _end() -> None:
    _clear_answers()
    for key in (ENTRIES, POS, LOG):
        st.session_state.pop(key, None)


def _advance(row: dict[str, Any] | None) -> None:
    """Go to the next question, logging ``row`` (None: the question was skipped)."""
    entries = st.session_state.get(ENTRIES) or []
    pos = int(st.session_state.get(POS, 0))
    if pos < len(entries):
        entry = entries[pos]
        st.session_state[LOG].append(
            row
            or {
                "question": pos + 1,
                "item": entry["id"],
                "kind": get_item(entry["id"]).kind,
                "result": "skipped",
            }
        )
    st.session_state[POS] = pos + 1


def _setup(name: str | None) -> None:
    systems = _systems_with_items()
    st.markdown(
        "A session mixes cards that are **due** (FSRS decides when each comes back) with new "
        "items from your weakest topics: estimates checked by the capacity planner, "
        "predictions checked by running the real code, concept questions and flashcards, "
        "and at most one scenario drill on a live failure."
    )
    left, right = st.columns(2, gap="large")
    with left:
        st.multiselect(
            "Systems",
            list(systems),
            format_func=lambda s: f"{SYSTEMS[s]} ({systems[s]})",
            key="study-systems",
            placeholder="all systems",
        )
        st.multiselect("Levels", list(LEVELS), key="study-levels", placeholder="all levels")
    with right:
        st.slider("Minutes", 5, 60, 15, step=5, key="study-minutes")
        st.checkbox(
            "Include a scenario drill (starts real processes)", value=True, key="study-drill"
        )
    if name is None:
        st.info("Type your name above to start a session.", icon=":material/person:")
    st.button(
        "Start the session",
        key="study-start",
        type="primary",
        disabled=name is None,
        on_click=_start,
        args=(name or "",),
        icon=":material/play_arrow:",
    )
    problem = st.session_state.get("study-plan-problem")
    if problem:
        st.error(problem, icon=":material/error:")


def _summary() -> None:
    log = st.session_state.get(LOG) or []
    answered = [r for r in log if r["result"] != "skipped"]
    st.success(
        f"Session done: {len(answered)} answered, {len(log) - len(answered)} skipped. "
        "Your answers are recorded; the Progress tab shows what is due next.",
        icon=":material/celebration:",
    )
    if log:
        st.dataframe(log, hide_index=True, key="study-summary")
    st.button(
        "Start another session", key="study-again", on_click=_end, icon=":material/restart_alt:"
    )


def _concept(item: Item, entry: dict[str, Any], key: str, pos: int) -> None:
    from lookup.study.judge import answer_item

    result = st.session_state.get(f"{key}-result")
    if result is None:
        slot = st.empty()
        with slot.container(), st.form(key=f"{key}-form", border=False):
            text = st.text_area("Your answer, as you would say it", key=f"{key}-text", height=120)
            checked = st.form_submit_button(
                "Show the key points",
                key=f"{key}-check",
                type="primary",
                icon=":material/checklist:",
            )
        if checked:
            try:
                result = answer_item(item, text, entry["variant"])
            except AnswerError as exc:
                st.error(str(exc), icon=":material/error:")
                return
            st.session_state[f"{key}-result"] = result
            st.session_state[f"{key}-answer"] = text
            slot.empty()
        else:
            return
    st.markdown(f"> {md_escape(st.session_state.get(f'{key}-answer', ''))}")
    with st.container(key="study-checklist", border=True):
        st.markdown(
            f"**Key points — your answer covered {result['covered']} of {result['total']}**"
        )
        for point in result["keyPoints"]:
            if point["covered"]:
                st.markdown(
                    f":green[:material/check_box:] {md_escape(point['point'])} "
                    ":green-badge[covered]"
                )
            else:
                words = " / ".join(" or ".join(g) for g in point["missingAnyOf"])
                st.markdown(
                    f":gray[:material/check_box_outline_blank:] {md_escape(point['point'])} "
                    f":gray-badge[missing] :gray[(words like: {md_escape(words)})]"
                )
        st.caption(
            "A checklist of the model answer's points matched by their words, not a judge: "
            "grade yourself."
        )
        show_source(item)
    st.markdown("**How well did you know it?**")
    cols = st.columns(4)
    for col, grade in zip(cols, GRADES, strict=True):
        col.button(
            grade.capitalize(),
            key=f"study-grade-{pos}-{grade}",  # per question: no stale click
            help=GRADE_HELP[grade],
            type="primary" if grade == result["grade"] else "secondary",
            on_click=_graded,
            args=(
                item.id,
                entry["variant"],
                grade,
                f"{result['covered']}/{result['total']}",
                st.session_state.get(f"{key}-answer", ""),
            ),
            use_container_width=True,
        )
    st.caption(f"Suggested from the checklist: {result['grade'].capitalize()}.")


def _graded(item_id: str, variant: int, grade: str, covered: str, answer: str) -> None:
    item = get_item(item_id)
    record(item, variant, grade, answer=answer)
    pos = int(st.session_state.get(POS, 0))
    _advance(
        {
            "question": pos + 1,
            "item": item_id,
            "kind": item.kind,
            "result": f"{grade} (covered {covered})",
        }
    )


def _missing_servers(item: Item) -> list[str]:
    from lookup.study.checking import drill

    try:
        from lookup.study.drills_common import SERVERS, server_available
    except ImportError:  # pragma: no cover - the drills module is not there yet
        return []
    needs = drill(item.checker.drill if item.checker and item.checker.drill else "").requires
    return [SERVERS.get(n, n) for n in needs if n in SERVERS and not server_available(n)]


def _drill(item: Item, entry: dict[str, Any], key: str) -> None:
    from lookup.errors import Unavailable
    from lookup.study.checking import drill, run_drill
    from lookup.study.judge import answer_item

    d = drill(item.checker.drill if item.checker and item.checker.drill else "")
    missing = _missing_servers(item)
    if missing:
        st.warning(
            f"This drill needs {', '.join(missing)}, which is not installed here; it starts "
            "its own throw-away server once it is. Skip it for now.",
            icon=":material/dns:",
        )
        return
    result = st.session_state.get(f"{key}-result")
    if result is None:
        choice = st.radio(
            "Your prediction",
            list(d.choices),
            format_func=lambda c: d.choices[c],
            key=f"{key}-choice",
            index=None,
        )
        reason = st.text_input("Why (one sentence)", key=f"{key}-reason")
        if st.button("Run the drill", key=f"{key}-run", type="primary", icon=":material/bolt:"):
            if choice is None:
                st.error(
                    "Pick one of the choices before running the drill.", icon=":material/error:"
                )
                return
            try:
                with st.spinner(f"Running the drill “{d.title}” on the real code…", show_time=True):
                    outcome = run_drill(item)
                result = answer_item(item, choice, entry["variant"], outcome=outcome)
            except Unavailable as exc:
                st.warning(str(exc), icon=":material/dns:")
                return
            except AnswerError as exc:
                st.error(str(exc), icon=":material/error:")
                return
            result["reason"] = reason
            st.session_state[f"{key}-result"] = result
            record(
                item,
                entry["variant"],
                result["grade"],
                verdict=result["verdict"],
                answer=f"{choice}: {reason}".strip(": "),
                expected=result["measuredText"],
            )
        else:
            return
    _drill_feedback(item, result)


def _drill_feedback(item: Item, result: dict[str, Any]) -> None:
    outcome = result["outcome"]
    with st.container(key="study-drill-outcome", border=True):
        left, right = st.columns(2)
        with left:
            st.markdown("**You predicted**")
            st.markdown(md_escape(result["predictedText"]))
            if result.get("reason"):
                st.caption(f"Because: {md_escape(result['reason'])}")
        with right:
            st.markdown("**The drill measured**")
            st.markdown(md_escape(result["measuredText"]))
        st.markdown(f"{VERDICT_BADGE[result['verdict']]} {md_escape(outcome['summary'])}")
        if outcome["figures"]:
            st.dataframe(
                [{"figure": k, "value": f"{v:,.4g}"} for k, v in outcome["figures"].items()],
                hide_index=True,
            )
        if outcome["chain"]:
            st.markdown("\n".join(f"1. {md_escape(line)}" for line in outcome["chain"]))
        show_source(item)


def _question(entries: list[dict[str, Any]], pos: int) -> None:
    entry = entries[pos]
    item = get_item(entry["id"])
    key = f"study-q-{pos}"
    st.progress(pos / len(entries), text=f"Question {pos + 1} of {len(entries)}")
    with st.container(key="study-question", border=True):
        st.markdown(item_badges(item, entry["variant"], entry.get("reason")))
        st.markdown(f"#### {md_escape(prompt_for(item, entry['variant']))}")
        st.caption(item_caption(item, entry["variant"]))
        if item.kind in ("estimate", "predict"):
            if item.kind == "predict":
                st.caption(
                    "Predict the figure; the workbench then runs the real implementation "
                    "and measures it."
                )
            result = number_question(item, entry["variant"], key)
            done: dict[str, Any] | None = None
            if result is not None:
                done = {
                    "question": pos + 1,
                    "item": item.id,
                    "kind": item.kind,
                    "result": f"{result['verdict']} ({result['expectedText']})",
                }
        elif item.kind == "drill":
            _drill(item, entry, key)
            result = st.session_state.get(f"{key}-result")
            done = (
                None
                if result is None
                else {
                    "question": pos + 1,
                    "item": item.id,
                    "kind": item.kind,
                    "result": f"{result['verdict']} (measured {result['measured']})",
                }
            )
        else:
            _concept(item, entry, key, pos)
            done = None  # the grade buttons move on
    if item.kind in ("concept", "flashcard") and st.session_state.get(f"{key}-result"):
        nav = st.columns([1, 1, 4])
        nav[0].button("Skip grading", key=f"study-skip-{pos}", on_click=_advance, args=(None,))
        return
    nav = st.columns([1, 1, 4])
    if done is not None:
        nav[0].button(
            "Next question" if pos + 1 < len(entries) else "Finish the session",
            key=f"study-next-{pos}",
            type="primary",
            on_click=_advance,
            args=(done,),
            icon=":material/arrow_forward:",
        )
    else:
        nav[0].button(
            "Skip",
            key=f"study-skip-{pos}",
            on_click=_advance,
            args=(None,),
            icon=":material/skip_next:",
        )
    nav[1].button("End the session", key="study-end", on_click=_end)


def render() -> None:
    """The Session tab."""
    name = learner()
    entries = st.session_state.get(ENTRIES)
    if not entries:
        if entries == []:
            st.info(
                "Nothing to ask for these choices: every item is answered and none is due. "
                "Pick more systems or levels.",
                icon=":material/inbox:",
            )
        _setup(name)
        return
    pos = int(st.session_state.get(POS, 0))
    if pos >= len(entries):
        _summary()
        return
    _question(entries, pos)
