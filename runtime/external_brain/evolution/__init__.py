"""How cards change over time: update/delete/rename, history and undo, links, the graph, import/export, git sharing."""
