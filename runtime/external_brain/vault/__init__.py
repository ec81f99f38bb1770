"""The vault on disk: the card format, files, the log, settings, the write journal, and the
rules every layer reads (confidence decay, validity in time, how a card names others).
Knows nothing of search, the operations or the doors above it."""
