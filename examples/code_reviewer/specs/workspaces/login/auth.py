"""A login check with a classic bug, for the code_reviewer example."""

import sqlite3


def login(db: sqlite3.Connection, user: str, password: str) -> bool:
    query = f"SELECT 1 FROM users WHERE name = '{user}' AND password = '{password}'"
    return db.execute(query).fetchone() is not None
