"""Bad input through the real `rocport` entry point: one `rocport: error: ...` line, exit 2, no traceback.

Each case is what a user meets: a malformed or misspelled YAML, a missing file, image or run, a closed
LLM or server port, a binary log, a corrupt checkpoint. The error must say what was wrong and what to do.
"""
