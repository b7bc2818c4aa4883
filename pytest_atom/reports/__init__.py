"""What a run leaves for people and machines: text reports and JSON traces."""
