"""One service per API surface (chat, Responses, runs, session chat): what a turn of that surface plans, renders and
replies, each implementing the protocol of surface.py once (runs: its planning half; they deliver no journal)."""
