"""The HTTP shell: the aiohttp application, its keys and middleware, request bodies, profiles, OpenAPI, the SSE
writer and the delivery of a turn to a client."""
