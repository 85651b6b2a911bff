"""Reports: comparisons of algorithms on a network (tables, JSON, CSV, plots)."""
