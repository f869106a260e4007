"""The research jobs. One Dagster run = one research round; the report is its own job because it
runs once, after the rounds, and spends the escrow."""

import dagster as dg

from assets.research import ROUND_ASSETS, report

research_round = dg.define_asset_job(
    "research_round",
    selection=dg.AssetSelection.assets(*ROUND_ASSETS),
    description="One round: plan, execute leads, mine, verify, score.",
)
research_report = dg.define_asset_job(
    "research_report",
    selection=dg.AssetSelection.assets(report),
    description="Release escrow and write the report.",
)
