"""Watching a question (issue 32): `mole watch SESSION --every daily|weekly|CRON --usd X`.

A watch re-runs a finished session's question on its own schedule. Each run is a rerun session
(mole_dag.session.create_rerun) of the latest finished session of the chain, with the watch's
budget: no run without a budget, and the ledger's ceiling holds per run, as for any session.
The rerun's report stores its difference from the run before (session_diffs); when that
difference is material, the watch's `--notify` command gets its JSON on standard input, and
only then.

Who runs it: the Dagster schedule `watched_questions` (assets/watch.py) looks every few
minutes, asks `due` which watches have a tick of their own schedule since their last run, and
launches one run per watch and tick. That run calls `start_run`, drives the session, then
`finish_run`. Plain Python over the store; Dagster's own cron reading decides the ticks, so
`mole watch` accepts exactly the schedules the schedule will run."""

from __future__ import annotations

import json
import secrets
import shlex
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from mole_dag.core import SessionStatus, Unit
from mole_dag.redaction import redact
from mole_dag.session import OPEN, RerunRefused, check_rerun, create_rerun
from mole_dag.store import Store, q, utcnow
from mole_dag.store.records import SessionRow, WatchRow, WatchRunRow

# The words for the usual cadences, as cron (UTC): midnight, and Monday midnight.
EVERY = {"daily": "0 0 * * *", "weekly": "0 0 * * 1"}
# A --notify command that does not finish in this long is stopped: a watch run must end.
NOTIFY_TIMEOUT_S = 120
# How far back a missed tick is looked for (the daemon was off): ticks older than this fold
# into the latest one anyway, and a minutely cron over years would be a long walk.
LOOKBACK = timedelta(days=31)


class WatchRefused(ValueError):
    """A watch that cannot be registered, removed or run; the message is one line."""


@dataclass(frozen=True)
class WatchStatus:
    """A watch as `mole watch --list` and the UI show it: the watch, its latest run, and
    the change that run found (from the stored diff)."""

    watch: WatchRow
    runs: int
    last: WatchRunRow | None
    last_change: str


def cron_of(every: str) -> str:
    """The cron string for --every: daily, weekly, or a cron string Dagster accepts."""
    text = " ".join(every.split())
    cron = EVERY.get(text.lower(), text)
    if not cron:
        raise WatchRefused("--every needs daily, weekly or a cron string like '0 6 * * 1'")
    try:
        _ticks(cron, utcnow())
    except Exception as exc:
        # Dagster's own check (DagsterInvalidDefinitionError): the schedule runs what it accepts.
        if type(exc).__name__ != "DagsterInvalidDefinitionError":
            raise
        raise WatchRefused(
            f"--every {every!r} is not daily, weekly or a valid cron string (five fields, e.g. "
            "'0 6 * * 1' for Mondays at 06:00 UTC)"
        ) from None
    return cron


def _ticks(cron: str, since: datetime) -> Any:
    # Imported here: the CLI lists and removes watches without loading Dagster.
    import dagster as dg

    return dg.TimeWindowPartitionsDefinition(
        cron_schedule=cron,
        start=since.replace(tzinfo=UTC),
        fmt="%Y-%m-%d-%H:%M",
        timezone="UTC",
        # The window in progress too: its start is the latest tick.
        end_offset=1,
    )


def latest_tick(cron: str, since: datetime, now: datetime) -> datetime | None:
    """The latest tick of `cron` after `since` and at or before `now` (naive UTC), or None."""
    since = max(since, now - LOOKBACK)
    parts = _ticks(cron, since)
    keys = parts.get_partition_keys(current_time=now.replace(tzinfo=UTC))
    if not keys:
        return None
    tick = parts.time_window_for_partition_key(keys[-1]).start.astimezone(UTC)
    tick = tick.replace(tzinfo=None)
    return tick if since < tick <= now else None


def _new_id() -> str:
    return f"w-{secrets.token_hex(3)}"


def add_watch(
    store: Store,
    session_id: str,
    every: str,
    unit: Unit,
    budget: int,
    notify: str | None = None,
) -> WatchRow:
    """Register a watch of `session_id`'s question. Checks first (an unknown or running
    session, a bad schedule, an empty --notify): nothing is written for a refused one."""
    cron = cron_of(every)
    try:
        row = check_rerun(store, session_id)
    except RerunRefused as exc:
        raise WatchRefused(str(exc)) from None
    if notify is not None:
        try:
            argv = shlex.split(notify)
        except ValueError as exc:
            raise WatchRefused(f"--notify {notify!r} does not parse: {exc}") from None
        if not argv:
            raise WatchRefused("--notify needs a command")
    watch = WatchRow(
        _new_id(),
        row.id,
        row.question,
        " ".join(every.split()),
        cron,
        unit,
        budget,
        notify,
        utcnow(),
    )
    store.transact(
        lambda cur: cur.execute(
            q("watch_insert"),
            {
                "id": watch.id,
                "session_id": watch.session_id,
                "question": watch.question,
                "every": watch.every,
                "cron": watch.cron,
                "unit": str(watch.unit),
                "budget": watch.budget,
                "notify": watch.notify,
                "now": watch.created_at,
            },
        )
    )
    return watch


def get_watch(store: Store, watch_id: str) -> WatchRow:
    row = store.one(WatchRow, q("watch_get"), {"id": watch_id})
    if row is None or row.removed_at is not None:
        raise WatchRefused(f"no watch {watch_id!r}; `mole watch --list` lists them")
    return row


def remove_watch(store: Store, watch_id: str) -> WatchRow:
    """Stop a watch. Its runs and their spend stay (view watch_spend)."""
    row = get_watch(store, watch_id)
    store.transact(lambda cur: cur.execute(q("watch_remove"), {"id": watch_id, "now": utcnow()}))
    return row


def runs_of(store: Store, watch_id: str) -> list[WatchRunRow]:
    """A watch's runs, latest first."""
    return store.many(WatchRunRow, q("watch_runs_of"), {"watch_id": watch_id})


def list_watches(store: Store) -> list[WatchStatus]:
    out = []
    for w in store.many(WatchRow, q("watches_active")):
        runs = runs_of(store, w.id)
        last = runs[0] if runs else None
        out.append(WatchStatus(w, len(runs), last, _change_line(store, last)))
    return out


def _change_line(store: Store, run: WatchRunRow | None) -> str:
    """What the latest run found, in one line."""
    if run is None:
        return "not run yet"
    if run.status != "done":
        return f"run {run.session_id} {run.status}"
    diff = _stored_diff(store, run.previous_session_id, run.session_id)
    if diff is None:
        return f"run {run.session_id}: no difference stored"
    _material, got = diff
    f, s = got["findings"], got["sources"]
    if not _material:
        return f"{run.session_id}: nothing material changed"
    return (
        f"{run.session_id}: {len(f['new'])} new, {len(f['removed'])} removed, "
        f"{len(f['changed'])} changed, {f['same']} same; sources {len(s['added'])} added, "
        f"{len(s['removed'])} removed, {len(s['changed'])} changed"
        + ("; the answer changed" if got["answer_changed"] else "")
    )


def _stored_diff(store: Store, old: str, new: str) -> tuple[bool, dict[str, Any]] | None:
    row = store.row(q("session_diff_get"), {"old_session_id": old, "new_session_id": new})
    if row is None:
        return None
    return bool(row["material"]), json.loads(row["diff_json"])


def last_session(store: Store, watch: WatchRow) -> str:
    """The session the next run re-runs: the latest run that finished, else the one watched."""
    for run in runs_of(store, watch.id):
        if run.status == "done":
            return run.session_id
    return watch.session_id


def due(store: Store, now: datetime) -> list[tuple[WatchRow, datetime]]:
    """Each active watch with a tick of its schedule after its last run's tick (or its
    registration) and at or before `now`, with that tick. A watch whose run for an earlier
    tick is still going waits for it."""
    out = []
    for w in store.many(WatchRow, q("watches_active")):
        runs = runs_of(store, w.id)
        if runs and runs[0].status == "running" and _open(store, runs[0].session_id):
            continue
        since = runs[0].due_at if runs else w.created_at
        tick = latest_tick(w.cron, since, now)
        if tick is not None:
            out.append((w, tick))
    return out


def _open(store: Store, session_id: str) -> bool:
    row = store.one(SessionRow, q("session_get"), {"session_id": session_id})
    return row is not None and row.status in OPEN


def start_run(
    store: Store, watch_id: str, due_at: datetime, *, session_id: str | None = None
) -> WatchRunRow:
    """The run of `watch_id` for the tick `due_at`: its rerun session created, with the
    watch's budget, and recorded. Idempotent per tick: a run already started for it is
    returned, not started twice (a retried Dagster run). A run before it whose process died
    (its session since ended, by the research driver sensor or as failed) is finished first,
    so its difference is recorded and the chain goes on from the right session."""
    watch = get_watch(store, watch_id)
    seen = store.one(WatchRunRow, q("watch_run_get"), {"watch_id": watch_id, "due_at": due_at})
    if seen is not None:
        return seen
    for run in runs_of(store, watch_id):
        if run.status == "running" and not _open(store, run.session_id):
            finish_run(store, watch_id, run.due_at)
    try:
        prev = check_rerun(store, last_session(store, watch))
    except RerunRefused as exc:
        raise WatchRefused(f"watch {watch_id}: {exc}") from None
    bal = create_rerun(store, prev, watch.unit, watch.budget, session_id=session_id)
    now = utcnow()

    def record(cur: Any) -> None:
        # Driven by Dagster: if this run dies, the research_driver sensor finishes the session.
        cur.execute(q("session_driver_set"), {"driver": "dagster", "session_id": bal.session_id})
        cur.execute(
            q("watch_run_insert"),
            {
                "watch_id": watch_id,
                "due_at": due_at,
                "session_id": bal.session_id,
                "previous_session_id": prev.id,
                "now": now,
            },
        )

    store.transact(record)
    got = store.one(WatchRunRow, q("watch_run_get"), {"watch_id": watch_id, "due_at": due_at})
    assert got is not None  # written just above
    return got


@dataclass(frozen=True)
class WatchOutcome:
    run: WatchRunRow
    material: bool | None
    notified: bool
    notify_error: str | None
    diff: dict[str, Any] | None


def finish_run(store: Store, watch_id: str, due_at: datetime) -> WatchOutcome:
    """After the run's session ended: its stored difference read (computed and stored if the
    report did not store one), --notify run with the JSON when it is material, and the run
    recorded. A session that did not finish is a failed run: nothing is compared or sent."""
    from mole_dag.output.changes import as_json, diff_sessions, write_diff

    watch = get_watch(store, watch_id)
    run = store.one(WatchRunRow, q("watch_run_get"), {"watch_id": watch_id, "due_at": due_at})
    if run is None:
        raise WatchRefused(f"watch {watch_id} has no run for {due_at:%Y-%m-%d %H:%M}")
    sess = store.one(SessionRow, q("session_get"), {"session_id": run.session_id})
    material: bool | None = None
    diff: dict[str, Any] | None = None
    notified, error = False, None
    status = "failed"
    if sess is not None and sess.status == SessionStatus.DONE:
        status = "done"
        stored = _stored_diff(store, run.previous_session_id, run.session_id)
        if stored is None:
            d = diff_sessions(store, run.previous_session_id, run.session_id)
            store.transact(lambda cur: write_diff(cur, d))
            stored = (d.material, as_json(d))
        material, diff = stored
        if material and watch.notify:
            error = notify(watch.notify, diff)
            notified = error is None
    store.transact(
        lambda cur: cur.execute(
            q("watch_run_finish"),
            {
                "watch_id": watch_id,
                "due_at": due_at,
                "status": status,
                "now": utcnow(),
                "material": material,
                "notified": notified,
                "notify_error": error,
            },
        )
    )
    after = store.one(WatchRunRow, q("watch_run_get"), {"watch_id": watch_id, "due_at": due_at})
    assert after is not None
    return WatchOutcome(after, material, notified, error, diff)


def notify(command: str, diff: dict[str, Any]) -> str | None:
    """Run `command` (split as a shell would, run without one) with the diff's JSON on its
    standard input. None when it succeeded, else why not in one line, secrets masked (the
    command may carry a token; it is never logged)."""
    payload = json.dumps(diff, ensure_ascii=False, sort_keys=True)
    try:
        done = subprocess.run(
            shlex.split(command),
            input=payload.encode("utf-8"),
            capture_output=True,
            timeout=NOTIFY_TIMEOUT_S,
            check=False,
        )
    except (OSError, ValueError) as exc:
        return redact(f"--notify could not start: {exc}")[:500]
    except subprocess.TimeoutExpired:
        return f"--notify did not finish within {NOTIFY_TIMEOUT_S} s"
    if done.returncode != 0:
        said = " ".join(done.stderr.decode("utf-8", "replace").split())
        return redact(f"--notify exited {done.returncode}: {said}")[:500]
    return None


def watches_markdown(store: Store) -> str:
    """The watched questions with their last change, as a Markdown table (the UI's view)."""
    rows = list_watches(store)
    if not rows:
        return "No watched questions. `mole watch SESSION --every daily --usd 0.20` adds one."
    out = ["| watch | question | every | runs | last change |", "|---|---|---|---|---|"]
    for s in rows:
        cells = [s.watch.id, s.watch.question, s.watch.every, str(s.runs), s.last_change]
        out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(out)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")
