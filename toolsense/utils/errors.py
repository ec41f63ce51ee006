"""The one error a user can act on, and how every job's entry point reports it.

A :class:`UserError` is a refusal whose cause lies outside the code: a config field
(:class:`ConfigError`, named by its dotted path), an input file (:class:`DataError`, named by
``file:line``), a missing file (:class:`MissingFile`), an endpoint's reply (:class:`EndpointError`,
naming the config field that points at it). Its message names that place and the fix.
Every job's Hydra task runs inside :func:`toolsense.utils.hydra.user_errors`: a user error is
printed as one line on stderr and the process exits 2, after removing the log folder Hydra made
for this run, so that a refused command writes nothing. ``debug=true`` on the command line (or ``TOOLSENSE_DEBUG=1``, or
Hydra's ``HYDRA_FULL_ERROR=1``) lets it through with its traceback instead. A command line Hydra cannot
compose (an unknown field or group option, an override it cannot parse) is reported the same way
(:func:`toolsense.utils.hydra.hydra_errors`). Anything else is a bug: it keeps Hydra's traceback and exit 1.

All are ``ValueError``s (``MissingFile`` also a ``FileNotFoundError``), so callers that catch
those, and tests that expect them, are unchanged.
"""

from __future__ import annotations

import errno
import os


class UserError(ValueError):
    """Something the user can fix; the message names the field or ``file:line`` and the fix."""


class ConfigError(UserError):
    """A config value refused; the message starts with its dotted field (``metrics.ks``)."""


class DataError(UserError):
    """Bad input data; the message names the file, line and field."""


class MissingFile(UserError, FileNotFoundError):
    """An input file that does not exist; the message names it (``<path>: no such file``)."""


class EndpointError(UserError):
    """A server refused in a way no retry can fix (a key it does not accept, a model it does not
    serve); the message names the config field that points at the server or the key."""


def environment_error(e: OSError) -> str | None:
    """The one line for an OSError the machine caused, not the code (a full disk or quota, a
    read-only file system, an output folder that is a symlink to nothing), naming the path and what
    to do; None for any other OSError (a bug's, kept with its traceback)."""
    where = e.filename or "a file"
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"{where}: {e.strerror} while writing it; free space there, or point output_dir at another disk"
    if e.errno == errno.EROFS:
        return f"{where}: the file system is read-only; point output_dir at a writable folder"
    if isinstance(e, FileExistsError) and e.filename and os.path.islink(e.filename) and not os.path.exists(e.filename):
        return (f"{e.filename}: a symlink to {os.readlink(e.filename)}, which does not exist; create that folder, "
                "or point output_dir elsewhere")
    return None


__all__ = ["ConfigError", "DataError", "EndpointError", "MissingFile", "UserError", "environment_error"]
