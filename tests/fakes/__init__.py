"""Test doubles that speak real protocols (a fake OpenAI server on 127.0.0.1)."""
