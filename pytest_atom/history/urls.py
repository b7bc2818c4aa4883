"""Where a history store is: the setting's value as a URL or a path, and fit to print.

Kept apart from `history.store` so the backends (`history.postgres`) can name a store in
their messages without importing the module that opens them.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["DEFAULT_STORE", "OFF", "display_url", "is_postgres", "store_url"]

#: Where the embedded store lives, relative to the project's root.
DEFAULT_STORE = ".atom/history.db"
#: How `--atom-history` turns the store off.
OFF = "none"


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


def display_url(url: str) -> str:
    """`url` fit to print: a PostgreSQL URL's password replaced by ``***``."""
    if not is_postgres(url) or "@" not in url:
        return url
    scheme, rest = url.split("://", 1)
    userinfo, host = rest.rsplit("@", 1)
    user = userinfo.split(":", 1)[0]
    return f"{scheme}://{user}{':***' if ':' in userinfo else ''}@{host}"


def store_url(value: str | Path | None, root: Path) -> str:
    """The store a setting names, as a URL or an absolute path: relative paths (bare or
    after ``sqlite:///``) are the project root's, unset is `DEFAULT_STORE`."""
    text = DEFAULT_STORE if value is None else str(value).strip()
    if text.lower() == OFF or is_postgres(text):
        return OFF if text.lower() == OFF else text
    if text.startswith("sqlite:///"):
        # SQLAlchemy's spelling: sqlite:///rel/path is relative, sqlite:////abs/path absolute.
        text = text.removeprefix("sqlite:///")
    path = Path(text).expanduser()
    return str(path if path.is_absolute() else (root / path))
