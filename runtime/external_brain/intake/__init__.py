"""What comes in: the Inbox, transcripts, ingest of chats and diaries, statements, async jobs."""
