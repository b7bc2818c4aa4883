"""Cassettes: the file format, recording, scrubbing, staleness and MCP tapes."""
