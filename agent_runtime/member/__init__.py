"""The agent member: one role's model caller, the same under every backend (``caller``)."""
