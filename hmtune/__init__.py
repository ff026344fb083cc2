"""hmtune: place an application's heap objects in fast memory tiers without changing it.

The Python side in four layers, lowest first (docs/architecture.md): `hmtune.core`
(units, files, paths, ELF headers, the error type), `hmtune.analyze` (traces ->
sites.csv), `hmtune.advisor` (sites -> placement.txt, the tier model and this host's
tiers), `hmtune.workflows` (the `hmtune` CLI and the loop). A module imports only its own
layer and the ones below it (tests/py/test_layers.py).
"""
