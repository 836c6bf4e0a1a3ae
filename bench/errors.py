"""Errors a user can act on.  The CLI prints them as one line and exits 2."""


class UserError(Exception):
    """Bad input or a missing prerequisite: one line saying what is wrong and what to do."""


class EngineUnavailable(UserError):
    """An engine cannot run on this machine (missing module, runtime, Java...)."""
