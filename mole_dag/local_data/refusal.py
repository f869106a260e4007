"""Why the boundary refused something. A fixed vocabulary mirrored by a CHECK constraint in
sql/migrations/0004_local_data.sql (widened by 0010_local_row_sets.sql and 0015_local_audit.sql),
so a refusal can be counted by reason and a reason the code can name is one the schema accepts.

A refusal's detail names columns and constructs, never a value from the data: it is recorded and
shown, and must be as safe to print as an envelope."""

from __future__ import annotations

from enum import StrEnum


class Stage(StrEnum):
    HYPOTHESIS = "hypothesis"
    SQLGUARD = "sqlguard"
    GATE = "gate"
    EXFIL = "exfil"


class Reason(StrEnum):
    # hypothesis: the model's choice
    UNKNOWN_TEMPLATE = "unknown_template"
    BAD_ARGUMENTS = "bad_arguments"
    UNKNOWN_COLUMN = "unknown_column"
    WITHHELD_COLUMN = "withheld_column"
    WRONG_COLUMN_ROLE = "wrong_column_role"
    # sqlguard: the statement
    PARSE_ERROR = "parse_error"
    MULTIPLE_STATEMENTS = "multiple_statements"
    NOT_SELECT = "not_select"
    SET_OPERATION = "set_operation"
    CTE = "cte"
    SUBQUERY = "subquery"
    JOIN = "join"
    TABLE_FUNCTION = "table_function"
    UNKNOWN_TABLE = "unknown_table"
    STAR = "star"
    WINDOW_FUNCTION = "window_function"
    FUNCTION_NOT_ALLOWED = "function_not_allowed"
    AGGREGATE_ARGUMENT = "aggregate_argument"
    ROW_VALUES = "row_values"
    CLAUSE_NOT_ALLOWED = "clause_not_allowed"
    CONSTRUCT_NOT_ALLOWED = "construct_not_allowed"
    # gate: running it
    BELOW_FLOOR = "below_floor"
    EXECUTION_ERROR = "execution_error"
    # gate, across answers: issue 11's pairwise overlap control (migration 0010). No longer
    # written: the audit below subsumes both; kept so that older refusals still read.
    QUERY_OVERLAP = "query_overlap"
    SECONDARY_SUPPRESSION = "secondary_suppression"
    # gate, the query audit over every answer given on the data (audit.py; migration 0015)
    QUERY_AUDIT = "query_audit"
    AUDIT_UNVERIFIED = "audit_unverified"
    # exfil: the envelope, checked against the rows it came from
    LEAK_UNDER_FLOOR = "leak_under_floor"
    LEAK_COUNT_MISMATCH = "leak_count_mismatch"
    LEAK_WITHHELD_VALUE = "leak_withheld_value"
    LEAK_WITHHELD_COLUMN = "leak_withheld_column"
    LEAK_UNKNOWN_LABEL = "leak_unknown_label"


class Refused(Exception):
    """A request the boundary will not answer, with the stage that refused it and why."""

    def __init__(self, stage: Stage, reason: Reason, detail: str) -> None:
        self.stage = stage
        self.reason = reason
        self.detail = detail
        # Set by the exfil check: the hash of the envelope it withheld (the envelope is not kept).
        self.envelope_sha256: str | None = None
        super().__init__(f"{stage}: {reason}: {detail}")
