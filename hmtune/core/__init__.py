"""hmtune's bottom layer: what every stage needs (sizes, atomic files, where the built
pieces are, the release version, ELF headers, the backend grammar, the error type with
an exit status).
Imports only the standard library: nothing of the stages above it."""
