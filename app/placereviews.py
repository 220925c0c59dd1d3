"""The Places page's place card: a result's rating, review count, latest reviews, and a form
to add one.

Reads ``GET /v1/places/{id}/reviews`` (newest first) and posts ``POST
/v1/places/{id}/reviews`` with the admin token: the dashboard is a trusted relay that names
the user it speaks for, as a sign-in front end would (:mod:`lookup.geo.reviewhttp`). A
user's second review of a place replaces the first, and the card says so.
"""

from __future__ import annotations

import time
from typing import Any

import streamlit as st
from common import admin_headers, call

#: The place the card shows (a result's id), the form's fields, and the last post's outcome.
CARD = "places.card"
USER, STARS, TEXT = "places.review-user", "places.review-stars", "places.review-text"
POSTED = "places.review-posted"
#: Reviews shown on the card.
LATEST = 5


def stars(rating: float | None) -> str:
    """Five stars filled to ``rating`` (rounded to a whole star), or a dash without one."""
    if rating is None:
        return "no rating yet"
    full = max(0, min(5, round(rating)))
    return "★" * full + "☆" * (5 - full)


def _post(place_id: str) -> None:
    """The form's submit: post the review, keep what the API said for the next run."""
    body = {
        "userId": st.session_state.get(USER, "").strip(),
        "rating": int(st.session_state.get(STARS, 5)),
        "text": st.session_state.get(TEXT, ""),
    }
    answer = call("POST", f"/v1/places/{place_id}/reviews", json=body, headers=admin_headers())
    if answer.ok:
        replaced = bool(answer.body.get("replaced"))
        st.session_state[POSTED] = (
            "success",
            f"{'Replaced the earlier review by' if replaced else 'Posted a review by'} "
            f"{body['userId']}: one review per person per place.",
        )
        st.session_state[TEXT] = ""
    else:
        st.session_state[POSTED] = ("warning", f"The review was refused: {answer.message()}")


def _review_line(review: dict[str, Any]) -> None:
    when = time.strftime("%d %b %Y %H:%M", time.localtime(float(review["updatedAt"])))
    edited = " · edited" if review["updatedAt"] != review["createdAt"] else ""
    fresh = " · new account (counts a fraction of a vote)" if review["newAccount"] else ""
    st.markdown(f"{stars(review['rating'])} **{review['userId']}** · {when}{edited}{fresh}")
    if review["text"]:
        st.text(review["text"])  # as written: no markdown is interpreted


def place_card(results: list[dict[str, Any]]) -> None:
    """A card for one of ``results`` (the person picks which): rating, count, the latest
    reviews, and a form to add one."""
    if not results:
        return
    st.subheader("Place card")
    names = {p["id"]: f"{p['name']} · {p.get('category', '')}" for p in results}
    if st.session_state.get(CARD) not in names:
        st.session_state[CARD] = next(iter(names))
    place_id = st.selectbox("Place", list(names), format_func=names.get, key=CARD)
    answer = call("GET", f"/v1/places/{place_id}/reviews", params={"limit": LATEST})
    if not answer.ok:
        st.warning(f"The reviews did not load: {answer.message()}", icon=":material/warning:")
        return
    body = answer.body
    rating = body.get("rating")
    left, mid, right = st.columns(3)
    left.metric("Rating", f"{rating:.1f}" if rating is not None else "—", stars(rating))
    mid.metric("Reviews", f"{int(body.get('reviewCount') or 0):,}")
    weighted = body.get("weightedRating")
    right.metric(
        "Weighted rating",
        f"{weighted:.2f}" if weighted is not None else "—",
        help="IMDb's weighted rating: new accounts count a fraction of a vote, pulled "
        "toward the place's established rating, so a burst of fresh accounts moves it little.",
    )
    reviews = body.get("reviews") or []
    if reviews:
        st.caption(f"The latest {len(reviews)} (newest first)")
        for review in reviews:
            _review_line(review)
    else:
        st.caption("No reviews written here yet; the count above may come from the data set.")
    posted = st.session_state.pop(POSTED, None)
    if posted is not None:
        kind, text = posted
        (st.success if kind == "success" else st.warning)(text)
    with st.form("places.review-form"):
        st.text_input("User id", key=USER, max_chars=64, help="the person this review is by")
        st.select_slider("Stars", options=[1, 2, 3, 4, 5], value=5, key=STARS)
        st.text_area("Review", key=TEXT, max_chars=4000)
        st.form_submit_button("Post review", on_click=_post, args=(place_id,))
