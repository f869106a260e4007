"""The planner: turns the question (round 1) and a digest of counts (later rounds) into
sub-questions and leads. It never sees page text."""

from mole_dag.planner.plan import PlanResult, build_digest, plan_round

__all__ = ["PlanResult", "build_digest", "plan_round"]
