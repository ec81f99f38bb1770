"""Who is calling: agent keys and personas."""
