"""The port loop and its decisions: config, graph, proposers, profiles, sweeps, CLI."""
