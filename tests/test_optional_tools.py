"""The test suite on a machine without the optional system tools and packages.

The README's test command must pass on a fresh machine: tests that need Chromium,
chromedriver or torch skip with the reason instead of breaking collection. Here
the whole suite is collected in a subprocess whose ``PATH`` holds only the
interpreter's folder (no chromium, no chromedriver) and where ``import torch``
fails as it does when torch is not installed.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def _without_tools(tmp_path: Path) -> dict[str, str]:
    """An environment with no browser on PATH and a ``torch`` that is not installed."""
    hidden = tmp_path / "hidden" / "torch"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text(
        'raise ModuleNotFoundError("No module named \'torch\'", name="torch")\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLSYSIM_REQUIRE")}
    env["PATH"] = str(Path(sys.executable).parent)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(tmp_path / "hidden")])
    return env


def test_the_environment_really_hides_the_tools(tmp_path):
    env = _without_tools(tmp_path)
    code = (
        "import shutil, importlib.util as u; "
        "print(shutil.which('chromium'), shutil.which('chromedriver')); import torch"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.split() == ["None", "None"]
    assert "ModuleNotFoundError" in done.stderr


def test_collection_without_browser_or_torch_has_no_errors(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-rs", "-p", "no:randomly"],
        env=_without_tools(tmp_path),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert "error" not in out.splitlines()[-1].lower(), out[-3000:]
    # the modules that need the missing tools are skipped, each with its reason
    assert "SKIPPED" in out and "chromium" in out and "torch" in out, out[-3000:]


def _extras_closure(extras, optional):
    """The requirements the extras pull, following ``mlsysim[...]`` references."""
    seen, todo, requirements = set(), list(extras), []
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for requirement in optional[extra]:
            nested = re.fullmatch(r"mlsysim\[([\w,\s-]+)\]", requirement)
            if nested:
                todo += [e.strip() for e in nested[1].split(",")]
            else:
                requirements.append(requirement)
    return requirements


def test_the_readme_test_command_pulls_no_torch_and_ci_installs_it():
    sys.path.insert(0, str(ROOT / ".ci"))
    try:
        from quickstart import quickstart_commands
    finally:
        sys.path.pop(0)
    commands = quickstart_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(commands) == 2
    extras = re.search(r'pip install -e "\.\[([\w,]+)\]"', commands[1])
    assert extras, commands[1]
    optional = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    pulled = _extras_closure(extras[1].split(","), optional)
    assert not [r for r in pulled if r.startswith("torch")], pulled
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'pip install -q "torch==2.13.0"' in ci and "MLSYSIM_REQUIRE_TORCH=1" in ci
    assert ci.index("torch==2.13.0") < ci.index("quickstart.py")  # before the README's commands
