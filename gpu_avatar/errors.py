"""Exceptions raised by gpu_avatar.

Every error a user can provoke is an ``AvatarError`` (a ``ValueError``) whose message names
the offending argument or column and says what to do about it.
"""


class AvatarError(ValueError):
    """Invalid input or parameter: the message names it and says how to fix it."""


class BackendUnavailableError(AvatarError, RuntimeError):
    """The requested compute backend cannot run on this machine."""
