"""Study: interview practice answered by the live systems — sessions, mock interviews, progress.

The **Session** tab asks one question at a time: estimates checked by the capacity
planner, predictions checked by running the real code, concept questions and flashcards
shown against their key points, and a scenario drill on a live failure; every answer is
recorded for the learner and scheduled by FSRS. The **Mock interview** tab runs one
design through six timed steps. The **Progress** tab shows accuracy over time, the
weakest topics and the cards due. The learner is a name kept in the URL.
"""

from __future__ import annotations

import streamlit as st
import study_interview
import study_progress
import study_session
from study_common import check_name_box

st.title("Study")
st.markdown(
    "Practise system design against the systems themselves: your estimates are checked by "
    "the **capacity planner**, your predictions by **running the real code**, and a "
    "scenario drill **breaks a live system** so you can compare what happened with what "
    "you said. Concept questions show which key points your answer covered; you grade "
    "yourself and FSRS decides when each card comes back."
)
check_name_box()

session_tab, interview_tab, progress_tab = st.tabs(["Session", "Mock interview", "Progress"])
with session_tab:
    study_session.render()
with interview_tab:
    study_interview.render()
with progress_tab:
    study_progress.render()
