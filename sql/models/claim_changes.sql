-- What changed between a session and the one it re-runs (issue 32): one row per material
-- change, with both sessions' ids. `kind` is new, removed (with its cause) or changed (both
-- quotes and both sources, and what differs). Findings that stayed the same have no row.
SELECT
    f.old_session_id,
    f.new_session_id,
    f.kind,
    f.why,
    f.old_claim_id,
    oc.quote  AS old_quote,
    os.url    AS old_source,
    f.new_claim_id,
    nc.quote  AS new_quote,
    ns.url    AS new_source,
    f.created_at
FROM finding_changes f
LEFT JOIN claims oc  ON oc.id = f.old_claim_id
LEFT JOIN sources os ON os.id = oc.source_id
LEFT JOIN claims nc  ON nc.id = f.new_claim_id
LEFT JOIN sources ns ON ns.id = nc.source_id
