"""Judging an attempt: deterministic checks and the reflector's verdict."""
