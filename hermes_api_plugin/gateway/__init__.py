"""The bundled reference gateway: `hermes-api gateway`."""
