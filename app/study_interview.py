"""The Study page's Mock interview tab: one design, six timed steps, then a self-assessment.

The script (:func:`lookup.study.interview.scripts`) gives each step — clarify, estimate,
high-level design, deep dive, what breaks, curveballs — its minutes, the interviewer's
prompts (revealed one at a time), a rubric, and for the estimate step the bank's
estimate items, checked by the planner here. The time spent on each step is measured;
at the end the learner ticks the rubric and writes one decision in the
DECISION / BECAUSE / GIVING UP / BOUNDARY shape, and the whole run is saved.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Any

import streamlit as st
from study_common import learner, md_escape, number_question, store

from lookup.study.bank import get_item
from lookup.study.interview import DECISION_PARTS, STEP_TITLES, Script, scripts

#: Session state: the run under way (design, clock, step, notes, seconds per step).
RUN = "iv-run"


def _minutes(seconds: float) -> str:
    s = max(0, int(round(seconds)))
    return f"{s // 60}:{s % 60:02d}"


def _start(design: str) -> None:
    for key in list(st.session_state):
        if isinstance(key, str) and key.startswith(
            ("iv-step-", "iv-rubric-", "iv-decision-", "iv-est-")
        ):
            del st.session_state[key]
    now = time.time()
    st.session_state[RUN] = {
        "design": design,
        "started": now,
        "step": 0,
        "step_started": now,
        "seconds": [],
        "revealed": [1],
        "notes": [],
        "finished": None,
        "saved": None,
    }


def _reveal() -> None:
    run = st.session_state[RUN]
    run["revealed"][-1] += 1


def _next_step(script: Script) -> None:
    """Close the current step (its time and notes) and open the next, or finish."""
    run = st.session_state[RUN]
    step = script.steps[run["step"]]
    now = time.time()
    run["seconds"].append(round(now - run["step_started"], 1))
    run["notes"].append(st.session_state.get(f"iv-step-{step.name}-notes", ""))
    run["step"] += 1
    run["step_started"] = now
    if run["step"] >= len(script.steps):
        run["finished"] = now
    else:
        run["revealed"].append(1)


def _abandon() -> None:
    st.session_state.pop(RUN, None)


def _timer(run: dict[str, Any], script: Script, budget_s: int) -> None:
    """A clock ticking in the browser (no reruns): the interview's time and this step's."""
    start_ms = int(run["started"] * 1000)
    step_ms = int(run["step_started"] * 1000)
    total_s = script.minutes * 60
    st.iframe(
        f"""<div id="t" style="font-family: 'Source Sans', 'Source Sans Pro', system-ui,
        -apple-system, 'Segoe UI', Roboto, sans-serif; font-size: 15px; color: #31333F;
        padding: 5px 0"></div>
<script>
const start = {start_ms}, stepStart = {step_ms}, budget = {budget_s}, total = {total_s};
function f(s) {{ s = Math.max(0, Math.floor(s));
  return String(Math.floor(s / 60)).padStart(2, '0') + ':' + String(s % 60).padStart(2, '0'); }}
function tick() {{
  const now = Date.now(), inStep = (now - stepStart) / 1000;
  const over = inStep > budget ? ' <b style="color:#d33">— over the time for this step</b>' : '';
  document.getElementById('t').innerHTML = '<b>Clock</b> &nbsp;interview ' +
    f((now - start) / 1000) + ' of ' + f(total) + ' &nbsp;·&nbsp; this step ' + f(inStep) +
    ' of ' + f(budget) + over;
}}
tick(); setInterval(tick, 1000);
</script>""",
        height=34,
    )


def _step(run: dict[str, Any], script: Script) -> None:
    index = run["step"]
    step = script.steps[index]
    elapsed = time.time() - run["started"]
    st.progress(
        index / len(script.steps), text=f"Step {index + 1} of {len(script.steps)} — {step.title}"
    )
    _timer(run, script, step.minutes * 60)
    st.caption(
        f"Planned: {step.minutes} min for this step, {script.minutes} min in all "
        f"({_minutes(elapsed)} gone when the page was last drawn)."
    )
    with st.container(key="iv-step", border=True):
        st.markdown(f"### {step.title}")
        shown = min(run["revealed"][-1], len(step.prompts))
        with st.container(key="iv-prompts"):
            for prompt in step.prompts[:shown]:
                said = re.sub(r"^\s*Interviewer\s*:\s*", "", prompt)
                st.markdown(
                    f":blue-badge[:material/record_voice_over: Interviewer] {md_escape(said)}"
                )
        st.button(
            f"Next prompt ({len(step.prompts) - shown} left)",
            key=f"iv-next-prompt-{step.name}",  # per step: no stale click
            on_click=_reveal,
            disabled=shown >= len(step.prompts),
            icon=":material/record_voice_over:",
        )
        for item_id in step.estimates:
            try:
                item = get_item(item_id)
            except KeyError:
                st.warning(f"The script names an estimate {item_id!r} the bank does not hold.")
                continue
            with st.container(border=True, key=f"iv-estimate-{item.id.replace('.', '-')}"):
                from lookup.study.checking import prompt_for

                st.markdown(f"**Estimate:** {md_escape(prompt_for(item, 0))}")
                number_question(item, 0, f"iv-est-{item.id.replace('.', '-')}")
        st.text_area(
            "Your notes for this step",
            key=f"iv-step-{step.name}-notes",
            height=140,
            placeholder="What you would say or sketch at this point",
        )
    last = index + 1 >= len(script.steps)
    cols = st.columns([1, 1, 3])
    cols[0].button(
        "Finish the interview" if last else "Next step",
        key=f"iv-next-step-{step.name}",
        type="primary",
        on_click=_next_step,
        args=(script,),
        icon=":material/flag:" if last else ":material/arrow_forward:",
    )
    cols[1].button("Abandon", key="iv-abandon", on_click=_abandon)


def _estimates_of(script: Script) -> list[dict[str, Any]]:
    out = []
    for step in script.steps:
        for item_id in step.estimates:
            result = st.session_state.get(f"iv-est-{item_id.replace('.', '-')}-result")
            if result:
                out.append(
                    {
                        "id": item_id,
                        "verdict": result["verdict"],
                        "answer": result["answer"],
                        "expected": result["expectedText"],
                    }
                )
    return out


def _save(script: Script, name: str) -> None:
    run = st.session_state[RUN]
    decision = {
        part: (st.session_state.get(f"iv-decision-{part}") or "").strip() for part in DECISION_PARTS
    }
    empty = [DECISION_PARTS[p].split(" —")[0] for p, text in decision.items() if not text]
    if empty:
        st.session_state["iv-save-problem"] = (
            f"Write every part of the decision; still empty: {', '.join(empty)}."
        )
        return
    st.session_state.pop("iv-save-problem", None)
    estimates = _estimates_of(script)
    steps = []
    for i, step in enumerate(script.steps):
        rubric = [
            {"text": text, "met": bool(st.session_state.get(f"iv-rubric-{step.name}-{j}"))}
            for j, text in enumerate(step.rubric)
        ]
        row: dict[str, Any] = {
            "name": step.name,
            "title": step.title,
            "seconds": run["seconds"][i] if i < len(run["seconds"]) else 0.0,
            "prompts_seen": run["revealed"][i] if i < len(run["revealed"]) else 0,
            "notes": run["notes"][i] if i < len(run["notes"]) else "",
            "rubric": rubric,
        }
        if step.estimates:
            row["estimates"] = estimates
        steps.append(row)
    run["saved"] = store().save_interview(
        name,
        script.design,
        datetime.fromtimestamp(run["started"], UTC),
        steps,
        decision,
        finished_at=datetime.fromtimestamp(run["finished"] or time.time(), UTC),
    )


def _assess(run: dict[str, Any], script: Script, name: str | None) -> None:
    total = sum(run["seconds"])
    st.success(
        f"Interview over: {_minutes(total)} spent of the {script.minutes} planned minutes.",
        icon=":material/flag:",
    )
    if run["saved"]:
        st.success(
            f"Saved as interview #{run['saved']}. It is listed below and on the Progress tab.",
            icon=":material/save:",
        )
        st.button(
            "Start another interview",
            key="iv-again",
            on_click=_abandon,
            icon=":material/restart_alt:",
        )
        return
    st.markdown("#### Assess yourself against each step's rubric")
    for i, step in enumerate(script.steps):
        spent = run["seconds"][i] if i < len(run["seconds"]) else 0.0
        with st.container(border=True, key=f"iv-rubric-{step.name}"):
            st.markdown(f"**{step.title}** — {_minutes(spent)} spent of {step.minutes}:00")
            for j, text in enumerate(step.rubric):
                st.checkbox(text, key=f"iv-rubric-{step.name}-{j}")
    st.markdown("#### Write one decision, in four parts")
    st.caption(
        "The shape of a decision worth defending: what you chose, what makes it right, "
        "what it costs, and where it stops working."
    )
    for part, label in DECISION_PARTS.items():
        st.text_area(label, key=f"iv-decision-{part}", height=80)
    if name is None:
        st.info("Type your name above to save the interview.", icon=":material/person:")
    st.button(
        "Save the interview",
        key="iv-save",
        type="primary",
        disabled=name is None,
        on_click=_save,
        args=(script, name or ""),
        icon=":material/save:",
    )
    problem = st.session_state.get("iv-save-problem")
    if problem:
        st.error(problem, icon=":material/error:")


def past_interviews(name: str, limit: int = 10) -> None:
    """The learner's saved mock interviews, newest first."""
    rows = store().interviews(name)
    st.markdown(f"#### Past mock interviews ({len(rows)})")
    if not rows:
        st.caption("None saved yet.")
        return
    titles = {d: s.title for d, s in scripts().items()}
    for row in rows[:limit]:
        steps = row["steps"]
        met = sum(r["met"] for s in steps for r in s.get("rubric", []))
        ticks = sum(len(s.get("rubric", [])) for s in steps)
        spent = sum(float(s.get("seconds", 0)) for s in steps)
        label = (
            f"#{row['id']} · {titles.get(row['design'], row['design'])} · "
            f"{row['started_at'][:16].replace('T', ' ')} UTC · {_minutes(spent)} · "
            f"rubric {met}/{ticks}"
        )
        with st.expander(label):
            for part, text in row["decision"].items():
                head = DECISION_PARTS.get(part, part).split(" —")[0]
                st.markdown(f"**{head}** {md_escape(text)}")
            st.dataframe(
                [
                    {
                        "step": STEP_TITLES.get(s["name"], s["name"]),
                        "time": _minutes(s["seconds"]),
                        "rubric": f"{sum(r['met'] for r in s['rubric'])}/{len(s['rubric'])}",
                        "notes": s.get("notes", ""),
                    }
                    for s in steps
                ],
                hide_index=True,
            )


def render() -> None:
    """The Mock interview tab."""
    name = learner()
    available = scripts()
    run = st.session_state.get(RUN)
    if run is None:
        st.markdown(
            "A timed run through one design, the way a 45-minute interview goes: clarify, "
            "estimate, high-level design, deep dive, what breaks, curveballs. The "
            "interviewer's prompts come one at a time; your estimates are checked by the "
            "planner; at the end you assess yourself and write one decision."
        )
        if not available:
            st.info("No interview scripts are installed yet.", icon=":material/inbox:")
        else:
            design = st.selectbox(
                "Design",
                list(available),
                format_func=lambda d: f"{available[d].title} ({available[d].minutes} min)",
                key="iv-design",
            )
            if name is None:
                st.info("Type your name above to start.", icon=":material/person:")
            st.button(
                "Start the interview",
                key="iv-start",
                type="primary",
                disabled=name is None or design is None,
                on_click=_start,
                args=(design,),
                icon=":material/timer:",
            )
    else:
        script = available.get(run["design"])
        if script is None:
            st.error(f"The script {run['design']!r} is gone.")
            st.button("Back", key="iv-abandon", on_click=_abandon)
            return
        st.markdown(f"### Mock interview: {md_escape(script.title)}")
        if run["finished"] is None:
            _step(run, script)
        else:
            _assess(run, script, name)
    if name is not None:
        past_interviews(name)
