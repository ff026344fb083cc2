"""hmtune advisor: which allocation sites go to which memory tier (DESIGN.md §5, §6),
and the tiers this host offers (host, machinefile, hostcheck)."""
