"""Errors a user can act on.  The CLI prints them as one line and exits 2."""


class UserError(Exception):
    """Bad input or a missing prerequisite: one line saying what is wrong and what to do."""


class EngineUnavailable(UserError):
    """An engine cannot run on this machine (missing module, runtime, Java...)."""


def one_line_errors(fn):
    """Decorator for click commands: a UserError becomes one line on stderr and exit status 2,
    never a traceback wall."""
    import functools
    import sys

    import click

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except UserError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(2)

    return wrapper
