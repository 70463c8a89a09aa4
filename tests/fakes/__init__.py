"""Test doubles that speak real protocols: `scripted.ScriptedProvider`, the one scripted
`LLMProvider` tests use, and a fake OpenAI server on 127.0.0.1 (`openai_server`)."""
