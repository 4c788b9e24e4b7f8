"""Exceptions raised by gpu_avatar.

Every error a user can provoke is an ``AvatarError`` (a ``ValueError``) whose message names
the offending argument or column and says what to do about it.
"""


class AvatarError(ValueError):
    """Invalid input or parameter: the message names it and says how to fix it."""


class BackendUnavailableError(AvatarError, RuntimeError):
    """The requested compute backend cannot run on this machine."""


class MissingExtraError(AvatarError, ImportError):
    """An optional dependency is not installed: the message names the extra to install."""


def import_extra(module: str, extra: str, purpose: str):
    """Import the optional ``module``, or raise ``MissingExtraError`` naming the pip extra."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtraError(
            f"{purpose} needs {module.split('.')[0]}, which is not installed: "
            f"pip install 'gpu_avatar[{extra}]'"
        ) from error
