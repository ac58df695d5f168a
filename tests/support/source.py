"""Where a module's source lies: the folders (app/, workers/) are not the import names."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The same mapping as [tool.setuptools.package-dir] in pyproject.toml.
FOLDERS = {"agentlasso_workers": ROOT / "workers", "agentlasso": ROOT / "app"}


def package_dir(module: str) -> Path:
    """The folder of a package, found as Python finds it."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.submodule_search_locations, f"{module} is a package"
    return Path(next(iter(spec.submodule_search_locations)))


def module_of(path: Path) -> str:
    """The import name of a source file under app/ or workers/."""
    path = path.resolve()
    for name, folder in FOLDERS.items():
        if path.is_relative_to(folder):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            return ".".join((name, *parts))
    raise ValueError(f"{path} is not under app/ or workers/")
