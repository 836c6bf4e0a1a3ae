"""Errors a user can act on.  The CLI prints them as one line and exits 2."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class UserError(Exception):
    """Bad input or a missing prerequisite: one line saying what is wrong and what to do."""


class RunFailed(Exception):
    """A run that went through but must not count (e.g. the source table changed under it): one line, exit 1."""


def one_line_errors(fn: F) -> F:
    """Decorator for click commands: a UserError becomes one line on stderr and exit status 2,
    never a traceback wall."""
    import click

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except UserError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(2)
        except RunFailed as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]
