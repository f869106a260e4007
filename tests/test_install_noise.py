"""Issue 33, item 8: `make demo` printed setuptools' "BuildBackendWarning: Editable
installation" (pip re-emits every warning of the build backend as a BuildBackendWarning). The
Makefile's install runs with a warnings filter for it; this checks the filter, as the Makefile
sets it, silences that warning as pip emits it, and nothing else."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from mole_dag.paths import PROJECT_ROOT

# What pip does with a backend's warning (pip/_vendor/pyproject_hooks/_impl.py), with the text
# setuptools' editable_wheel gives it (InformationOnly.emit("Editable installation.", ...)).
EMIT = """
import warnings
class BuildBackendWarning(UserWarning):
    pass
warnings.warn_explicit(
    message="Editable installation.\\n!!\\n\\n   Please be careful with folders in your working",
    category=BuildBackendWarning, filename="editable_wheel.py", lineno=576,
)
warnings.warn_explicit(
    message="Something else went wrong", category=BuildBackendWarning,
    filename="build_meta.py", lineno=1,
)
"""


def _filter() -> str:
    text = (PROJECT_ROOT / "Makefile").read_text("utf-8")
    m = re.search(r"^QUIET_INSTALL := PYTHONWARNINGS='([^']*)'$", text, re.M)
    assert m, "the Makefile's install no longer sets its warnings filter"
    assert "$(QUIET_INSTALL) $(BIN)/python -m pip install" in text
    return m.group(1)


def _stderr(env_filter: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    if env_filter is not None:
        env["PYTHONWARNINGS"] = env_filter
    got = subprocess.run(
        [sys.executable, "-c", EMIT], env=env, capture_output=True, text=True, check=True
    )
    return got.stderr


def test_the_install_filter_hides_the_editable_notice_only() -> None:
    loud = _stderr(None)
    assert "Editable installation" in loud  # what make demo printed
    quiet = _stderr(_filter())
    assert "Editable installation" not in quiet
    assert "Something else went wrong" in quiet  # other warnings still show
