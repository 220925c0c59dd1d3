"""The typeahead and proximity drills: each runs embedded, and one changed input flips it.

A damaged snapshot is refused by the service's comparison and served without it; a
corrupt one is refused either way. A spike from a few accounts is held back, the same
spike from many accounts is suggested, a small one stays below the floor. A new place
is found through the change stream, or only after the rebuild when nothing tails it.
No assertion is on a duration.
"""

from __future__ import annotations

import pytest

from lookup.study.bank import bank
from lookup.study.drills import DRILLS, run_drill
from tests.study.drill_checks import run_checked as _run

NEW = {"bad_snapshot_published", "trending_spike", "place_added_while_serving"}


def test_the_new_drills_are_registered_embedded_with_items() -> None:
    assert NEW <= set(DRILLS)
    for name in NEW:
        drill = DRILLS[name]
        assert drill.name == name and drill.title and not drill.requires
        assert 3 <= len(drill.choices) <= 4
    items = [i for i in bank().values() if i.kind == "drill" and i.checker]
    named = {i.checker.drill for i in items if i.checker}
    assert NEW <= named
    assert {"typeahead", "proximity"} <= {i.system for i in items}
    for item in items:
        if item.checker is not None and item.checker.drill in NEW:
            assert set(item.checker.params) <= set(DRILLS[item.checker.drill].params), item.id


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="damage"):
        run_drill("bad_snapshot_published", damage="melted")
    with pytest.raises(ValueError, match="networks"):
        run_drill("trending_spike", users=2, networks=5)
    with pytest.raises(ValueError, match="places"):
        run_drill("place_added_while_serving", places=10)


def test_a_truncated_snapshot_is_refused_by_the_comparison_and_served_without_it() -> None:
    guarded = _run("bad_snapshot_published", lookups=200)
    f = guarded.figures
    assert guarded.choice == "refused"
    assert f["answered by the new file"] == 0 and f["failed lookups"] == 0
    assert f["new file refused"] == 1.0 and f["new file serving at the end"] == 0.0
    assert f["lookups answered once it was published"] > 0
    assert f["answered by the old version"] == f["lookups answered"]
    assert f["suggestions in the new file"] < 0.75 * f["suggestions before"]
    open_door = _run("bad_snapshot_published", lookups=200, compare=False)
    g = open_door.figures
    assert open_door.choice == "served"
    assert g["answered by the new file"] > 0 and g["new file serving at the end"] == 1.0
    assert g["failed lookups"] == 0
    assert g["empty answers from the new file"] > g["empty answers before"]


def test_a_corrupt_snapshot_is_refused_even_without_the_comparison() -> None:
    for compare in (True, False):
        got = _run("bad_snapshot_published", damage="corrupt", compare=compare, lookups=100)
        assert got.choice == "refused", compare
        assert got.figures["answered by the new file"] == 0
        assert got.figures["new file refused"] == 1.0
        assert "checksum" in got.chain[3]


def test_a_healthy_rebuild_is_swapped_in() -> None:
    got = _run("bad_snapshot_published", damage="none", lookups=100)
    assert got.choice == "served"
    assert got.figures["new file serving at the end"] == 1.0
    assert got.figures["failed lookups"] == 0


def test_a_spike_from_few_accounts_is_held_and_from_many_is_shown() -> None:
    brigade = _run("trending_spike")
    f = brigade.figures
    assert brigade.choice == "held"
    assert f["window count"] == f["searches"] >= f["floor"]
    assert f["trending"] == 0.0 and f["shown for its prefix"] == 0.0
    crowd = _run("trending_spike", users=400, networks=150)
    assert crowd.choice == "shown"
    assert crowd.figures["trending"] == 1.0 and crowd.figures["boost"] > 0
    assert crowd.figures["rank among the suggestions"] >= 1
    # the thresholds are the policy's: lowered to one account and one network, it shows
    lax = _run("trending_spike", min_users=1, min_networks=1)
    assert lax.choice == "shown"
    small = _run("trending_spike", searches=300, users=400, networks=150)
    assert small.choice == "batch" and small.figures["window count"] < small.figures["floor"]


def test_a_new_place_is_found_through_the_stream_or_only_after_the_rebuild() -> None:
    tailed = _run("place_added_while_serving", places=4000)
    f = tailed.figures
    assert tailed.choice == "stream"
    assert f["found before the rebuild"] == 1.0 and f["found after the rebuild"] == 1.0
    assert f["failed searches"] == 0
    assert f["answers with a count matching neither index"] == 0
    assert f["index versions seen"] >= 1
    untailed = _run("place_added_while_serving", places=4000, tail=False, wait_s=0.5)
    g = untailed.figures
    assert untailed.choice == "rebuild"
    assert g["found before the rebuild"] == 0.0 and g["found after the rebuild"] == 1.0
    assert g["searches after the add that missed it"] > 0
    assert g["answers with a count matching neither index"] == 0
