"""Reports of spec runs: baselines and their comparisons (more report kinds join here)."""
