"""The `atom` command (placeholder until the CLI issue lands)."""

from __future__ import annotations

import click


@click.group()
@click.version_option(package_name="pytest-atom")
def main() -> None:
    """Run Claude Code atoms and their specs."""
