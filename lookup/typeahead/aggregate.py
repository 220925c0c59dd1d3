"""Write path, step 1-2: read a query log, normalise it, fold it into decayed scores.

The count aggregator keeps **one running score per query** and never re-reads old
logs: each new batch of events is folded in with

    score = factor ** elapsed_periods × score + count

where ``factor = 0.5 ** (period / half_life)``; with a seven-day half-life the daily
factor is 0.5^(1/7) ≈ 0.906 and the hourly one 0.5^(1/168). A query searched 10,000
times a day settles at 10,000 / (1 − 0.906) ≈ 106,000 and halves every seven days
of silence.

Beside the score the state keeps what the filters need without the raw log: the
number of distinct users per query (exact up to a cap, via the hashed ids of the
first ``cap`` users), the typo → retype pairs with their distinct users, and the
traffic share per hour of the day (the trending job's notion of "normal").
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from lookup.typeahead.normalize import MAX_QUERY_CHARS, has_control_chars, normalize_query
from lookup.typeahead.spelling import retype_pairs

HALF_LIFE_S = 7 * 86400
PERIODS = {"day": 86400, "hour": 3600}
#: distinct users remembered per query; thresholds up to this value are exact
USER_CAP = 64
_MARKET_RE = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$")
REQUIRED_COLUMNS = ("ts", "market", "query", "user_id")


def decay_factor(period_s: int = 86400, half_life_s: int = HALF_LIFE_S) -> float:
    """The per-period multiplier for a given half-life (day: ≈0.906, hour: ≈0.99588)."""
    return 0.5 ** (period_s / half_life_s)


def steady_state(daily_count: float, factor: float = decay_factor()) -> float:
    """The score a query settles at when searched ``daily_count`` times every period."""
    return daily_count / (1.0 - factor)


class LogError(ValueError):
    """The input log cannot be read (missing columns, bad timestamps ...)."""


# --------------------------------------------------------------------------- reading


@dataclass
class EventBatch:
    """A log as columns; strings are factorised (``query`` indexes ``queries``)."""

    ts: np.ndarray  # int64 epoch seconds
    market: np.ndarray  # int32 index into markets
    markets: list[str]
    query: np.ndarray  # int32 index into queries (normalised, distinct)
    queries: list[str]
    user: np.ndarray  # int32 index into users
    users: list[str]
    is_bot: np.ndarray  # bool
    dropped: int = 0  # rows whose query was empty, too long or held control characters
    #: bool: picked from the suggestions (column ``picked``; False where absent or empty)
    picked: np.ndarray | None = None

    def picks(self) -> np.ndarray:
        """The ``picked`` flags (all False for a log without the column)."""
        return self.picked if self.picked is not None else np.zeros(len(self.ts), bool)

    def __len__(self) -> int:
        return len(self.ts)

    def before(self, cutoff: float) -> EventBatch:
        """The rows older than ``cutoff`` (epoch seconds; strings tables shared)."""
        mask = self.ts < cutoff
        return EventBatch(
            self.ts[mask],
            self.market[mask],
            self.markets,
            self.query[mask],
            self.queries,
            self.user[mask],
            self.users,
            self.is_bot[mask],
            self.dropped,
            picked=self.picks()[mask],
        )

    def for_market(self, market: str) -> EventBatch:
        """The rows of one market (strings tables shared)."""
        if market not in self.markets:
            empty = np.zeros(0, np.int64)
            return EventBatch(
                empty,
                empty.astype(np.int32),
                self.markets,
                empty.astype(np.int32),
                self.queries,
                empty.astype(np.int32),
                self.users,
                empty.astype(bool),
            )
        mask = self.market == self.markets.index(market)
        return EventBatch(
            self.ts[mask],
            self.market[mask],
            self.markets,
            self.query[mask],
            self.queries,
            self.user[mask],
            self.users,
            self.is_bot[mask],
            picked=self.picks()[mask],
        )


def _factorize(column: Any) -> tuple[np.ndarray, list[Any]]:
    """(codes, uniques) of a pyarrow column, without a Python object per row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        if not pa.types.is_dictionary(column.type):
            column = pc.dictionary_encode(column)
        column = column.unify_dictionaries()
        chunks = column.chunks
        if not chunks:
            return np.zeros(0, np.int32), []
        dictionary = chunks[0].dictionary
        codes = np.concatenate(
            [c.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64) for c in chunks]
        )
        nulls = np.concatenate([np.asarray(c.is_null()) for c in chunks])
    else:
        if not pa.types.is_dictionary(column.type):
            column = pc.dictionary_encode(column)
        dictionary = column.dictionary
        codes = column.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        nulls = np.asarray(column.is_null())
    values = dictionary.to_pylist()
    codes = np.where(nulls, len(values), codes)
    return codes, values + [None]


def _parse_ts(column: Any) -> np.ndarray:
    """Epoch seconds from a timestamp, number or ISO 8601 string column."""
    import pyarrow as pa

    t = column.type
    if pa.types.is_timestamp(t):
        unit = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}[t.unit]
        raw = column.cast(pa.int64()).to_numpy(zero_copy_only=False)
        return (raw // unit).astype(np.int64)
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        values = column.to_numpy(zero_copy_only=False)
        if np.isnan(values.astype(float)).any():
            raise LogError("column ts has empty values")
        return values.astype(np.float64).astype(np.int64)
    if pa.types.is_date(t):
        return column.cast(pa.timestamp("s")).cast(pa.int64()).to_numpy(zero_copy_only=False)
    codes, uniques = _factorize(column)
    parsed = np.zeros(len(uniques), np.int64)
    for i, v in enumerate(uniques):
        if v is None:
            if np.any(codes == i):
                raise LogError("column ts has empty values")
            continue
        parsed[i] = _parse_one_ts(str(v))
    return parsed[codes]


def _parse_one_ts(value: str) -> int:
    value = value.strip()
    try:
        return int(float(value))
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        raise LogError(f"column ts: {value!r} is neither ISO 8601 nor epoch seconds") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp())


def _parse_bool(column: Any) -> np.ndarray:
    import pyarrow as pa

    if pa.types.is_boolean(column.type):
        return np.asarray(column.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_integer(column.type) or pa.types.is_floating(column.type):
        return np.asarray(column.fill_null(0).to_numpy(zero_copy_only=False)) != 0
    codes, uniques = _factorize(column)
    truth = np.array(
        [str(v).strip().lower() in ("1", "true", "t", "yes", "y") for v in uniques], dtype=bool
    )
    return truth[codes]


def read_table(path: str | os.PathLike[str]) -> Any:
    """Read a CSV or Parquet log into a pyarrow Table (strings kept as strings)."""
    import pyarrow as pa

    path = Path(path)
    if not path.exists():
        raise LogError(f"no such file: {path}")
    suffix = "".join(path.suffixes[-2:]).lower()
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            return pq.read_table(path)
        if path.suffix.lower() in (".csv", ".tsv") or suffix.endswith((".csv.gz", ".csv.zst")):
            import pyarrow.csv as pcsv

            return pcsv.read_csv(
                path,
                parse_options=pcsv.ParseOptions(delimiter="\t" if ".tsv" in suffix else ","),
                convert_options=pcsv.ConvertOptions(
                    column_types={c: pa.string() for c in ("market", "query", "user_id", "prefix")},
                    strings_can_be_null=False,
                ),
            )
    except (pa.ArrowInvalid, OSError) as exc:
        raise LogError(f"cannot read {path}: {exc}") from None
    raise LogError(f"{path}: expected a .csv or .parquet file")


def events_from_table(table: Any) -> EventBatch:
    """Validate and normalise a log table into an :class:`EventBatch`."""
    missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
    if missing:
        raise LogError(
            f"the log lacks column(s) {', '.join(missing)}; expected ts, market, query, "
            f"user_id and optionally is_bot (got {', '.join(table.column_names)})"
        )
    ts = _parse_ts(table.column("ts"))
    m_codes, m_values = _factorize(table.column("market"))
    for m in m_values[:-1]:
        if not isinstance(m, str) or not _MARKET_RE.match(m):
            raise LogError(f"column market: {m!r} is not a market such as en-IN")
    if np.any(m_codes == len(m_values) - 1):
        raise LogError("column market has empty values")
    q_codes, q_values = _factorize(table.column("query"))
    u_codes, u_values = _factorize(table.column("user_id"))
    is_bot = (
        _parse_bool(table.column("is_bot"))
        if "is_bot" in table.column_names
        else np.zeros(len(ts), bool)
    )
    picked = (  # a search log's rows written before the column existed leave it empty
        _parse_bool(table.column("picked"))
        if "picked" in table.column_names
        else np.zeros(len(ts), bool)
    )
    # Normalise each distinct raw query once, then re-factorise the normalised forms.
    norm_index: dict[str, int] = {}
    norm_list: list[str] = []
    remap = np.full(len(q_values), -1, np.int64)
    for i, raw in enumerate(q_values):
        if raw is None:
            continue
        text = normalize_query(str(raw))
        if not text or len(text) > MAX_QUERY_CHARS or has_control_chars(text):
            continue
        j = norm_index.get(text)
        if j is None:
            j = norm_index[text] = len(norm_list)
            norm_list.append(text)
        remap[i] = j
    q = remap[q_codes]
    keep = q >= 0
    u_none = len(u_values) - 1
    keep &= u_codes != u_none
    dropped = int(len(keep) - keep.sum())
    return EventBatch(
        ts=ts[keep],
        market=m_codes[keep].astype(np.int32),
        markets=[str(m) for m in m_values[:-1]],
        query=q[keep].astype(np.int32),
        queries=norm_list,
        user=u_codes[keep].astype(np.int32),
        users=[str(u) for u in u_values[:-1]],
        is_bot=is_bot[keep],
        dropped=dropped,
        picked=picked[keep],
    )


def read_query_log(path: str | os.PathLike[str]) -> EventBatch:
    """Read and normalise a CSV or Parquet log (columns ts, market, query, user_id[, is_bot])."""
    return events_from_table(read_table(path))


# --------------------------------------------------------------------------- state


def user_hash(user_id: str) -> int:
    """A stable 63-bit hash of a (hashed) user id, what the state remembers per user."""
    return int.from_bytes(hashlib.blake2b(user_id.encode(), digest_size=8).digest(), "little") >> 1


@dataclass
class FoldReport:
    """What one fold did, per market."""

    market: str
    events: int = 0
    bot_events: int = 0
    skipped_old: int = 0
    new_queries: int = 0
    periods: int = 0


@dataclass
class MarketScores:
    """One market's running state: a decayed score per query and the filters' evidence."""

    market: str
    period_s: int = 86400
    half_life_s: int = HALF_LIFE_S
    queries: list[str] = field(default_factory=list)
    score: np.ndarray = field(default_factory=lambda: np.zeros(0))
    users: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    user_sets: dict[int, set[int]] = field(default_factory=dict)
    typos: dict[tuple[int, int], set[int]] = field(default_factory=dict)
    hour_traffic: np.ndarray = field(default_factory=lambda: np.zeros(24))
    period: int | None = None  # index of the newest folded period
    as_of: int = 0  # epoch seconds: events before this were folded already
    events: int = 0
    _index: dict[str, int] = field(default_factory=dict, repr=False)

    @property
    def factor(self) -> float:
        """The per-period decay multiplier."""
        return decay_factor(self.period_s, self.half_life_s)

    def __post_init__(self) -> None:
        if not self._index and self.queries:
            self._index = {q: i for i, q in enumerate(self.queries)}

    def ids_for(self, strings: Sequence[str], codes: np.ndarray) -> tuple[np.ndarray, int]:
        """Map batch string codes to state ids, adding new queries; returns (ids, added)."""
        used = np.unique(codes)
        mapping = np.zeros(len(strings), np.int64)
        added = 0
        for c in used.tolist():
            q = strings[c]
            i = self._index.get(q)
            if i is None:
                i = self._index[q] = len(self.queries)
                self.queries.append(q)
                added += 1
            mapping[c] = i
        if added:
            self.score = np.concatenate([self.score, np.zeros(added)])
            self.users = np.concatenate([self.users, np.zeros(added, np.int32)])
        return mapping[codes], added

    def fold(
        self, batch: EventBatch, *, bot_weight: float = 0.0, picked_weight: float = 1.0
    ) -> FoldReport:
        """Fold one market's new events in: decay, add counts, remember users and retypes.

        A search picked from the suggestions counts ``picked_weight`` (a typed-out one 1,
        a bot's ``bot_weight``): seed 000's feedback loop, softened.

        Events older than :attr:`as_of` were folded before and are skipped, so a log
        can be handed over again (or appended to) without counting anything twice.
        """
        report = FoldReport(self.market)
        fresh = batch.ts >= self.as_of
        report.skipped_old = int((~fresh).sum())
        if not fresh.any():
            return report
        ts, qc, uc, bot = (
            batch.ts[fresh],
            batch.query[fresh],
            batch.user[fresh],
            batch.is_bot[fresh],
        )
        ids, report.new_queries = self.ids_for(batch.queries, qc)
        weights = np.where(bot, bot_weight, np.where(batch.picks()[fresh], picked_weight, 1.0))
        periods = ts // self.period_s
        order = np.argsort(periods, kind="stable")
        periods, ids_o, w_o = periods[order], ids[order], weights[order]
        bounds = np.flatnonzero(np.diff(periods)) + 1
        starts = np.concatenate([[0], bounds])
        ends = np.concatenate([bounds, [len(periods)]])
        hours = ((ts[order] + 19800) // 3600) % 24  # Indian time, for the trending baseline
        factor = self.factor
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
            p = int(periods[a])
            if self.period is None:
                self.period = p
            if p > self.period:
                decay = factor ** (p - self.period)
                self.score *= decay
                self.hour_traffic *= decay
                self.period = p
            self.score += np.bincount(ids_o[a:b], weights=w_o[a:b], minlength=len(self.score))
            self.hour_traffic += np.bincount(hours[a:b], weights=w_o[a:b], minlength=24)
            report.periods += 1
        self._fold_users(ids[~bot], uc[~bot], batch.users)
        human = ~bot
        for (x, y), who in retype_pairs(uc[human], ts[human], ids[human], self.queries).items():
            hashes = self.typos.setdefault((x, y), set())
            for u in who:
                if len(hashes) >= USER_CAP:
                    break
                hashes.add(user_hash(batch.users[u]))
        report.events = int(len(ts))
        report.bot_events = int(bot.sum())
        self.events += report.events
        self.as_of = max(self.as_of, int(ts.max()) + 1)
        return report

    def _fold_users(self, ids: np.ndarray, users: np.ndarray, user_ids: Sequence[str]) -> None:
        """Count distinct users per query, exactly up to USER_CAP."""
        if len(ids) == 0:
            return
        pairs = np.unique(ids.astype(np.int64) * (len(user_ids) + 1) + users)
        pq, pu = pairs // (len(user_ids) + 1), pairs % (len(user_ids) + 1)
        per_query = np.bincount(pq, minlength=len(self.users))
        # A query with no history whose batch alone reaches the cap is settled at once.
        settled = (self.users == 0) & (per_query >= USER_CAP)
        self.users[settled] = USER_CAP
        open_ = (self.users < USER_CAP)[pq]
        for qi, ui in zip(pq[open_].tolist(), pu[open_].tolist(), strict=True):
            if self.users[qi] >= USER_CAP:
                continue  # reached the cap earlier in this batch: its set is gone, not empty
            seen = self.user_sets.setdefault(qi, set())
            seen.add(user_hash(user_ids[ui]))
            if len(seen) >= USER_CAP:
                self.users[qi] = USER_CAP
                del self.user_sets[qi]
            else:
                self.users[qi] = len(seen)

    def hour_share(self) -> list[float]:
        """The share of this market's traffic in each hour of the day (Indian time)."""
        total = float(self.hour_traffic.sum())
        if total <= 0:
            return [1 / 24] * 24
        return [float(x) / total for x in self.hour_traffic]

    def typo_support(self) -> Iterator[tuple[str, str, int]]:
        """``(typo, retyped, distinct users)`` for every learned pair."""
        for (x, y), who in self.typos.items():
            yield self.queries[x], self.queries[y], len(who)


@dataclass
class ScoreBoard:
    """The count aggregator's state for every market, saved between runs (no pickle)."""

    period_s: int = 86400
    half_life_s: int = HALF_LIFE_S
    markets: dict[str, MarketScores] = field(default_factory=dict)

    def market(self, name: str) -> MarketScores:
        """The state of one market, created empty on first use."""
        if name not in self.markets:
            self.markets[name] = MarketScores(name, self.period_s, self.half_life_s)
        return self.markets[name]

    def fold(
        self, batch: EventBatch, *, bot_weight: float = 0.0, picked_weight: float = 1.0
    ) -> list[FoldReport]:
        """Fold a batch of events (any markets) into the running scores."""
        return [
            self.market(m).fold(
                batch.for_market(m), bot_weight=bot_weight, picked_weight=picked_weight
            )
            for m in batch.markets
        ]

    # -- persistence: one .npz of plain arrays (strings as UTF-8 blobs), no pickles

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the state atomically."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, np.ndarray] = {}
        meta: dict[str, Any] = {
            "format": 1,
            "period_s": self.period_s,
            "half_life_s": self.half_life_s,
            "markets": {},
        }
        for k, (name, st) in enumerate(sorted(self.markets.items())):
            p = f"m{k}_"
            blob, offs = _pack_strings(st.queries)
            arrays[p + "qblob"], arrays[p + "qoff"] = blob, offs
            arrays[p + "score"] = st.score
            arrays[p + "users"] = st.users
            keys = np.array(sorted(st.user_sets), np.int64)
            arrays[p + "us_key"] = keys
            arrays[p + "us_off"] = np.cumsum([0] + [len(st.user_sets[i]) for i in keys.tolist()])
            arrays[p + "us_val"] = np.array(
                [h for i in keys.tolist() for h in sorted(st.user_sets[i])], np.int64
            )
            pairs = sorted(st.typos)
            arrays[p + "ty_pair"] = np.array(pairs, np.int64).reshape(-1, 2)
            arrays[p + "ty_off"] = np.cumsum([0] + [len(st.typos[x]) for x in pairs])
            arrays[p + "ty_val"] = np.array(
                [h for x in pairs for h in sorted(st.typos[x])], np.int64
            )
            arrays[p + "hours"] = st.hour_traffic
            meta["markets"][name] = {
                "prefix": p,
                "period": st.period,
                "as_of": st.as_of,
                "events": st.events,
            }
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
        tmp = path.with_name(path.name + ".tmp.npz")
        # numpy's stubs type savez's **kwds as its own allow_pickle flag, not as arrays
        np.savez(tmp, **arrays)  # type: ignore[arg-type]
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ScoreBoard:
        """Read a state written by :meth:`save`."""
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(bytes(z["meta"]).decode())
            board = cls(meta["period_s"], meta["half_life_s"])
            for name, m in meta["markets"].items():
                p = m["prefix"]
                queries = _unpack_strings(z[p + "qblob"], z[p + "qoff"])
                keys, offs, vals = z[p + "us_key"], z[p + "us_off"], z[p + "us_val"]
                user_sets = {
                    int(k): set(vals[offs[i] : offs[i + 1]].tolist()) for i, k in enumerate(keys)
                }
                pairs, toffs, tvals = z[p + "ty_pair"], z[p + "ty_off"], z[p + "ty_val"]
                typos = {
                    (int(a), int(b)): set(tvals[toffs[i] : toffs[i + 1]].tolist())
                    for i, (a, b) in enumerate(pairs)
                }
                board.markets[name] = MarketScores(
                    name,
                    board.period_s,
                    board.half_life_s,
                    queries=queries,
                    score=z[p + "score"].astype(np.float64),
                    users=z[p + "users"].astype(np.int32),
                    user_sets=user_sets,
                    typos=typos,
                    hour_traffic=z[p + "hours"].astype(np.float64),
                    period=m["period"],
                    as_of=m["as_of"],
                    events=m["events"],
                )
        return board


def _pack_strings(strings: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    encoded = [s.encode() for s in strings]
    offs = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum([len(e) for e in encoded], out=offs[1:])
    return np.frombuffer(b"".join(encoded), np.uint8), offs


def _unpack_strings(blob: np.ndarray, offs: np.ndarray) -> list[str]:
    raw = blob.tobytes()
    o = offs.tolist()
    return [raw[o[i] : o[i + 1]].decode() for i in range(len(o) - 1)]


__all__ = [
    "HALF_LIFE_S",
    "PERIODS",
    "USER_CAP",
    "EventBatch",
    "FoldReport",
    "LogError",
    "MarketScores",
    "ScoreBoard",
    "decay_factor",
    "events_from_table",
    "read_query_log",
    "read_table",
    "steady_state",
    "user_hash",
]
