"""The executor: leases leads, runs each through its actor, stores sources and chunks."""

from mole_dag.executor.run import ExecResult, execute_leads

__all__ = ["ExecResult", "execute_leads"]
