"""Project-relative locations: resolved from this file, never from the current directory."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PROMPTS_DIR = PROJECT_ROOT / "prompts"
STORE_DIR = PROJECT_ROOT / "store"
WORKSPACES_DIR = PROJECT_ROOT / "workspaces"
DEMO_CONFIG = PROJECT_ROOT / "app" / "demo.toml"
