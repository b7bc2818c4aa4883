"""`atom trials`: how many repeats tell a drop in pass rate from noise, before paying for them."""

from __future__ import annotations

import click

from pytest_atom.baseline import stats
from pytest_atom.baseline.gate import ALPHA, POWER
from pytest_atom.words import plural

_RATE = click.FloatRange(0, 1)


@click.command()
@click.option("--p", "p", type=_RATE, required=True, help="the pass rate now (the baseline's).")
@click.option("--q", "q", type=_RATE, required=True, help="the lower pass rate to detect.")
@click.option(
    "--alpha",
    type=click.FloatRange(0, 0.5, min_open=True),
    default=ALPHA,
    show_default=True,
    help="the chance of calling noise a regression.",
)
@click.option(
    "--power",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=POWER,
    show_default=True,
    help="the chance of catching a real drop of this size.",
)
@click.option(
    "--specs",
    type=click.IntRange(min=1),
    default=None,
    help="also answer for a suite of this many specs, each dropping so.",
)
def trials(p: float, q: float, alpha: float, power: float, specs: int | None) -> None:
    """How many repeats (--atom-repeat) of a spec, in the baseline and in the run, let the
    baseline gate see a drop in pass rate from P to Q: Fisher's exact test for one spec
    (its exact power), the Cochran-Mantel-Haenszel test for a suite of SPECS specs.

        atom trials --p 0.9 --q 0.5 --specs 10
    """
    if q >= p:
        raise click.UsageError(f"--q ({q:g}) must be below --p ({p:g}): it is the drop to detect")
    one = stats.repeats_needed(p, q, alpha, power)
    suite = stats.suite_repeats_needed(p, q, specs, alpha, power) if specs else None
    assert one is not None  # q < p: always a drop
    click.echo(
        f"a drop in pass rate from {p:g} to {q:g}, alpha {alpha:g}, power {power:g} "
        "(repeats on each side: the baseline's and the run's)"
    )
    exact = (
        f"exact power {stats.fisher_power(one, p, q, alpha):.3f}"
        if one <= stats.EXACT_LIMIT
        else "normal approximation"
    )
    click.echo(f"one spec: {one} repeats (Fisher's exact test, one-sided; {exact})")
    if specs and suite is not None:
        click.echo(
            f"a suite of {plural(specs, 'spec')}: {suite} repeats per spec (Cochran-Mantel-Haenszel "
            "test stratified by spec, one-sided, at alpha / 2 as the gate tests a suite's "
            "total; normal approximation)"
        )
