"""Settings: one frozen value built from the environment, `.env` and `config.yaml`, and its start-up migration."""
