-- Dead ends per session, sub-question and cause: what the planner's digest counts.
SELECT
    d.session_id,
    d.sub_question_id,
    sq.text              AS sub_question,
    d.cause,
    count(*)             AS dead_ends
FROM dead_ends d
LEFT JOIN sub_questions sq ON sq.id = d.sub_question_id
GROUP BY d.session_id, d.sub_question_id, sq.text, d.cause
