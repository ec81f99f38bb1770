"""What agents read: search (with misses kept), the context brief, insights, doctor, trends."""
