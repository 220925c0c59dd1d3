"""The shortener page's *Redirect rules* panel: edit one link's rules, see their clicks.

A rule sends a visit elsewhere when everything it names holds — the device, browser,
language, country, a query parameter, a time window; the first rule that holds wins, and
a visit no rule takes goes to the link's own destination. The editor is a table, one row
per rule in order, one column per kind of condition (empty: not a condition); it saves
with ``PUT /v1/links/{key}/redirect-rules`` and shows the API's refusal, naming the row
and the field, when a rule is not accepted. Clicks per rule come from the link's stats
(``breakdowns.rules``, people only, the last 24 hours).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st
from shortlinks import call

#: Editor columns → condition types (``query`` is ``name=value``).
COLUMNS = {
    "Device": "device",
    "Browser": "browser",
    "Language": "language",
    "Country": "country",
    "Query (name=value)": "query-param",
    "Valid since": "valid-since",
    "Valid until": "valid-until",
}
DESTINATION = "Destination"


def rows_of(rules: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The API's rules as editor rows (one per rule, one cell per condition type)."""
    by_type = {kind: column for column, kind in COLUMNS.items()}
    rows = []
    for rule in rules:
        row = {DESTINATION: rule["longUrl"], **dict.fromkeys(COLUMNS, "")}
        for cond in rule["conditions"]:
            value = cond["matchValue"]
            if cond["type"] == "query-param":
                value = f"{cond['matchKey']}={value}"
            row[by_type[cond["type"]]] = value
        rows.append(row)
    return rows


def rules_of(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Editor rows as the API's rules; rows with no destination and no condition are dropped."""
    rules = []
    for row in rows:
        destination = str(row.get(DESTINATION) or "").strip()
        conditions = []
        for column, kind in COLUMNS.items():
            text = str(row.get(column) or "").strip()
            if not text:
                continue
            if kind == "query-param":
                name, _, value = text.partition("=")
                conditions.append({"type": kind, "matchKey": name, "matchValue": value})
            else:
                conditions.append({"type": kind, "matchValue": text})
        if destination or conditions:
            rules.append({"longUrl": destination, "conditions": conditions})
    return rules


def _refusal(body: Any) -> str:
    if not isinstance(body, dict):
        return "the API did not answer"
    where = f"rule {body['rule'] + 1}, " if isinstance(body.get("rule"), int) else ""
    field = f"{body['field']}: " if body.get("field") else ""
    return f"{where}{field}{body.get('message', '')} ({body.get('error', '?')})"


def rules_panel(key: str | None) -> None:
    """The rules editor and the clicks per rule of the link ``key``."""
    if not key:
        return
    answer = call("GET", f"/v1/links/{key}/redirect-rules")
    if not answer.ok or not isinstance(answer.body, dict):
        st.caption(f"Redirect rules unavailable: {answer.message()}")
        return
    current = answer.body["redirectRules"]
    st.markdown(
        f"Visits to **{key}** go to the first rule whose conditions all hold, else to "
        f"`{answer.body.get('defaultLongUrl') or '—'}`. One row per rule, in order; an "
        "empty cell is no condition. Device: `ios`, `android` or `desktop`; language: "
        "`es` or `es-AR`; country: `IN`; times: `2026-12-31T18:00:00Z`."
    )
    frame = pd.DataFrame(rows_of(current), columns=[DESTINATION, *COLUMNS])
    edited = st.data_editor(
        frame,
        num_rows="dynamic",
        hide_index=True,
        key=f"rules-editor-{key}",
        column_config={DESTINATION: st.column_config.TextColumn(required=False, width="large")},
    )
    if st.button("Save rules", icon=":material/save:", key="rules-save"):
        rules = rules_of(edited.fillna("").to_dict("records"))
        saved = call("PUT", f"/v1/links/{key}/redirect-rules", json={"redirectRules": rules})
        if saved.ok:
            st.success(f"Saved {len(rules)} rule(s) for {key}.", icon=":material/check:")
            current = saved.body["redirectRules"]
        else:
            st.error(f"Not saved: {_refusal(saved.body)}", icon=":material/rule:")
    stats = call("GET", f"/v1/links/{key}/stats", params={"granularity": "hour"})
    if stats.ok and isinstance(stats.body, dict):
        counts = {row["value"]: row["clicks"] for row in stats.body["breakdowns"].get("rules", [])}
        if current or counts:
            table = [
                {
                    "Rule": f"{i}",
                    "Destination": rule["longUrl"],
                    "Clicks (24 h)": counts.get(str(i), 0),
                }
                for i, rule in enumerate(current, 1)
            ]
            table.append(
                {
                    "Rule": "default",
                    "Destination": answer.body.get("defaultLongUrl") or "",
                    "Clicks (24 h)": counts.get("default", 0),
                }
            )
            st.markdown("**Clicks per rule** · people only")
            st.dataframe(pd.DataFrame(table), hide_index=True, key="rules-clicks")
