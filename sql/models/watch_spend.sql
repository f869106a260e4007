-- What each watched question has cost (issue 32): one row per watch, removed ones included,
-- with its runs and their spend in the watch's unit (spent + overrun, the figure held against
-- each run's ceiling); `usd` for a dollar watch, NULL for a token one.
SELECT
    w.id                                                     AS watch_id,
    w.question,
    w.every,
    w.unit,
    w.budget                                                 AS budget_per_run,
    w.removed_at IS NOT NULL                                 AS removed,
    count(r.session_id)                                      AS runs,
    count(*) FILTER (WHERE r.material)                       AS material_runs,
    coalesce(sum(s.spent + s.overrun), 0)::BIGINT            AS spent,
    CASE WHEN w.unit = 'usd_micros'
         THEN (coalesce(sum(s.spent + s.overrun), 0)::DECIMAL(18, 6) / 1000000)::DECIMAL(18, 6)
    END                                                      AS usd,
    max(r.started_at)                                        AS last_run_at
FROM watches w
LEFT JOIN watch_runs r ON r.watch_id = w.id
LEFT JOIN sessions s ON s.id = r.session_id
GROUP BY w.id, w.question, w.every, w.unit, w.budget, w.removed_at
