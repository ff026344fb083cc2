"""hmtune's pipeline driver: the `hmtune` CLI and the stages it chains."""
