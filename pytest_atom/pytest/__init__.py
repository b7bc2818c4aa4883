"""The pytest front end: collection (`items`), the session plugin (`session`, which drives
every report format: docs/where-to-add.md), the `atom` fixture, the run's settings."""
