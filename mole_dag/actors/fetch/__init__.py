"""Fetching pages from the open web without letting a page choose where we connect, how much we
read, or how long we wait. See fetcher.py for the order of the checks."""

from mole_dag.actors.fetch.fetcher import Fetched, Fetcher, FetchFailed, FetchLimits
from mole_dag.actors.fetch.guard import Policy, SSRFRefused

__all__ = ["FetchFailed", "FetchLimits", "Fetched", "Fetcher", "Policy", "SSRFRefused"]
