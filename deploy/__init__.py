"""The scale-out profile (docs/scale-out.md, deploy/README.md): the project's definitions with
Dagster's storage on PostgreSQL and steps on a dask.distributed cluster. Run from a checkout: the
dask workers import this package from the project root."""
