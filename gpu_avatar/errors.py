"""Exceptions raised by gpu_avatar.

Every error gpu_avatar raises on purpose is a ``GpuAvatarError`` whose message names the
offending argument, column or file and says what to do about it:

- ``AvatarError`` (also a ``ValueError``): an invalid input or parameter value;
- ``AvatarTypeError`` (an ``AvatarError``, also a ``TypeError``): an argument of the wrong type;
- ``BackendUnavailableError`` (also a ``RuntimeError``): the requested backend cannot run here;
- ``MissingExtraError`` (also an ``ImportError``): an optional dependency is not installed.
"""


class GpuAvatarError(Exception):
    """An error raised by gpu_avatar on purpose; the message says what to do."""


class AvatarError(GpuAvatarError, ValueError):
    """Invalid input or parameter: the message names it and says how to fix it."""


class AvatarTypeError(AvatarError, TypeError):
    """An argument of the wrong type: the message names it and the type expected."""


class BackendUnavailableError(GpuAvatarError, RuntimeError):
    """The requested compute backend cannot run on this machine."""


class MissingExtraError(GpuAvatarError, ImportError):
    """An optional dependency is not installed: the message names the extra to install."""


def import_extra(module: str, extra: str | None, purpose: str, install: str | None = None):
    """Import the optional ``module``, or raise ``MissingExtraError`` saying how to install
    it: the pip extra ``extra``, or ``install`` for what pip does not carry (RAPIDS)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as error:
        how = install or f"pip install 'gpu_avatar[{extra}]'"
        raise MissingExtraError(
            f"{purpose} needs {module.split('.')[0]}, which is not installed: {how}"
        ) from error
