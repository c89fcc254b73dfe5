"""Dispatchers: policies from events to work (plans → deliberations, deliberations → agents)."""
