-- Spend per session, role and stage, from the append-only ledger (the source of truth).
SELECT
    session_id,
    role,
    stage,
    count(*)                                                    AS calls,
    coalesce(sum(actual), 0)::BIGINT                            AS spent,
    coalesce(sum(overrun), 0)::BIGINT                           AS overrun,
    coalesce(sum(reserved) FILTER (WHERE status = 'reserved'), 0)::BIGINT AS held,
    count(*) FILTER (WHERE status = 'released')                 AS released_calls,
    count(*) FILTER (WHERE status = 'expired')                  AS expired_calls
FROM tool_calls
GROUP BY session_id, role, stage
