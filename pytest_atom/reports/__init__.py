"""What a run leaves for people to read: reports built from spec results."""
