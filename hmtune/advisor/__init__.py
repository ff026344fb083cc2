"""hmtune advisor: which allocation sites go to which memory tier (DESIGN.md §5, §6).
The tiers themselves, machine files and this host's tiers are hmtune.machine's."""
