"""The LLM proposer: the model boundary, the tool-calling conversation, its tools, edit blocks and prompt."""
