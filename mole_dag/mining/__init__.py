"""Deciding which extracted sentences may become claims."""
