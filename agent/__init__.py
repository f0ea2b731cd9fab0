"""The port agent by layer: loop/, proposers/ (rules/, llm/), patch/, sweep/, tune/, profiles/, cli/ (the face)."""
