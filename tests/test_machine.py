"""The suite's hang limits follow the machine's load (tests/machine.py, issue 23)."""

from __future__ import annotations

import pytest

from tests.machine import bound, slowdown


def test_the_per_test_hang_limit_is_scaled_by_the_measured_slowdown(
    request: pytest.FixtureRequest,
) -> None:
    marker = request.node.get_closest_marker("timeout")
    limit = float(request.config.getini("timeout"))
    if slowdown() > 1.0:
        assert marker is not None and marker.args[0] == pytest.approx(limit * slowdown())
    assert bound(10) >= 10


@pytest.mark.timeout(7)
def test_a_tests_own_hang_limit_is_scaled_too(request: pytest.FixtureRequest) -> None:
    marker = request.node.get_closest_marker("timeout")
    assert marker is not None and marker.args[0] == pytest.approx(7 * slowdown())
