"""Serving-configuration tuning: after a green port, search the profile's serving space (parallel
splits, kernel/backend switches, scheduler limits) for the best throughput at the SLOs, tune the MoE
kernel configs for the model's expert shapes, and report the Pareto table and $ per million tokens."""
