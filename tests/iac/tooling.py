"""Find terraform and the offline AWS provider mirror; the iac tests skip when either is missing.

The mirror is a directory laid out the way `terraform init -plugin-dir=DIR` expects
(``DIR/registry.terraform.io/hashicorp/aws/<version>/<os_arch>/terraform-provider-aws_*``, or the
packed ``.zip`` form one level up). It is looked for in LADDER_TF_PLUGIN_DIR, then /opt/tf-plugins,
then by searching /opt and ~/.terraform.d for a ``terraform-provider-aws*`` file.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

PLUGIN_DIR_ENV = "LADDER_TF_PLUGIN_DIR"
DEFAULT_PLUGIN_DIR = Path("/opt/tf-plugins")
SEARCH_ROOTS = (Path("/opt"), Path.home() / ".terraform.d")
# Deep enough for <root>/<host>/<namespace>/<type>/<version>/<os_arch>/<binary> under a search root.
MAX_SEARCH_DEPTH = 8


def find_terraform() -> str | None:
    """Path of the terraform binary on PATH, or None."""
    return shutil.which("terraform")


def _holds_aws_provider(directory: Path) -> bool:
    return any(directory.glob("*/hashicorp/aws/*"))


def _mirror_root_of(binary: Path) -> Path | None:
    """The -plugin-dir that contains ``binary``: the parent of the ``<host>/hashicorp/aws`` triple."""
    for ancestor in binary.parents:
        if ancestor.parent.name == "hashicorp" and ancestor.name == "aws":
            return ancestor.parent.parent.parent
    return None


def _search(root: Path) -> Path | None:
    if not root.is_dir():
        return None
    base_depth = len(root.parts)
    for current, dirs, files in os.walk(root):
        if len(Path(current).parts) - base_depth >= MAX_SEARCH_DEPTH:
            dirs.clear()
        for name in files:
            if name.startswith("terraform-provider-aws"):
                mirror = _mirror_root_of(Path(current) / name)
                if mirror is not None:
                    return mirror
    return None


def find_plugin_mirror() -> Path | None:
    """The AWS provider mirror directory, or None when none can be found."""
    configured = os.environ.get(PLUGIN_DIR_ENV)
    if configured:
        path = Path(configured)
        return path if _holds_aws_provider(path) else None
    if _holds_aws_provider(DEFAULT_PLUGIN_DIR):
        return DEFAULT_PLUGIN_DIR
    for root in SEARCH_ROOTS:
        found = _search(root)
        if found is not None:
            return found
    return None
