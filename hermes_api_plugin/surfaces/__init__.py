"""One service per API surface (chat, Responses, runs, session chat): what a turn of that surface plans, renders and
replies."""
