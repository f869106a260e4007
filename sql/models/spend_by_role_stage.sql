-- Spend per session, role and stage, from the append-only ledger (the source of truth).
-- Amounts are in the session's own unit, named in `unit` ('tokens' or 'usd_micros'), so a sum
-- across sessions can be grouped by it instead of adding tokens to micro-dollars; `usd` is what
-- the calls cost in dollars (spent + overrun, the figure held against the ceiling), NULL for a
-- token session, which has no price.
SELECT
    t.session_id,
    s.unit,
    t.role,
    t.stage,
    count(*)                                                    AS calls,
    coalesce(sum(t.actual), 0)::BIGINT                          AS spent,
    coalesce(sum(t.overrun), 0)::BIGINT                         AS overrun,
    coalesce(sum(t.reserved) FILTER (WHERE t.status = 'reserved'), 0)::BIGINT AS held,
    count(*) FILTER (WHERE t.status = 'released')               AS released_calls,
    count(*) FILTER (WHERE t.status = 'expired')                AS expired_calls,
    -- Cast after the division: numeric / integer has no fixed scale on PostgreSQL (psql printed
    -- 0.000000000000000000000000), and DuckDB makes a DOUBLE of it. DECIMAL(18, 6) prints as
    -- money, to the micro-dollar, in any client.
    CASE WHEN s.unit = 'usd_micros'
         THEN ((coalesce(sum(t.actual), 0) + coalesce(sum(t.overrun), 0))::DECIMAL(18, 6)
              / 1000000)::DECIMAL(18, 6)
    END                                                         AS usd
FROM tool_calls t
JOIN sessions s ON s.id = t.session_id
GROUP BY t.session_id, s.unit, t.role, t.stage
