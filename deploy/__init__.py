"""The scale-out profile (README, "Scale-out profile"): the project's definitions with Dagster's
storage on PostgreSQL and steps on a dask.distributed cluster. Run from a checkout: the dask
workers import this package from the project root."""
