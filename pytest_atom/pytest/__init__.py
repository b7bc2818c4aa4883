"""The pytest front end: collection, the session plugin, the `atom` fixture, HTML."""
