"""The port loop: the LangGraph graph, its nodes, run state and checkpoints, run directories and locks."""
