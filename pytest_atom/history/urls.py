"""Where a history store is: the setting's value as a URL or a path, and fit to print.

Apart from `history.store` so a backend can name a store without importing what opens it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote

from pytest_atom.errors import HistoryError

#: Where the embedded store lives, relative to the project's root.
DEFAULT_STORE = ".atom/history.db"
#: How `--atom-history` turns the store off.
OFF = "none"


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


#: Query parameters of a PostgreSQL URL whose value libpq takes as a password.
_SECRET_PARAMS = frozenset({"password", "sslpassword"})
#: The environment variables libpq reads a password, or the file of passwords, from.
PASSWORD_ENV, PASSFILE_ENV = "PGPASSWORD", "PGPASSFILE"
#: A password form shorter than this is not searched for in a driver's message (it would
#: match ordinary words): the whole message is withheld instead.
_SHORTEST_FOUND = 4
_SHOWN = "***"


def _parts(url: str) -> tuple[str, str | None, str, str]:
    """A PostgreSQL URL's scheme, userinfo (None without ``@``), the rest of its authority
    and path, and its query. As libpq reads it, the userinfo lies before the first ``/``
    (a ``?`` there is part of a password); it ends at the last ``@`` there, as a person
    writes it, where libpq ends it at the first: `check_url` refuses a URL where the two
    differ, and one where an ``@`` after the first ``/`` (a ``/`` in the password) would
    make libpq take the userinfo for the host."""
    scheme, rest = url.split("://", 1)
    authority, slash, path = rest.partition("/")
    userinfo, at, host = authority.rpartition("@")
    host, _, query = (host + slash + path).partition("?")
    return scheme, (userinfo if at else None), host, query


def _params(query: str) -> list[tuple[str, str]]:
    return [(k, v) for k, _, v in (p.partition("=") for p in query.split("&") if p)]


def check_url(url: str) -> None:
    """Refuse a PostgreSQL URL whose user or password holds an unencoded ``@`` or ``/``:
    libpq would take its tail for the host, and print that in its error. The message
    shows none of the userinfo."""
    if not is_postgres(url):
        return
    scheme, userinfo, _, _ = _parts(url)
    before, at, after = url.split("://", 1)[1].partition("@")
    # An `@` past the first `/` with no parameter before it: a `/` in the password
    # (`user:pa/ss@host/db`); `host/db?application_name=a@b` is a parameter's value.
    slashed = userinfo is None and bool(at) and "=" not in before
    if slashed or (userinfo is not None and "@" in userinfo):
        raise HistoryError(
            f"the history store {scheme}://{_SHOWN}@{after.rpartition('@')[2]} has an '@' or "
            "'/' in its user or password: percent-encode them (@ as %40, / as %2F), or give "
            f"the password in {PASSWORD_ENV} or a passfile instead"
        )


def display_url(url: str) -> str:
    """`url` fit to print: a PostgreSQL URL's password, in its userinfo and in a
    ``password=`` or ``sslpassword=`` parameter, replaced by ``***``. A ``passfile=`` is
    shown: it names where the password is, never what it is."""
    if not is_postgres(url):
        return url
    scheme, userinfo, host, query = _parts(url)
    shown = f"{scheme}://"
    if userinfo is not None:
        user, colon, _ = userinfo.partition(":")
        shown += f"{user}{':' + _SHOWN if colon else ''}@"
    shown += host
    if query:
        params = _params(query)
        shown += "?" + "&".join(
            f"{k}={_SHOWN if unquote(k) in _SECRET_PARAMS else v}" for k, v in params
        )
    return shown


def passwords(url: str, env: Mapping[str, str] | None = None) -> list[str]:
    """Every form of every password a connection to `url` sends: its userinfo's and its
    ``password=`` parameters' (as written and decoded), and `PASSWORD_ENV`'s value
    (`env`, default: this process's environment); longest first. A passfile's content is
    never read: libpq does not put it in a message."""
    found: set[str] = set()
    if is_postgres(url):
        _, userinfo, _, query = _parts(url)
        if userinfo is not None and ":" in userinfo:
            found.add(userinfo.partition(":")[2])
        found.update(v for k, v in _params(query) if unquote(k) in _SECRET_PARAMS)
    found.update(unquote(v) for v in list(found))
    found.add((os.environ if env is None else env).get(PASSWORD_ENV, ""))
    return sorted((f for f in found if f), key=len, reverse=True)


def scrub_passwords(text: str, url: str) -> str:
    """`text` (a driver's message about `url`) with every password of `passwords` replaced
    by ``***``; when one is too short to search for without mangling the message, the
    message is withheld whole."""
    for form in passwords(url):
        if len(form) < _SHORTEST_FOUND:
            return "(the driver's message is withheld: it may hold the password)"
        text = text.replace(form, _SHOWN)
    return text


def password_source(url: str) -> str:
    """Where libpq takes the password of `url` from, named, never shown: ``""`` when the
    URL holds it (`display_url` masks it there) or nothing gives one."""
    source = os.environ
    if passwords(url, {}):
        return ""
    passfile = dict(_params(_parts(url)[3])).get("passfile")
    if passfile:
        return f"its password from the passfile {unquote(passfile)}"
    if source.get(PASSWORD_ENV):
        return f"its password from {PASSWORD_ENV}"
    if source.get(PASSFILE_ENV):
        return f"its password from the passfile {source[PASSFILE_ENV]} ({PASSFILE_ENV})"
    return ""


def store_url(value: str | Path | None, root: Path) -> str:
    """The store a setting names, as a URL or an absolute path: relative paths (bare or
    after ``sqlite:///``) are the project root's, unset is `DEFAULT_STORE`, any other
    ``scheme://`` URL is kept as given for the backend of that scheme."""
    text = DEFAULT_STORE if value is None else str(value).strip()
    if text.lower() == OFF:
        return OFF
    if "://" in text and not text.startswith("sqlite:"):
        return text  # a server's URL (postgresql://, or another installed backend's scheme)
    if text.startswith("sqlite:///"):
        # SQLAlchemy's spelling: sqlite:///rel/path is relative, sqlite:////abs/path absolute.
        text = text.removeprefix("sqlite:///")
    path = Path(text).expanduser()
    return str(path if path.is_absolute() else (root / path))
