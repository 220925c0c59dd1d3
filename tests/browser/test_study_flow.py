"""A learner studies in Chromium: a whole short session, then a short mock interview, then a
restart of the dashboard — and the Progress tab still shows the reviews and the interview.

The dashboard runs on a free port over a throw-away data directory of its own (the Study
page needs no API); it is stopped and started again on the same directory. Each answer is
worked out the way the page judges it: estimates from the planner, concept answers from the
item's key-point terms. Screenshots of each tab go to ``/tmp/study-*.png`` to be looked at.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser_harness import Service, free_port, settled, start_dashboard

from lookup.study.bank import get_item
from lookup.study.checking import compute
from lookup.study.interview import scripts

pytestmark = pytest.mark.browser

EXCEPTION = '[data-testid="stException"]'
NAME = "Ada"
SHOTS = Path("/tmp")


def _no_exception(page) -> None:  # type: ignore[no-untyped-def]
    """No exception is on the page now (checked at once, after the run has settled)."""
    settled(page)
    shown = page.locator(EXCEPTION)
    assert shown.count() == 0, shown.first.inner_text()


def _answer_number(page, scope, item_id: str, variant: int, *, first_bad: bool) -> None:  # type: ignore[no-untyped-def]
    """Type a wrong unit (once), read the parser's message, then the planner's figure."""
    from playwright.sync_api import expect

    item = get_item(item_id)
    box = scope.get_by_label(re.compile(r"^Your answer \(units welcome"))
    check = scope.get_by_role("button", name=re.compile(r"^Check"))
    if first_bad:
        box.fill("12 parsecs")
        check.click()
        expect(scope.get_by_text("'parsecs' is not a unit")).to_be_visible()
    if item.kind == "estimate":
        box.fill(f"{compute(item, variant).value:.6g}")
        check.click()
        expect(scope.locator(".st-key-study-verdict")).to_contain_text("Exact", timeout=60_000)
    else:  # a prediction: any number, then the real run is measured and shown
        box.fill("1")
        check.click()
        expect(scope.locator(".st-key-study-verdict")).to_contain_text(
            "The experiment measured", timeout=120_000
        )


def _concept_answer(item_id: str) -> str:
    """An answer holding one synonym of every group of the item's first key point."""
    point = get_item(item_id).key_points[0]
    return "I would say: " + ", ".join(group[0] for group in point.terms) + "."


def _session(page) -> int:  # type: ignore[no-untyped-def]
    """Plan a short one-system session without a drill and answer every question."""
    from playwright.sync_api import expect

    settled(page)
    page.locator(".st-key-study-systems").get_by_role("combobox").click()
    page.get_by_role("option", name=re.compile(r"^Distributed cache")).click()
    page.keyboard.press("Escape")
    thumb = page.locator(".st-key-study-minutes").get_by_role("slider")
    thumb.focus()
    thumb.press("Home")
    expect(thumb).to_have_value("5")
    page.locator(".st-key-study-drill").get_by_text("Include a scenario drill").click()
    expect(page.locator(".st-key-study-drill input")).not_to_be_checked()
    page.get_by_role("button", name="Start the session").click()
    progress = page.get_by_text(re.compile(r"^Question 1 of \d+$"))
    expect(progress).to_be_visible()
    total = int(progress.inner_text().rsplit(" ", 1)[1])
    assert 1 <= total <= 5
    question = page.locator(".st-key-study-question")
    bad_shown = concept_shot = False
    previous = ""
    for n in range(1, total + 1):
        expect(page.get_by_text(f"Question {n} of {total}", exact=True)).to_be_visible()
        caption = question.get_by_text(re.compile(r"^Item .* · variant \d+"))
        expect(caption).to_be_visible()
        code = question.locator("code").first
        if previous:  # the new question has replaced the old one, not just its counter
            expect(code).not_to_have_text(previous)
        _no_exception(page)
        item_id = previous = code.inner_text()
        variant = int(re.search(r"variant (\d+)", caption.inner_text())[1])  # type: ignore[index]
        kind = get_item(item_id).kind
        assert kind != "drill"
        if kind in ("estimate", "predict"):
            _answer_number(page, question, item_id, variant, first_bad=not bad_shown)
            bad_shown = True
            _no_exception(page)
            if n == 1:
                page.screenshot(path=str(SHOTS / "study-session.png"), full_page=True)
            label = "Next question" if n < total else "Finish the session"
            page.locator(f".st-key-study-next-{n - 1}").get_by_role("button", name=label).click()
        else:
            question.get_by_label("Your answer, as you would say it").fill(_concept_answer(item_id))
            question.get_by_role("button", name="Show the key points").click()
            checklist = page.locator(".st-key-study-checklist")
            expect(checklist).to_contain_text("your answer covered")
            expect(checklist).to_contain_text("covered")
            _no_exception(page)
            if not concept_shot:
                concept_shot = True
                page.screenshot(path=str(SHOTS / "study-concept.png"), full_page=True)
            page.locator(f".st-key-study-grade-{n - 1}-good").get_by_role("button").click()
    expect(
        page.get_by_text(re.compile(rf"^Session done: {total} answered, 0 skipped"))
    ).to_be_visible()
    _no_exception(page)
    return total


def _interview(page) -> tuple[str, int]:  # type: ignore[no-untyped-def]
    """Run the first design's mock interview through its six steps to a saved decision;
    returns its title and how many estimates were answered (each is a review too)."""
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Mock interview").click()
    panel = page.get_by_role("tabpanel", name="Mock interview")
    design = next(iter(scripts()))  # the selectbox starts at the first design
    script = scripts()[design]
    estimated = 0
    panel.get_by_role("button", name="Start the interview").click()
    for index, step in enumerate(script.steps):
        expect(
            panel.get_by_text(f"Step {index + 1} of 6 — {step.title}", exact=True)
        ).to_be_visible()
        box = panel.locator(".st-key-iv-step")
        expect(box.get_by_role("heading", name=step.title, exact=True)).to_be_visible()
        _no_exception(page)
        if index == 0:  # the clock ticks in the browser, without reruns
            clock = panel.frame_locator("iframe").first.locator("#t")
            expect(clock).to_contain_text(re.compile(r"interview \d\d:\d\d of \d\d:00"))
        said = box.locator(".st-key-iv-prompts").locator('[data-testid="stMarkdown"]')
        expect(said).to_have_count(1)
        if len(step.prompts) > 1:
            more = box.locator(f".st-key-iv-next-prompt-{step.name}").get_by_role("button")
            expect(more).to_be_enabled()
            more.click()
            expect(said).to_have_count(2)
        for item_id in step.estimates[:1]:
            scope = panel.locator(f".st-key-iv-estimate-{item_id.replace('.', '-')}")
            _answer_number(page, scope, item_id, 0, first_bad=False)
            estimated += 1
        if step.name == "estimate":
            _no_exception(page)
            page.screenshot(path=str(SHOTS / "study-interview.png"), full_page=True)
        box.get_by_label("Your notes for this step").fill(f"My notes on {step.title.lower()}.")
        label = "Finish the interview" if index == 5 else "Next step"
        panel.locator(f".st-key-iv-next-step-{step.name}").get_by_role("button", name=label).click()
    expect(panel.get_by_text(re.compile(r"^Interview over"))).to_be_visible()
    first = script.steps[0]
    panel.locator(f".st-key-iv-rubric-{first.name}").get_by_text(first.rubric[0]).click()
    for part in ("DECISION", "BECAUSE", "GIVING UP", "BOUNDARY"):
        panel.get_by_label(re.compile(rf"^{part} —")).fill(
            f"{part.lower()}: written in the browser"
        )
    _no_exception(page)
    page.screenshot(path=str(SHOTS / "study-assess.png"), full_page=True)
    panel.get_by_role("button", name="Save the interview").click()
    expect(panel.get_by_text(re.compile(r"^Saved as interview #1\."))).to_be_visible()
    _no_exception(page)
    return script.title, estimated


def _progress(page, answered: int, title: str, shot: str) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Progress").click()
    panel = page.get_by_role("tabpanel", name="Progress")
    metrics = panel.locator(".st-key-study-progress-metrics")
    reviews = metrics.locator('[data-testid="stMetric"]').filter(has_text="Reviews")
    expect(reviews.locator('[data-testid="stMetricValue"]')).to_have_text(str(answered))
    interviews = metrics.locator('[data-testid="stMetric"]').filter(has_text="Mock interviews")
    expect(interviews.locator('[data-testid="stMetricValue"]')).to_have_text("1")
    expect(panel.get_by_text(re.compile(rf"^#1 · {re.escape(title)} · "))).to_be_visible()
    expect(panel.locator('[data-testid="stPlotlyChart"]')).to_be_visible()
    expect(panel.get_by_text("Weakest topics first")).to_be_visible()
    _no_exception(page)
    page.screenshot(path=str(SHOTS / shot), full_page=True)


def test_a_session_and_a_mock_interview_survive_a_restart(
    browser,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    from playwright.sync_api import expect

    data_dir = tmp_path / "data"
    data_dir.mkdir()
    nowhere = f"http://127.0.0.1:{free_port()}"  # the Study page needs no API
    dashboard: Service = start_dashboard(nowhere, data_dir, tmp_path / "logs")
    context = browser.new_context(viewport={"width": 1400, "height": 1800})
    context.set_default_timeout(30_000)
    try:
        page = context.new_page()
        page.goto(f"{dashboard.url}/study?learner={NAME}")
        expect(page.get_by_role("heading", name="Study")).to_be_visible()
        expect(page.get_by_label(re.compile(r"^Your name"))).to_have_value(NAME)
        answered = _session(page)
        title, estimated = _interview(page)
        answered += estimated
        _progress(page, answered, title, "study-progress.png")
    finally:
        dashboard.stop()
    again = start_dashboard(nowhere, data_dir, tmp_path / "logs-again")
    try:
        page = context.new_page()
        page.goto(f"{again.url}/study?learner={NAME}")  # a reload: the name comes from the URL
        expect(page.get_by_label(re.compile(r"^Your name"))).to_have_value(NAME)
        _progress(page, answered, title, "study-progress-after-restart.png")
        for table in ("study-weakest-topics", "study-recent-reviews"):
            expect(page.locator(f".st-key-{table} [data-testid='stDataFrame']")).to_be_visible()
    finally:
        context.close()
        again.stop()
