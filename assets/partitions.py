"""Every research session is a partition of the asset graph."""

import dagster as dg

SESSIONS = "session"
sessions_partitions = dg.DynamicPartitionsDefinition(name=SESSIONS)
