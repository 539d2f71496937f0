"""Training code for the learned models (data readers with the project's dev splits first)."""
