"""hmtune machine: the memory tiers of a machine. Detecting this host's memory (`host`),
the Tier and Machine types (`tiers`), machine files read and written (`machinefile`),
the fast tier a host implies (`choice`), whether a backend can place (`hostcheck`) and
the `hmtune machine` page (`page`). Imports only hmtune.core and the standard library:
no numpy or pandas, so `hmtune machine` and `hmtune run` start light."""
