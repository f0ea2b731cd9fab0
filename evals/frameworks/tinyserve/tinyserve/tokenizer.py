"""A byte-level tokenizer: ids 0-255 are bytes, higher ids are special tokens that decode to nothing."""
from __future__ import annotations

from tinyserve.config import ModelConfig


class ByteTokenizer:
    def __init__(self, config: ModelConfig):
        self.vocab_size = config.vocab_size
        self.eos_token_id = config.eos_token_id
        self.bos_token_id = config.bos_token_id

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, token_ids: list[int]) -> str:
        return bytes(t for t in token_ids if t < 256).decode("utf-8", errors="replace")

    def apply_chat_template(self, messages: list[dict]) -> list[int]:
        """<|role|>\\ncontent\\n per message, then the assistant turn header."""
        text = "".join(f"<|{m.get('role', 'user')}|>\n{_content_text(m.get('content'))}\n" for m in messages)
        return self.encode(text + "<|assistant|>\n")


def _content_text(content) -> str:
    if isinstance(content, list):  # OpenAI content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)
